//! Saved programs: a traced module as one zip archive (Note [Program
//! archives] in `zip.rs`) holding
//!
//! - `archive/version`: the format version, as text;
//! - `archive/graph.json`: the format name, its version and the graph;
//! - `archive/data.safetensors`: the module's attributes and the graph's
//!   tensor constants.
//!
//! Version 1 files (one safetensors file with the graph in its metadata)
//! still load.
//!
//! # Note [Saved programs]
//! A file is data, never code: it names ops by their schema, and loading
//! only runs ops this build registered with the same schema text. Loading
//! trusts nothing (the zip layer checks every offset, length and CRC, the
//! safetensors layer the header, dtypes, shapes and offsets, before any
//! tensor is made): the format and version must be
//! known, the graph JSON is bounded (values, nodes, list lengths) before it
//! is walked, every value is defined exactly once and before it is used,
//! every op exists with the recorded schema and gets as many arguments as
//! the schema declares, values feeding tensor arguments are tensors,
//! constants and attributes name tensors the file holds, and outputs are
//! defined. Anything else is an error naming what is wrong. PyTorch's
//! archives are zips of pickles and code; ours keep the same parts
//! (version, graph, constants, weights) without either.

use crate::module::ScriptModule;
use ferrotorch_core::{ensure, Error, ErrorKind, Result};
use ferrotorch_nn::safetensors;
use ferrotorch_nn::StateDict;
use serde_json::{json, Value as Json};
use std::path::Path;

mod decode;
mod json;

use decode::decode;
use json::encode;

/// The format name in a file's metadata.
pub const FORMAT: &str = "ferrotorch.jit";
/// The format version this build writes; it reads this and older ones.
pub const VERSION: u64 = 2;
/// Bounds checked before a graph is built from a file.
pub(super) const MAX_VALUES: usize = 1 << 20;
pub(super) const MAX_LIST: usize = 1 << 16;

pub(super) fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("jit.load: {}", msg.into()))
}

/// `m`'s file as bytes (what [`save`] writes).
pub fn save_bytes(m: &ScriptModule) -> Result<Vec<u8>> {
    let e = Encoded::new(m)?;
    let len = e.len()?;
    let mut out: Vec<u8> = Vec::with_capacity(len);
    e.write_into(ferrotorch_core::storage::zero_fresh(
        &mut out.spare_capacity_mut()[..len],
    ))?;
    // SAFETY: zero_fresh initialised all `len` bytes.
    unsafe { out.set_len(len) };
    Ok(out)
}

const VERSION_ENTRY: &str = "archive/version";
const GRAPH_ENTRY: &str = "archive/graph.json";
const DATA_ENTRY: &str = "archive/data.safetensors";

/// A program ready to write into a buffer someone else allocates (a
/// Python `bytes`), each tensor copied once.
pub struct Encoded {
    tensors: StateDict,
    version: String,
    graph: String,
}

impl Encoded {
    /// `m`'s file, laid out.
    pub fn new(m: &ScriptModule) -> Result<Encoded> {
        let (tensors, graph) = encode(m)?;
        let graph = json!({"format": FORMAT, "version": VERSION, "graph": graph});
        Ok(Encoded {
            tensors,
            version: format!("{VERSION}\n"),
            graph: graph.to_string(),
        })
    }

    fn layout(&self, data_len: usize) -> Result<crate::zip::Layout> {
        crate::zip::Layout::new(&[
            (VERSION_ENTRY, self.version.len()),
            (GRAPH_ENTRY, self.graph.len()),
            (DATA_ENTRY, data_len),
        ])
    }

    /// The file's length in bytes.
    pub fn len(&self) -> Result<usize> {
        let data = safetensors::encode(&self.tensors, None)?;
        Ok(self.layout(data.len())?.len())
    }

    /// Whether the file is empty (never: it has a header).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Write the file into `out`, exactly [`Encoded::len`] bytes.
    pub fn write_into(&self, out: &mut [u8]) -> Result<()> {
        let data = safetensors::encode(&self.tensors, None)?;
        let lay = self.layout(data.len())?;
        ensure!(
            out.len() == lay.len(),
            Value,
            "jit.save: a buffer of {} bytes for a program of {}",
            out.len(),
            lay.len()
        );
        out[lay.data_range(0)].copy_from_slice(self.version.as_bytes());
        out[lay.data_range(1)].copy_from_slice(self.graph.as_bytes());
        data.write_into(&mut out[lay.data_range(2)])?;
        lay.finish(out);
        Ok(())
    }
}

/// Write `m` to `path` (atomically: a failure leaves an old file whole).
pub fn save(m: &ScriptModule, path: impl AsRef<Path>) -> Result<()> {
    safetensors::write_file_atomic(path.as_ref(), &save_bytes(m)?)
}

/// Load a program from its bytes, checking everything (Note [Saved
/// programs]).
pub fn load_bytes(bytes: &[u8]) -> Result<ScriptModule> {
    if !crate::zip::is_zip(bytes) {
        return load_v1(bytes);
    }
    let all = crate::zip::names_for(bytes, "jit.load")?;
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    if !all.contains(&VERSION_ENTRY) && crate::torchscript::is_torchscript(&all) {
        // an archive PyTorch's torch.jit.save wrote
        return crate::torchscript::load_torchscript(bytes);
    }
    let entries = crate::zip::entries(bytes)?;
    // a torch.save checkpoint (a data.pkl, no program of ours)
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    ensure!(
        names.contains(&VERSION_ENTRY)
            || !names.iter().any(|n| n.ends_with("/data.pkl") && !n.contains("/code/")),
        Runtime,
        "jit.load: not a ferrotorch program but a torch.save checkpoint (a data.pkl of tensors): load it with torch.load"
    );
    let entry = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| &**d)
            .ok_or_else(|| bad(format!("the archive has no {name:?}")))
    };
    let version: u64 = std::str::from_utf8(entry(VERSION_ENTRY)?)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("the archive's version is not a number"))?;
    ensure!(version <= VERSION, Runtime, "jit.load: the file has format version {version}; this build reads versions up to {VERSION}");
    let head: Json = serde_json::from_slice(entry(GRAPH_ENTRY)?)
        .map_err(|e| bad(format!("{GRAPH_ENTRY} is not valid JSON: {e}")))?;
    ensure!(
        head["format"].as_str() == Some(FORMAT),
        Runtime,
        "jit.load: not a ferrotorch program (no \"format\": \"{FORMAT}\" in {GRAPH_ENTRY})"
    );
    ensure!(
        head["version"].as_u64() == Some(version),
        Runtime,
        "jit.load: {GRAPH_ENTRY} and {VERSION_ENTRY} disagree on the version"
    );
    ensure!(
        head["graph"].is_object(),
        Runtime,
        "jit.load: {GRAPH_ENTRY} has no graph"
    );
    let tensors = safetensors::load(entry(DATA_ENTRY)?)?;
    decode(&head["graph"], &tensors)
}

/// A version 1 file: one safetensors file with the graph in its metadata.
fn load_v1(bytes: &[u8]) -> Result<ScriptModule> {
    let meta = safetensors::metadata(bytes)?;
    ensure!(
        meta.get("format").map(String::as_str) == Some(FORMAT),
        Runtime,
        "jit.load: not a ferrotorch program (no \"format\": \"{FORMAT}\" in its metadata)"
    );
    let version: u64 = meta
        .get("version")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("the file has no format version"))?;
    ensure!(
        version == 1,
        Runtime,
        "jit.load: a safetensors program must have format version 1, not {version}"
    );
    let tensors = safetensors::load(bytes)?;
    let graph: Json = serde_json::from_str(
        meta.get("graph")
            .ok_or_else(|| bad("the file has no graph"))?,
    )
    .map_err(|e| bad(format!("the graph is not valid JSON: {e}")))?;
    decode(&graph, &tensors)
}

/// Load a program from `path` (`torch.jit.load`).
pub fn load(path: impl AsRef<Path>) -> Result<ScriptModule> {
    let bytes = std::fs::read(path.as_ref())
        .map_err(|e| bad(format!("cannot read {}: {e}", path.as_ref().display())))?;
    load_bytes(&bytes)
}
