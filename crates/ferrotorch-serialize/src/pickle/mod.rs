//! A pickle reader that runs no code: the opcodes build plain values, and a
//! global is only ever one of a fixed table of reconstructors.
//!
//! # Note [A pickle reader without callables]
//! Python's unpickler calls whatever global a pickle names; torch's
//! `weights_only` unpickler narrows that to an allowlist, and still had a
//! code-execution hole (CVE-2025-32434). Here a `GLOBAL` resolves to a
//! [`Global`] from a table compiled in (tensor and parameter rebuilds,
//! storages, `OrderedDict`, `torch.Size`, dtypes, devices, layouts,
//! `_codecs.encode` for protocol-2 bytes, sets); any other name is an
//! error naming it. `REDUCE` and `NEWOBJ` apply a table entry to its
//! arguments, checked for their shapes; `BUILD` sets state only on the
//! objects whose state torch writes (a parameter's or tensor's hooks and
//! `__dict__`, an `OrderedDict`'s `_metadata`). A caller may name extra
//! classes (`safe_globals`): those become [`Obj::Object`] — the class path,
//! its arguments and state, for the caller to rebuild — never a call.
//!
//! Objects live in an arena ([`Document`]) and the stack and memo hold
//! their ids, so a memo reference shares an object rather than copying it
//! (a pickle that references one list a million times costs a million ids,
//! not a million lists). The stack, the memo, the objects and every length
//! a pickle declares are bounded and checked before anything is allocated.

use ferrotorch_core::{ensure, Error, ErrorKind, Result};
use std::collections::HashMap;

mod reconstruct;
mod vm;

use vm::Vm;

/// An object's index in its [`Document`].
pub type Id = usize;

/// At most this many objects (and memo entries): far more than a
/// checkpoint's pickle makes (a few per tensor), and a bound on what a
/// crafted one can make the reader hold.
pub(crate) const MAX_OBJECTS: usize = 1 << 24;
/// At most this many stack entries (a pickle keeps a batch of at most
/// 1000 items and its containers on the stack).
pub(crate) const MAX_STACK: usize = 1 << 20;

/// A reconstructor a pickle may name (Note [A pickle reader without
/// callables]).
#[derive(Clone, Debug, PartialEq)]
pub enum Global {
    /// `torch._utils._rebuild_tensor_v2` (and `_rebuild_tensor`).
    RebuildTensor,
    /// `torch._utils._rebuild_parameter` (and `_with_state`).
    RebuildParameter,
    /// `torch._tensor._rebuild_from_type_v2`.
    RebuildFromType,
    /// `torch.nn.parameter.Parameter` and `torch.Tensor` as types.
    TensorType(&'static str),
    /// A typed storage class (`torch.FloatStorage`) with its dtype name,
    /// or `torch.UntypedStorage` (`"uint8"`).
    Storage(&'static str),
    /// `collections.OrderedDict`.
    OrderedDict,
    /// `torch.Size`.
    Size,
    /// A dtype (`torch.float32`), by torch's name.
    DType(&'static str),
    /// `torch.device`.
    Device,
    /// `torch.serialization._get_layout`.
    GetLayout,
    /// `_codecs.encode` (how protocol 2 stores `bytes`).
    CodecsEncode,
    /// `builtins.set` / `frozenset` / `complex` / `bytearray` / `slice` / `range`.
    Builtin(&'static str),
    /// A class the caller allowed (`safe_globals`): `module.name`.
    Allowed(String),
}

/// One object of a pickle.
#[derive(Clone, Debug)]
pub enum Obj {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int that fits in 64 bits.
    Int(i64),
    /// An int that does not (its little-endian two's-complement bytes).
    BigInt(Vec<u8>),
    /// A float.
    Float(f64),
    /// A complex number.
    Complex(f64, f64),
    /// A str.
    Str(String),
    /// A bytes (or bytearray) object.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Id>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A dict, in insertion order.
    Dict(Vec<(Id, Id)>),
    /// A `collections.OrderedDict`, in order, with its `_metadata` if set.
    OrderedDict(Vec<(Id, Id)>, Option<Id>),
    /// A set (or frozenset).
    Set(Vec<Id>, bool),
    /// A global: a reconstructor or an allowed class.
    Global(Global),
    /// A persistent id (`BINPERSID`): resolved by the caller
    /// ([`Document::persistent`]).
    Persistent(Id),
    /// A tensor rebuilt by `_rebuild_tensor_v2`: `(storage, offset, size,
    /// stride, requires_grad)`; the storage is a persistent id's object.
    Tensor {
        /// The storage object.
        storage: Id,
        /// Offset in elements.
        offset: i64,
        /// Sizes.
        size: Vec<i64>,
        /// Strides in elements.
        stride: Vec<i64>,
        /// Whether it requires grad.
        requires_grad: bool,
        /// The dtype `_rebuild_tensor_v3` gives an untyped storage.
        dtype: Option<&'static str>,
    },
    /// An `nn.Parameter` of a tensor object.
    Parameter {
        /// The tensor object.
        data: Id,
        /// Whether it requires grad.
        requires_grad: bool,
    },
    /// `torch.Size`.
    Size(Vec<i64>),
    /// A dtype, by torch's name (`float32`).
    DType(&'static str),
    /// A device (`cpu`, `cuda:0`).
    Device(String),
    /// A layout (`torch.strided`).
    Layout(String),
    /// An object of an allowed class: its path, `__new__`/`REDUCE`
    /// arguments and `BUILD` state, for the caller to rebuild.
    Object {
        /// `module.name`.
        class: String,
        /// The arguments it was made from.
        args: Vec<Id>,
        /// The state `BUILD` gave it.
        state: Option<Id>,
    },
}

/// An `allowed` entry that admits the classes of a TorchScript archive
/// (`__torch__.*`): names of types its code defines, rebuilt as
/// [`Obj::Object`] data for the jit's loader, never Python classes.
pub const TORCHSCRIPT_CLASSES: &str = "__torch__.*";

/// An `allowed` entry that admits every class as [`Obj::Object`] data:
/// for listing what classes a file names
/// (`get_unsafe_globals_in_checkpoint`) before deciding what to allow.
pub const ANY_CLASS: &str = "*";

/// A pickle's objects and its result (`root`).
pub struct Document {
    /// Every object, by id.
    pub objs: Vec<Obj>,
    /// The pickled value.
    pub root: Id,
}

impl Document {
    /// The object `id`.
    pub fn get(&self, id: Id) -> &Obj {
        &self.objs[id]
    }

    /// The id of what persistent id `id` names (the tuple `BINPERSID` read).
    pub fn persistent(&self, id: Id) -> Option<Id> {
        match self.objs.get(id) {
            Some(Obj::Persistent(p)) => Some(*p),
            _ => None,
        }
    }
}

pub(crate) fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, msg.into())
}

/// Read the pickle `bytes` into a [`Document`] (Note [A pickle reader
/// without callables]); `allowed` names extra classes (`module.name`) that
/// may appear, as objects for the caller to rebuild; `what` prefixes errors.
pub fn read(bytes: &[u8], allowed: &[String], what: &str) -> Result<Document> {
    Ok(read_at(bytes, 0, allowed, what)?.0)
}

/// [`read`] of the pickle that starts at byte `at` of `bytes` (a stream of
/// several, as torch's legacy format is), with where it ends.
pub fn read_at(
    bytes: &[u8],
    at: usize,
    allowed: &[String],
    what: &str,
) -> Result<(Document, usize)> {
    ensure!(
        at <= bytes.len(),
        Runtime,
        "{what}: the file ends before its next pickle"
    );
    let mut vm = Vm {
        b: bytes,
        at,
        objs: Vec::new(),
        stack: Vec::new(),
        memo: HashMap::new(),
        allowed,
        what,
    };
    let root = vm.run()?;
    let end = vm.at;
    Ok((
        Document {
            objs: vm.objs,
            root,
        },
        end,
    ))
}
