//! The reconstructors: which globals a pickle may name and what `REDUCE`
//! and `BUILD` make of them (Note [A pickle reader without callables]).

use super::vm::Vm;
use super::{Global, Id, Obj};
use ferrotorch_core::{bail, ensure, Result};

/// Which reconstructor `module.name` is, or None.
pub(super) fn resolve(module: &str, name: &str) -> Option<Global> {
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
            } else if n.strip_suffix("Tensor").is_some_and(|b| {
                STORAGES
                    .iter()
                    .any(|(s, _)| s.strip_suffix("Storage") == Some(b))
            }) {
                // `torch.FloatTensor`: a type tag of the legacy tar layout
                Global::TensorType("Tensor")
            } else if let Some(d) = DTYPES.iter().find(|d| **d == n) {
                Global::DType(d)
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

impl Vm<'_> {
    pub(super) fn global(&mut self, module: &str, name: &str) -> Result<()> {
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
            None if self.allowed.contains(&path)
                || self.allowed.iter().any(|a| a == super::ANY_CLASS) =>
            {
                Global::Allowed(path)
            }
            // a TorchScript archive's module classes, defined by its own
            // code (data, read by the jit's loader), when the caller says so
            None if module.starts_with("__torch__")
                && self.allowed.iter().any(|a| a == super::TORCHSCRIPT_CLASSES) =>
            {
                Global::Allowed(path)
            }
            None => bail!(
                Runtime,
                "{}: the file names the global {path}, which is not one of the tensors, containers and values a checkpoint holds; loading it would run code from the file. If you trust the file and {path} is a class of yours, allow it with torch.serialization.add_safe_globals([{name}])",
                self.what
            ),
        };
        self.push(Obj::Global(g))
    }

    pub(super) fn int_of(&self, id: Id, what: &str) -> Result<i64> {
        match &self.objs[id] {
            Obj::Int(i) => Ok(*i),
            Obj::Bool(b) => Ok(i64::from(*b)),
            _ => bail!(Runtime, "{}: {what} is not an int", self.what),
        }
    }

    pub(super) fn ints_of(&self, id: Id, what: &str) -> Result<Vec<i64>> {
        match &self.objs[id] {
            Obj::Tuple(v) | Obj::List(v) => v.iter().map(|&i| self.int_of(i, what)).collect(),
            Obj::Size(v) => Ok(v.clone()),
            _ => bail!(Runtime, "{}: {what} is not a tuple of ints", self.what),
        }
    }

    pub(super) fn items_of(&self, id: Id) -> Result<Vec<Id>> {
        match &self.objs[id] {
            Obj::Tuple(v) | Obj::List(v) => Ok(v.clone()),
            _ => bail!(Runtime, "{}: the arguments are not a tuple", self.what),
        }
    }

    pub(super) fn bool_of(&self, id: Id) -> bool {
        matches!(self.objs[id], Obj::Bool(true)) || matches!(self.objs[id], Obj::Int(i) if i != 0)
    }

    pub(super) fn str_of(&self, id: Id, what: &str) -> Result<String> {
        match &self.objs[id] {
            Obj::Str(s) => Ok(s.clone()),
            _ => bail!(Runtime, "{}: {what} is not a str", self.what),
        }
    }

    /// `REDUCE`: a reconstructor applied to its arguments.
    pub(super) fn reduce(&mut self, f: Id, args: Id) -> Result<Obj> {
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
    pub(super) fn build(&mut self, obj: Id, state: Id) -> Result<()> {
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
}
