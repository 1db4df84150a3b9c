//! Archives PyTorch's `torch.jit.save` writes, loaded into our IR.
//!
//! # Note [Loading TorchScript archives]
//! A TorchScript archive is a zip (`<name>/...`) of
//!
//! - `data.pkl`: the module objects, pickled as `__torch__.<path>.<Class>`
//!   objects whose state is their attributes (tensors by persistent id
//!   into `data/<key>`, submodules, numbers);
//! - `constants.pkl`: a tuple of the tensors the code names
//!   `CONSTANTS.c<N>`, stored under `constants/<key>`;
//! - `code/__torch__/**.py`: each class's methods as TorchScript source
//!   (deflated entries);
//! - `version` (or `.data/version`): the file format version, 1–10, which
//!   chooses the operator upgraders ([`upgraders`]).
//!
//! Loading runs no code. The pickles go through the reader without
//! callables (the archive's own `__torch__` classes become plain objects,
//! Note [A pickle reader without callables]); the source is parsed as
//! the straight-line subset `torch.jit.trace` emits (`parse.rs`: a
//! construct outside it, such as `torch.jit.script`'s `if` and loops, is an
//! error naming it and its line, not supported by blocks in our IR); and
//! the root's `forward` is lowered into one flat graph (`lower.rs`), each
//! `torch.*` / `ops.*` call bound to a registered op's schema by the
//! overload rule and checked there, submodule calls inlined with their
//! attributes read by qualified name. The result is an ordinary
//! [`ScriptModule`]: the interpreter, the passes, `save` (to our program
//! format) and every binding take it as they take a traced one.

mod bind;
mod lex;
mod lower;
mod parse;
mod upgraders;

use crate::ir::Graph;
use crate::module::{Attr, ScriptModule};
use ferrotorch_core::dispatch::IValue;
use ferrotorch_core::{bail, ensure, Error, ErrorKind, Result, Tensor};
use ferrotorch_serialize::pickle::{Id, Obj, TORCHSCRIPT_CLASSES};
use ferrotorch_serialize::pt::{load_zip_pickle, Checkpoint};
use lower::{AttrVal, Classes, Lower, ModObj};
use std::collections::HashMap;

/// The newest file format version PyTorch writes and reads
/// (`kMaxSupportedFileFormatVersion`).
pub const MAX_VERSION: u64 = 10;
/// How deep module objects may nest.
const MAX_NESTING: usize = 128;

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("jit.load: {}", msg.into()))
}

/// Whether entry names are a TorchScript archive's: `<name>/data.pkl`
/// beside `<name>/code/`.
pub fn is_torchscript(names: &[&str]) -> bool {
    names
        .iter()
        .any(|n| n.split('/').nth(1) == Some("code") && n.ends_with(".py"))
        && names.iter().any(|n| {
            n.strip_suffix("data.pkl")
                .is_some_and(|p| p.ends_with('/') && p.matches('/').count() == 1)
        })
}

/// Load a TorchScript archive PyTorch wrote (Note [Loading TorchScript
/// archives]) from its bytes.
pub fn load_torchscript(bytes: &[u8]) -> Result<ScriptModule> {
    let entries = crate::zip::entries(bytes)?;
    let prefix = entries
        .iter()
        .find_map(|(n, _)| {
            n.strip_suffix("data.pkl")
                .filter(|p| p.matches('/').count() == 1)
        })
        .ok_or_else(|| bad("a TorchScript archive without <name>/data.pkl"))?
        .to_string();
    let entry = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| n.strip_prefix(&prefix) == Some(name))
            .map(|(_, d)| &**d)
    };
    let version: u64 = entry("version")
        .or_else(|| entry(".data/version"))
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("the TorchScript archive has no readable version"))?;
    ensure!(
        (1..=MAX_VERSION).contains(&version),
        Runtime,
        "jit.load: the TorchScript archive has file format version {version}; PyTorch's format versions 1 to {MAX_VERSION} are read"
    );
    // the code of every class, by qualified name
    let mut classes: Classes = HashMap::new();
    for (name, data) in &entries {
        let Some(rel) = name
            .strip_prefix(&prefix)
            .and_then(|n| n.strip_prefix("code/"))
            .and_then(|n| n.strip_suffix(".py"))
        else {
            continue;
        };
        let module = rel.replace('/', ".");
        let src =
            std::str::from_utf8(data).map_err(|_| bad(format!("{name} is not UTF-8 text")))?;
        for c in parse::parse(src, name)? {
            let methods = c.methods.into_iter().map(|m| (m.name.clone(), m)).collect();
            classes.insert(format!("{module}.{}", c.name), methods);
        }
    }
    let data = load_zip_pickle(
        bytes,
        "data.pkl",
        "data",
        &[TORCHSCRIPT_CLASSES.to_string()],
    )?;
    let constants: Vec<Tensor> = if entry("constants.pkl").is_some() {
        let ck = load_zip_pickle(bytes, "constants.pkl", "constants", &[])?;
        match ck.doc.get(ck.doc.root) {
            Obj::Tuple(items) => items
                .iter()
                .map(|&i| {
                    ck.tensor(i)
                        .cloned()
                        .ok_or_else(|| bad("constants.pkl holds a constant that is not a tensor"))
                })
                .collect::<Result<_>>()?,
            _ => bail!(Runtime, "jit.load: constants.pkl is not a tuple"),
        }
    } else {
        Vec::new()
    };
    let mut attrs = Vec::new();
    let root = module_obj(&data, data.doc.root, "", &mut attrs, 0)?;
    let mut low = Lower::new(&classes, &constants, version);
    low.forward(&root)?;
    let graph: Graph = low.g;
    // only the attributes the program reads
    let used: std::collections::HashSet<&str> = graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            crate::ir::NodeKind::GetAttr(p) => Some(p.as_str()),
            _ => None,
        })
        .collect();
    let attrs = attrs
        .into_iter()
        .filter(|(n, _)| used.contains(n.as_str()))
        .collect();
    Ok(ScriptModule {
        graph,
        attrs,
        warnings: Vec::new(),
    })
}

/// The module object `id` of `data.pkl`, its tensors appended to `attrs`
/// by qualified name.
fn module_obj(
    ck: &Checkpoint,
    id: Id,
    path: &str,
    attrs: &mut Vec<(String, Attr)>,
    depth: usize,
) -> Result<ModObj> {
    ensure!(
        depth < MAX_NESTING,
        Runtime,
        "jit.load: modules nest more than {MAX_NESTING} deep"
    );
    let Obj::Object { class, state, .. } = ck.doc.get(id) else {
        bail!(Runtime, "jit.load: data.pkl does not hold a module object");
    };
    let mut out = ModObj {
        class: class.clone(),
        attrs: HashMap::new(),
    };
    let Some(state) = state else {
        return Ok(out);
    };
    let Obj::Dict(items) = ck.doc.get(*state) else {
        bail!(
            Runtime,
            "jit.load: the state of {class} is not a dict of attributes"
        );
    };
    for &(k, v) in items {
        let Obj::Str(name) = ck.doc.get(k) else {
            bail!(
                Runtime,
                "jit.load: {class} has an attribute whose name is not a str"
            );
        };
        let full = format!("{path}{name}");
        let val = match ck.doc.get(v) {
            Obj::Tensor { .. } | Obj::Parameter { .. } => {
                let t = ck
                    .tensor(v)
                    .cloned()
                    .ok_or_else(|| bad(format!("attribute {full} has no tensor")))?;
                let rank = t.dim();
                attrs.push((full, Attr::Tensor(t)));
                AttrVal::Tensor(rank)
            }
            Obj::Object { .. } => {
                AttrVal::Module(module_obj(ck, v, &format!("{full}."), attrs, depth + 1)?)
            }
            Obj::None => AttrVal::Const(IValue::None),
            Obj::Bool(b) => AttrVal::Const(IValue::Bool(*b)),
            Obj::Int(i) => AttrVal::Const(IValue::Int(*i)),
            Obj::Float(f) => AttrVal::Const(IValue::Float(*f)),
            Obj::Str(s) => AttrVal::Const(IValue::Str(s.clone())),
            // lists, dicts and the like: traced code reads none of them
            _ => continue,
        };
        out.attrs.insert(name.clone(), val);
    }
    Ok(out)
}
