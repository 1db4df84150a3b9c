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

use ferrotorch_core::{bail, ensure, Error, ErrorKind, Result};
use std::collections::HashMap;

/// An object's index in its [`Document`].
pub type Id = usize;

/// At most this many objects (and memo entries): far more than a
/// checkpoint's pickle makes (a few per tensor), and a bound on what a
/// crafted one can make the reader hold.
const MAX_OBJECTS: usize = 1 << 24;
/// At most this many stack entries (a pickle keeps a batch of at most
/// 1000 items and its containers on the stack).
const MAX_STACK: usize = 1 << 20;

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

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, msg.into())
}

/// Which reconstructor `module.name` is, or None.
fn resolve(module: &str, name: &str) -> Option<Global> {
    const DTYPES: &[&str] = &[
        "float32",
        "float",
        "float64",
        "double",
        "float16",
        "half",
        "bfloat16",
        "int64",
        "long",
        "int32",
        "int",
        "int16",
        "short",
        "int8",
        "uint8",
        "bool",
        "complex32",
        "chalf",
        "complex64",
        "cfloat",
        "complex128",
        "cdouble",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "uint16",
        "uint32",
        "uint64",
        "qint8",
        "quint8",
        "qint32",
    ];
    const STORAGES: &[(&str, &str)] = &[
        ("FloatStorage", "float32"),
        ("DoubleStorage", "float64"),
        ("HalfStorage", "float16"),
        ("BFloat16Storage", "bfloat16"),
        ("LongStorage", "int64"),
        ("IntStorage", "int32"),
        ("ShortStorage", "int16"),
        ("CharStorage", "int8"),
        ("ByteStorage", "uint8"),
        ("BoolStorage", "bool"),
        ("ComplexHalfStorage", "complex32"),
        ("ComplexFloatStorage", "complex64"),
        ("ComplexDoubleStorage", "complex128"),
        ("UntypedStorage", "uint8"),
        ("QInt8Storage", "qint8"),
        ("QUInt8Storage", "quint8"),
        ("QInt32Storage", "qint32"),
        ("Float8_e4m3fnStorage", "float8_e4m3fn"),
        ("Float8_e5m2Storage", "float8_e5m2"),
        ("UInt16Storage", "uint16"),
        ("UInt32Storage", "uint32"),
        ("UInt64Storage", "uint64"),
    ];
    Some(match (module, name) {
        ("torch._utils", "_rebuild_tensor_v2" | "_rebuild_tensor" | "_rebuild_tensor_v3") => {
            Global::RebuildTensor
        }
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
            Global::RebuildParameter
        }
        ("torch._tensor", "_rebuild_from_type_v2") => Global::RebuildFromType,
        ("torch.nn.parameter", "Parameter") => Global::TensorType("Parameter"),
        ("torch", "Tensor") | ("torch._tensor", "Tensor") => Global::TensorType("Tensor"),
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch", "Size") => Global::Size,
        ("torch", "device") => Global::Device,
        ("torch.serialization", "_get_layout") => Global::GetLayout,
        ("_codecs", "encode") => Global::CodecsEncode,
        ("builtins" | "__builtin__", b @ ("set" | "frozenset" | "complex" | "bytearray")) => {
            Global::Builtin(match b {
                "set" => "set",
                "frozenset" => "frozenset",
                "complex" => "complex",
                _ => "bytearray",
            })
        }
        ("torch", n) | ("torch.storage", n) => {
            if let Some((_, d)) = STORAGES.iter().find(|(s, _)| *s == n) {
                Global::Storage(d)
            } else if let Some(d) = DTYPES.iter().find(|d| **d == n) {
                Global::DType(d)
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

enum Item {
    Obj(Id),
    Mark,
}

struct Vm<'a> {
    b: &'a [u8],
    at: usize,
    objs: Vec<Obj>,
    stack: Vec<Item>,
    memo: HashMap<u32, Id>,
    allowed: &'a [String],
    what: &'a str,
}

impl<'a> Vm<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                err(format!(
                    "{}: the pickle is truncated ({n} bytes wanted at offset {} of {})",
                    self.what,
                    self.at,
                    self.b.len()
                ))
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn len_u64(&mut self) -> Result<usize> {
        let n = self.u64()?;
        usize::try_from(n).map_err(|_| err(format!("{}: a length of {n} bytes", self.what)))
    }

    fn line(&mut self) -> Result<&'a str> {
        let rest = &self.b[self.at..];
        let n = rest.iter().position(|&c| c == b'\n').ok_or_else(|| {
            err(format!(
                "{}: the pickle is truncated (a line without its end)",
                self.what
            ))
        })?;
        let s = std::str::from_utf8(&rest[..n])
            .map_err(|_| err(format!("{}: a text line that is not UTF-8", self.what)))?;
        self.at += n + 1;
        Ok(s)
    }

    fn alloc(&mut self, o: Obj) -> Result<Id> {
        ensure!(
            self.objs.len() < MAX_OBJECTS,
            Runtime,
            "{}: the pickle makes more than {MAX_OBJECTS} objects",
            self.what
        );
        self.objs.push(o);
        Ok(self.objs.len() - 1)
    }

    fn push(&mut self, o: Obj) -> Result<()> {
        let id = self.alloc(o)?;
        self.push_id(id)
    }

    fn push_id(&mut self, id: Id) -> Result<()> {
        ensure!(
            self.stack.len() < MAX_STACK,
            Runtime,
            "{}: the pickle's stack grows past {MAX_STACK} entries",
            self.what
        );
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    fn pop(&mut self) -> Result<Id> {
        match self.stack.pop() {
            Some(Item::Obj(id)) => Ok(id),
            Some(Item::Mark) => bail!(
                Runtime,
                "{}: a mark where an object was expected",
                self.what
            ),
            None => bail!(Runtime, "{}: the pickle pops an empty stack", self.what),
        }
    }

    fn top(&self) -> Result<Id> {
        match self.stack.last() {
            Some(Item::Obj(id)) => Ok(*id),
            _ => bail!(Runtime, "{}: no object on the stack", self.what),
        }
    }

    /// The objects above the topmost mark, the mark removed.
    fn pop_mark(&mut self) -> Result<Vec<Id>> {
        let at = self
            .stack
            .iter()
            .rposition(|i| matches!(i, Item::Mark))
            .ok_or_else(|| err(format!("{}: the pickle has no mark to pop to", self.what)))?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        // nothing above the topmost mark is a mark
        Ok(items
            .into_iter()
            .filter_map(|i| match i {
                Item::Obj(id) => Some(id),
                Item::Mark => None,
            })
            .collect())
    }

    fn memo_put(&mut self, key: u32) -> Result<()> {
        let id = self.top()?;
        ensure!(
            self.memo.len() < MAX_OBJECTS || self.memo.contains_key(&key),
            Runtime,
            "{}: the pickle's memo grows past {MAX_OBJECTS} entries",
            self.what
        );
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u32) -> Result<()> {
        let id = *self.memo.get(&key).ok_or_else(|| {
            err(format!(
                "{}: memo entry {key} read before it was written",
                self.what
            ))
        })?;
        self.push_id(id)
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
        let path = format!("{module}.{name}");
        // a dtype or layout pickles as the global itself (`torch.float32`)
        if module == "torch" {
            if let Some(Global::DType(d)) = resolve(module, name) {
                return self.push(Obj::DType(d));
            }
            if matches!(name, "strided" | "sparse_coo" | "sparse_csr" | "_mkldnn") {
                return self.push(Obj::Layout(format!("torch.{name}")));
            }
        }
        let g = match resolve(module, name) {
            Some(g) => g,
            None if self.allowed.contains(&path) => Global::Allowed(path),
            None => bail!(
                Runtime,
                "{}: the file names the global {path}, which is not one of the tensors, containers and values a checkpoint holds; loading it would run code from the file. If you trust the file and {path} is a class of yours, allow it with torch.serialization.add_safe_globals([{name}])",
                self.what
            ),
        };
        self.push(Obj::Global(g))
    }

    fn int_of(&self, id: Id, what: &str) -> Result<i64> {
        match &self.objs[id] {
            Obj::Int(i) => Ok(*i),
            Obj::Bool(b) => Ok(i64::from(*b)),
            _ => bail!(Runtime, "{}: {what} is not an int", self.what),
        }
    }

    fn ints_of(&self, id: Id, what: &str) -> Result<Vec<i64>> {
        match &self.objs[id] {
            Obj::Tuple(v) | Obj::List(v) => v.iter().map(|&i| self.int_of(i, what)).collect(),
            Obj::Size(v) => Ok(v.clone()),
            _ => bail!(Runtime, "{}: {what} is not a tuple of ints", self.what),
        }
    }

    fn items_of(&self, id: Id) -> Result<Vec<Id>> {
        match &self.objs[id] {
            Obj::Tuple(v) | Obj::List(v) => Ok(v.clone()),
            _ => bail!(Runtime, "{}: the arguments are not a tuple", self.what),
        }
    }

    fn bool_of(&self, id: Id) -> bool {
        matches!(self.objs[id], Obj::Bool(true)) || matches!(self.objs[id], Obj::Int(i) if i != 0)
    }

    fn str_of(&self, id: Id, what: &str) -> Result<String> {
        match &self.objs[id] {
            Obj::Str(s) => Ok(s.clone()),
            _ => bail!(Runtime, "{}: {what} is not a str", self.what),
        }
    }

    /// `REDUCE`: a reconstructor applied to its arguments.
    fn reduce(&mut self, f: Id, args: Id) -> Result<Obj> {
        let g = match &self.objs[f] {
            Obj::Global(g) => g.clone(),
            _ => bail!(
                Runtime,
                "{}: REDUCE of something that is not a global",
                self.what
            ),
        };
        let a = self.items_of(args)?;
        let want = |n: std::ops::RangeInclusive<usize>, name: &str| -> Result<()> {
            ensure!(
                n.contains(&a.len()),
                Runtime,
                "{}: {name} got {} arguments",
                self.what,
                a.len()
            );
            Ok(())
        };
        Ok(match g {
            Global::RebuildTensor => {
                want(4..=8, "_rebuild_tensor_v2")?;
                ensure!(
                    matches!(self.objs[a[0]], Obj::Persistent(_)),
                    Runtime,
                    "{}: _rebuild_tensor_v2's storage is not a storage of the file",
                    self.what
                );
                let size = self.ints_of(a[2], "a tensor's size")?;
                let stride = self.ints_of(a[3], "a tensor's stride")?;
                ensure!(
                    size.len() == stride.len(),
                    Runtime,
                    "{}: a tensor has {} sizes and {} strides",
                    self.what,
                    size.len(),
                    stride.len()
                );
                // _rebuild_tensor_v3 (an untyped storage): the dtype is argument 6
                let dtype = match a.get(6).map(|&i| &self.objs[i]) {
                    Some(Obj::DType(d)) => Some(*d),
                    _ => None,
                };
                Obj::Tensor {
                    storage: a[0],
                    offset: self.int_of(a[1], "a tensor's storage offset")?,
                    size,
                    stride,
                    requires_grad: a.len() > 4 && self.bool_of(a[4]),
                    dtype,
                }
            }
            Global::RebuildParameter => {
                want(2..=4, "_rebuild_parameter")?;
                ensure!(
                    matches!(self.objs[a[0]], Obj::Tensor { .. }),
                    Runtime,
                    "{}: _rebuild_parameter of something that is not a tensor",
                    self.what
                );
                Obj::Parameter {
                    data: a[0],
                    requires_grad: self.bool_of(a[1]),
                }
            }
            Global::RebuildFromType => {
                // (func, new_type, args, state): func is a tensor rebuild
                want(4..=4, "_rebuild_from_type_v2")?;
                ensure!(
                    matches!(
                        self.objs[a[0]],
                        Obj::Global(Global::RebuildTensor | Global::RebuildParameter)
                    ),
                    Runtime,
                    "{}: _rebuild_from_type_v2 of something that is not a tensor rebuild",
                    self.what
                );
                let inner = self.reduce(a[0], a[2])?;
                match &self.objs[a[1]] {
                    Obj::Global(Global::TensorType(_)) => inner,
                    _ => bail!(
                        Runtime,
                        "{}: _rebuild_from_type_v2 to a type other than Tensor or Parameter (a tensor subclass)",
                        self.what
                    ),
                }
            }
            Global::OrderedDict => {
                want(0..=1, "OrderedDict")?;
                let mut items = Vec::new();
                if let Some(&pairs) = a.first() {
                    for p in self.items_of(pairs)? {
                        let kv = self.items_of(p)?;
                        ensure!(
                            kv.len() == 2,
                            Runtime,
                            "{}: an OrderedDict item is not a pair",
                            self.what
                        );
                        items.push((kv[0], kv[1]));
                    }
                }
                Obj::OrderedDict(items, None)
            }
            Global::Size => {
                want(0..=1, "torch.Size")?;
                Obj::Size(match a.first() {
                    Some(&v) => self.ints_of(v, "torch.Size's sizes")?,
                    None => Vec::new(),
                })
            }
            Global::Device => {
                want(1..=2, "torch.device")?;
                let mut s = self.str_of(a[0], "a device type")?;
                if a.len() == 2 && !matches!(self.objs[a[1]], Obj::None) {
                    s = format!("{s}:{}", self.int_of(a[1], "a device index")?);
                }
                Obj::Device(s)
            }
            Global::GetLayout => {
                want(1..=1, "_get_layout")?;
                Obj::Layout(self.str_of(a[0], "a layout name")?)
            }
            Global::CodecsEncode => {
                want(1..=2, "_codecs.encode")?;
                let s = self.str_of(a[0], "the text of bytes")?;
                let enc = if a.len() == 2 {
                    self.str_of(a[1], "an encoding")?
                } else {
                    "utf-8".into()
                };
                match enc.as_str() {
                    "latin1" | "latin-1" | "iso-8859-1" => {
                        let mut out = Vec::with_capacity(s.len());
                        for c in s.chars() {
                            let u = u32::from(c);
                            ensure!(
                                u < 256,
                                Runtime,
                                "{}: latin1 text with a character above 255",
                                self.what
                            );
                            out.push(u as u8);
                        }
                        Obj::Bytes(out)
                    }
                    "utf-8" | "utf8" => Obj::Bytes(s.into_bytes()),
                    e => bail!(Runtime, "{}: bytes encoded as {e}", self.what),
                }
            }
            Global::Builtin(b) => match b {
                "set" | "frozenset" => {
                    want(0..=1, b)?;
                    let items = match a.first() {
                        Some(&v) => self.items_of(v)?,
                        None => Vec::new(),
                    };
                    Obj::Set(items, b == "frozenset")
                }
                "complex" => {
                    want(1..=2, "complex")?;
                    let f = |vm: &Self, id: Id| -> Result<f64> {
                        match vm.objs[id] {
                            Obj::Float(x) => Ok(x),
                            Obj::Int(i) => Ok(i as f64),
                            _ => bail!(Runtime, "{}: complex of a non-number", vm.what),
                        }
                    };
                    Obj::Complex(
                        f(self, a[0])?,
                        if a.len() == 2 { f(self, a[1])? } else { 0.0 },
                    )
                }
                _ => {
                    want(0..=1, "bytearray")?;
                    match a.first().map(|&i| &self.objs[i]) {
                        Some(Obj::Bytes(v)) => Obj::Bytes(v.clone()),
                        None => Obj::Bytes(Vec::new()),
                        _ => bail!(
                            Runtime,
                            "{}: bytearray of something that is not bytes",
                            self.what
                        ),
                    }
                }
            },
            Global::Allowed(class) => Obj::Object {
                class,
                args: a,
                state: None,
            },
            Global::TensorType(t) | Global::Storage(t) | Global::DType(t) => bail!(
                Runtime,
                "{}: the pickle calls {t}, which a checkpoint never does",
                self.what
            ),
        })
    }

    /// `BUILD`: state set on the objects torch gives state.
    fn build(&mut self, obj: Id, state: Id) -> Result<()> {
        match &mut self.objs[obj] {
            Obj::OrderedDict(_, meta) => {
                // torch: state dicts carry `_metadata` as their __dict__
                *meta = Some(state);
                Ok(())
            }
            Obj::Object { state: s, .. } => {
                *s = Some(state);
                Ok(())
            }
            // a tensor's or parameter's __dict__ / hooks: kept out
            Obj::Tensor { .. } | Obj::Parameter { .. } => Ok(()),
            _ => bail!(
                Runtime,
                "{}: BUILD on an object that takes no state",
                self.what
            ),
        }
    }

    fn run(&mut self) -> Result<Id> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    let p = self.u8()?;
                    ensure!(
                        p <= 5,
                        Runtime,
                        "{}: pickle protocol {p} (at most 5)",
                        self.what
                    );
                }
                0x95 => {
                    self.u64()?; // FRAME: a length hint
                }
                b'.' => return self.pop(),
                b'(' => {
                    ensure!(
                        self.stack.len() < MAX_STACK,
                        Runtime,
                        "{}: the pickle's stack grows past {MAX_STACK} entries",
                        self.what
                    );
                    self.stack.push(Item::Mark)
                }
                b'0' => {
                    self.stack.pop();
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let t = self.top()?;
                    self.push_id(t)?;
                }
                b'N' => self.push(Obj::None)?,
                0x88 => self.push(Obj::Bool(true))?,
                0x89 => self.push(Obj::Bool(false))?,
                b'J' => {
                    let v = i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                    self.push(Obj::Int(i64::from(v)))?
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Obj::Int(i64::from(v)))?
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push(Obj::Int(i64::from(v)))?
                }
                b'I' => {
                    let l = self.line()?;
                    let o = match l {
                        "00" => Obj::Bool(false),
                        "01" => Obj::Bool(true),
                        _ => Obj::Int(
                            l.parse()
                                .map_err(|_| err(format!("{}: INT {l:?}", self.what)))?,
                        ),
                    };
                    self.push(o)?
                }
                b'L' => {
                    let l = self.line()?.trim_end_matches('L').to_string();
                    let v = l
                        .parse()
                        .map_err(|_| err(format!("{}: LONG {l:?}", self.what)))?;
                    self.push(Obj::Int(v))?
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        usize::from(self.u8()?)
                    } else {
                        self.u32()? as usize
                    };
                    let bytes = self.take(n)?.to_vec();
                    self.push(long_of(&bytes))?
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes"));
                    self.push(Obj::Float(v))?
                }
                b'F' => {
                    let l = self.line()?;
                    let v = l
                        .parse()
                        .map_err(|_| err(format!("{}: FLOAT {l:?}", self.what)))?;
                    self.push(Obj::Float(v))?
                }
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => self.u32()? as usize,
                        0x8c => usize::from(self.u8()?),
                        _ => self.len_u64()?,
                    };
                    let s = std::str::from_utf8(self.take(n)?)
                        .map_err(|_| err(format!("{}: a str that is not UTF-8", self.what)))?
                        .to_string();
                    self.push(Obj::Str(s))?
                }
                b'V' => {
                    let s = self.line()?.to_string();
                    self.push(Obj::Str(s))?
                }
                b'B' | b'C' | 0x8e | 0x96 => {
                    let n = match op {
                        b'B' => self.u32()? as usize,
                        b'C' => usize::from(self.u8()?),
                        _ => self.len_u64()?,
                    };
                    let v = self.take(n)?.to_vec();
                    self.push(Obj::Bytes(v))?
                }
                b'T' | b'U' => {
                    // Python 2 str: bytes, read as latin1 text (torch's encoding)
                    let n = if op == b'T' {
                        self.u32()? as usize
                    } else {
                        usize::from(self.u8()?)
                    };
                    let s: String = self.take(n)?.iter().map(|&c| char::from(c)).collect();
                    self.push(Obj::Str(s))?
                }
                b')' => self.push(Obj::Tuple(Vec::new()))?,
                b't' => {
                    let v = self.pop_mark()?;
                    self.push(Obj::Tuple(v))?
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    ensure!(
                        self.stack.len() >= n,
                        Runtime,
                        "{}: TUPLE{n} on a short stack",
                        self.what
                    );
                    let mut v = Vec::with_capacity(n);
                    for _ in 0..n {
                        v.push(self.pop()?);
                    }
                    v.reverse();
                    self.push(Obj::Tuple(v))?
                }
                b']' => self.push(Obj::List(Vec::new()))?,
                b'l' => {
                    let v = self.pop_mark()?;
                    self.push(Obj::List(v))?
                }
                b'a' | b'e' => {
                    let items = if op == b'a' {
                        vec![self.pop()?]
                    } else {
                        self.pop_mark()?
                    };
                    let l = self.top()?;
                    match &mut self.objs[l] {
                        Obj::List(v) => v.extend(items),
                        Obj::Set(v, false) => v.extend(items),
                        _ => bail!(
                            Runtime,
                            "{}: APPEND to something that is not a list",
                            self.what
                        ),
                    }
                }
                b'}' => self.push(Obj::Dict(Vec::new()))?,
                b'd' => {
                    let v = self.pop_mark()?;
                    ensure!(
                        v.len() % 2 == 0,
                        Runtime,
                        "{}: DICT of an odd number of items",
                        self.what
                    );
                    self.push(Obj::Dict(v.chunks(2).map(|p| (p[0], p[1])).collect()))?
                }
                b's' | b'u' => {
                    let items = if op == b's' {
                        let v = self.pop()?;
                        let k = self.pop()?;
                        vec![k, v]
                    } else {
                        self.pop_mark()?
                    };
                    ensure!(
                        items.len() % 2 == 0,
                        Runtime,
                        "{}: SETITEMS of an odd number of items",
                        self.what
                    );
                    let d = self.top()?;
                    let pairs = items.chunks(2).map(|p| (p[0], p[1]));
                    match &mut self.objs[d] {
                        Obj::Dict(v) | Obj::OrderedDict(v, _) => v.extend(pairs),
                        _ => bail!(
                            Runtime,
                            "{}: SETITEM on something that is not a dict",
                            self.what
                        ),
                    }
                }
                0x8f => self.push(Obj::Set(Vec::new(), false))?,
                0x90 => {
                    let items = self.pop_mark()?;
                    let s = self.top()?;
                    match &mut self.objs[s] {
                        Obj::Set(v, _) => v.extend(items),
                        _ => bail!(
                            Runtime,
                            "{}: ADDITEMS to something that is not a set",
                            self.what
                        ),
                    }
                }
                0x91 => {
                    let v = self.pop_mark()?;
                    self.push(Obj::Set(v, true))?
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(module, name)?
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (m, n) = (
                        self.str_of(module, "a module name")?,
                        self.str_of(name, "a global's name")?,
                    );
                    self.global(&m, &n)?
                }
                b'R' => {
                    let args = self.pop()?;
                    let f = self.pop()?;
                    let o = self.reduce(f, args)?;
                    self.push(o)?
                }
                0x81 => {
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    let o = match &self.objs[cls] {
                        Obj::Global(Global::Allowed(_)) | Obj::Global(Global::OrderedDict) => {
                            self.reduce(cls, args)?
                        }
                        _ => bail!(
                            Runtime,
                            "{}: NEWOBJ of a class that is not allowed",
                            self.what
                        ),
                    };
                    self.push(o)?
                }
                b'b' => {
                    let state = self.pop()?;
                    let obj = self.top()?;
                    self.build(obj, state)?
                }
                b'p' => {
                    let l = self.line()?;
                    let k = l
                        .parse()
                        .map_err(|_| err(format!("{}: PUT {l:?}", self.what)))?;
                    self.memo_put(k)?
                }
                b'q' => {
                    let k = u32::from(self.u8()?);
                    self.memo_put(k)?
                }
                b'r' => {
                    let k = self.u32()?;
                    self.memo_put(k)?
                }
                0x94 => {
                    let k = u32::try_from(self.memo.len()).unwrap_or(u32::MAX);
                    self.memo_put(k)?
                }
                b'g' => {
                    let l = self.line()?;
                    let k = l
                        .parse()
                        .map_err(|_| err(format!("{}: GET {l:?}", self.what)))?;
                    self.memo_get(k)?
                }
                b'h' => {
                    let k = u32::from(self.u8()?);
                    self.memo_get(k)?
                }
                b'j' => {
                    let k = self.u32()?;
                    self.memo_get(k)?
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.push(Obj::Persistent(pid))?
                }
                b'P' => {
                    let s = self.line()?.to_string();
                    let id = self.alloc(Obj::Str(s))?;
                    self.push(Obj::Persistent(id))?
                }
                _ => bail!(
                    Runtime,
                    "{}: pickle opcode {op:#04x} at offset {} is not one a checkpoint uses ({})",
                    self.what,
                    self.at - 1,
                    match op {
                        b'i' | b'o' => "it instantiates a class",
                        0x92 => "NEWOBJ_EX instantiates a class",
                        0x82..=0x84 => "extension registry",
                        0x97 | 0x98 => "out-of-band buffers",
                        _ => "unknown",
                    }
                ),
            }
        }
    }
}

/// A `LONG1`/`LONG4` int: little-endian two's complement.
fn long_of(bytes: &[u8]) -> Obj {
    if bytes.is_empty() {
        return Obj::Int(0);
    }
    if bytes.len() <= 8 {
        let neg = bytes[bytes.len() - 1] & 0x80 != 0;
        let mut buf = [if neg { 0xff } else { 0 }; 8];
        buf[..bytes.len()].copy_from_slice(bytes);
        return Obj::Int(i64::from_le_bytes(buf));
    }
    Obj::BigInt(bytes.to_vec())
}

/// Read the pickle `bytes` into a [`Document`] (Note [A pickle reader
/// without callables]); `allowed` names extra classes (`module.name`) that
/// may appear, as objects for the caller to rebuild; `what` prefixes errors.
pub fn read(bytes: &[u8], allowed: &[String], what: &str) -> Result<Document> {
    let mut vm = Vm {
        b: bytes,
        at: 0,
        objs: Vec::new(),
        stack: Vec::new(),
        memo: HashMap::new(),
        allowed,
        what,
    };
    let root = vm.run()?;
    Ok(Document {
        objs: vm.objs,
        root,
    })
}
