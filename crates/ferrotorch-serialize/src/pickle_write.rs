//! Writing pickles as `torch.save` does: protocol 2, the globals its
//! loader rebuilds (the same table the reader knows), storages by
//! persistent id.
//!
//! # Note [Writing torch.save files]
//! [`Value`] is what a checkpoint can hold. Containers and tensors carry
//! an identity (`Some(id)`, the Python object's): the first time one is
//! written it is memoized, a later [`Value::Ref`] to it is a memo read, so
//! torch loads shared objects as one object. Each tensor is written as
//! `torch._utils._rebuild_tensor_v2` of its storage, which is named by a
//! persistent id `('storage', torch.<T>Storage, key, 'cpu', numel)` and
//! written once however many views share it; a storage viewed as two
//! dtypes is refused, as torch refuses it.

use ferrotorch_core::{bail, ensure, DType, Result, Tensor};
use std::collections::HashMap;

/// A value to write (Note [Writing torch.save files]).
#[derive(Clone, Debug)]
pub enum Value {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int in 64 bits.
    Int(i64),
    /// A larger int: its little-endian two's-complement bytes.
    BigInt(Vec<u8>),
    /// A float.
    Float(f64),
    /// A complex number.
    Complex(f64, f64),
    /// A str.
    Str(String),
    /// A bytes object.
    Bytes(Vec<u8>),
    /// A list (with its identity).
    List(Option<u64>, Vec<Value>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A dict, in order.
    Dict(Option<u64>, Vec<(Value, Value)>),
    /// An `OrderedDict`, with its `__dict__` (a state dict's `_metadata`).
    OrderedDict(Option<u64>, Vec<(Value, Value)>, Vec<(String, Value)>),
    /// A set or (`true`) frozenset.
    Set(Vec<Value>, bool),
    /// A tensor (with its identity) and whether it requires grad.
    Tensor(Option<u64>, Tensor, bool),
    /// An `nn.Parameter` of a tensor, and whether it requires grad.
    Parameter(Option<u64>, Tensor, bool),
    /// `torch.Size`.
    Size(Vec<i64>),
    /// A dtype.
    DType(DType),
    /// A device (`cpu`).
    Device(String),
    /// An object of a class (with its identity), as pickle's protocol 2
    /// writes an instance: `module.Name`, `NEWOBJ` with no arguments, then
    /// its state (`__dict__`) by `BUILD`: how `torch.save(model)` writes a
    /// module.
    Object(Option<u64>, String, String, Box<Value>),
    /// An object written before, by identity.
    Ref(u64),
}

/// A storage to write as `data/<key>`: its bytes.
pub struct StorageOut {
    /// Its key (`"0"`, `"1"`, ...).
    pub key: String,
    /// Its elements' bytes, little-endian.
    pub bytes: Vec<u8>,
}

/// The pickle of `v` and the storages it names.
pub fn write(v: &Value) -> Result<(Vec<u8>, Vec<StorageOut>)> {
    let mut p = Pickler {
        out: vec![0x80, 2],
        memo: HashMap::new(),
        next_memo: 0,
        storages: HashMap::new(),
        order: Vec::new(),
    };
    p.value(v, 0)?;
    p.out.push(b'.');
    Ok((p.out, p.order))
}

/// Deeper than this is refused rather than overflowing the stack.
const MAX_DEPTH: usize = 1000;

struct Pickler {
    out: Vec<u8>,
    memo: HashMap<u64, u32>,
    next_memo: u32,
    /// storage identity -> (key, dtype)
    storages: HashMap<(usize, usize), (String, DType)>,
    order: Vec<StorageOut>,
}

fn storage_class(d: DType) -> &'static str {
    match d {
        DType::F32 => "FloatStorage",
        DType::F64 => "DoubleStorage",
        DType::F16 => "HalfStorage",
        DType::BF16 => "BFloat16Storage",
        DType::I64 => "LongStorage",
        DType::I32 => "IntStorage",
        DType::I16 => "ShortStorage",
        DType::I8 => "CharStorage",
        DType::U8 => "ByteStorage",
        DType::Bool => "BoolStorage",
        DType::C32 => "ComplexHalfStorage",
        DType::C64 => "ComplexFloatStorage",
        DType::C128 => "ComplexDoubleStorage",
    }
}

fn dtype_global(d: DType) -> &'static str {
    d.name()
}

impl Pickler {
    fn put(&mut self, id: Option<u64>) {
        let k = self.next_memo;
        self.next_memo += 1;
        if k < 256 {
            self.out.extend([b'q', k as u8]);
        } else {
            self.out.push(b'r');
            self.out.extend(k.to_le_bytes());
        }
        if let Some(id) = id {
            self.memo.insert(id, k);
        }
    }

    fn get(&mut self, k: u32) {
        if k < 256 {
            self.out.extend([b'h', k as u8]);
        } else {
            self.out.push(b'j');
            self.out.extend(k.to_le_bytes());
        }
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(b'c');
        self.out.extend(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend(name.as_bytes());
        self.out.push(b'\n');
    }

    fn int(&mut self, i: i64) {
        if (0..256).contains(&i) {
            self.out.extend([b'K', i as u8]);
        } else if (0..65536).contains(&i) {
            self.out.push(b'M');
            self.out.extend((i as u16).to_le_bytes());
        } else if let Ok(v) = i32::try_from(i) {
            self.out.push(b'J');
            self.out.extend(v.to_le_bytes());
        } else {
            let mut b = i.to_le_bytes().to_vec();
            // minimal two's complement, as pickle writes LONG1
            while b.len() > 1 {
                let last = b[b.len() - 1];
                let prev = b[b.len() - 2];
                if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
                    b.pop();
                } else {
                    break;
                }
            }
            self.long(&b);
        }
    }

    fn long(&mut self, b: &[u8]) {
        if b.len() < 256 {
            self.out.extend([0x8a, b.len() as u8]);
        } else {
            self.out.push(0x8b);
            self.out.extend((b.len() as u32).to_le_bytes());
        }
        self.out.extend(b);
    }

    fn str(&mut self, s: &str) {
        self.out.push(b'X');
        self.out.extend((s.len() as u32).to_le_bytes());
        self.out.extend(s.as_bytes());
    }

    fn tuple(&mut self, items: &[Value], depth: usize) -> Result<()> {
        match items.len() {
            0 => self.out.push(b')'),
            n @ 1..=3 => {
                for v in items {
                    self.value(v, depth + 1)?;
                }
                self.out.push(0x84 + n as u8);
            }
            _ => {
                self.out.push(b'(');
                for v in items {
                    self.value(v, depth + 1)?;
                }
                self.out.push(b't');
            }
        }
        Ok(())
    }

    fn items(&mut self, pairs: &[(Value, Value)], depth: usize) -> Result<()> {
        for chunk in pairs.chunks(1000) {
            self.out.push(b'(');
            for (k, v) in chunk {
                self.value(k, depth + 1)?;
                self.value(v, depth + 1)?;
            }
            self.out.push(b'u');
        }
        Ok(())
    }

    fn empty_ordered_dict(&mut self) {
        self.global("collections", "OrderedDict");
        self.out.push(b')');
        self.out.push(b'R');
    }

    fn tensor(&mut self, t: &Tensor, requires_grad: bool, id: Option<u64>) -> Result<()> {
        let t = if t.is_conj() {
            t.resolve_conj()?
        } else {
            t.clone()
        };
        let d = t.dtype();
        let esize = d.size();
        let st = t.storage();
        let nbytes = st.nbytes();
        let base = (t.data_ptr() as usize).wrapping_sub(t.storage_offset() * esize);
        // an empty storage has no address to share: always its own
        let key = (
            if nbytes == 0 {
                usize::MAX - self.order.len()
            } else {
                base
            },
            nbytes,
        );
        let skey = match self.storages.get(&key) {
            Some((k, sd)) => {
                ensure!(
                    *sd == d,
                    Runtime,
                    "torch.save: cannot save multiple tensors or storages that view the same data as different types (torch.{} and torch.{})",
                    sd.name(),
                    d.name()
                );
                k.clone()
            }
            None => {
                let k = self.order.len().to_string();
                let numel = nbytes / esize;
                let whole = t.detach().as_strided(&[numel], &[1], Some(0))?;
                self.order.push(StorageOut {
                    key: k.clone(),
                    bytes: whole.to_bytes()?,
                });
                self.storages.insert(key, (k.clone(), d));
                k
            }
        };
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(b'(');
        // the persistent id of the storage
        self.out.push(b'(');
        self.str("storage");
        self.global("torch", storage_class(d));
        self.str(&skey);
        self.str("cpu");
        self.int((nbytes / esize) as i64);
        self.out.push(b't');
        self.out.push(b'Q');
        self.int(t.storage_offset() as i64);
        let size: Vec<Value> = t.shape().iter().map(|&s| Value::Int(s as i64)).collect();
        let stride: Vec<Value> = t.stride().iter().map(|&s| Value::Int(s as i64)).collect();
        self.tuple(&size, 0)?;
        self.tuple(&stride, 0)?;
        self.out.push(if requires_grad { 0x88 } else { 0x89 });
        self.empty_ordered_dict();
        self.out.push(b't');
        self.out.push(b'R');
        self.put(id);
        Ok(())
    }

    fn value(&mut self, v: &Value, depth: usize) -> Result<()> {
        ensure!(
            depth < MAX_DEPTH,
            Runtime,
            "torch.save: the object nests deeper than {MAX_DEPTH} levels"
        );
        match v {
            Value::None => self.out.push(b'N'),
            Value::Bool(b) => self.out.push(if *b { 0x88 } else { 0x89 }),
            Value::Int(i) => self.int(*i),
            Value::BigInt(b) => self.long(b),
            Value::Float(f) => {
                self.out.push(b'G');
                self.out.extend(f.to_be_bytes());
            }
            Value::Complex(re, im) => {
                self.global("builtins", "complex");
                self.tuple(&[Value::Float(*re), Value::Float(*im)], depth)?;
                self.out.push(b'R');
            }
            Value::Str(s) => self.str(s),
            Value::Bytes(b) => {
                // protocol 2: bytes are _codecs.encode(latin1 text, 'latin1')
                self.global("_codecs", "encode");
                let text: String = b.iter().map(|&c| char::from(c)).collect();
                self.str(&text);
                self.str("latin1");
                self.out.push(0x86);
                self.out.push(b'R');
            }
            Value::List(id, items) => {
                self.out.push(b']');
                self.put(*id);
                for chunk in items.chunks(1000) {
                    self.out.push(b'(');
                    for x in chunk {
                        self.value(x, depth + 1)?;
                    }
                    self.out.push(b'e');
                }
            }
            Value::Tuple(items) => self.tuple(items, depth)?,
            Value::Dict(id, pairs) => {
                self.out.push(b'}');
                self.put(*id);
                self.items(pairs, depth)?;
            }
            Value::OrderedDict(id, pairs, attrs) => {
                self.empty_ordered_dict();
                self.put(*id);
                self.items(pairs, depth)?;
                if !attrs.is_empty() {
                    let state: Vec<(Value, Value)> = attrs
                        .iter()
                        .map(|(k, v)| (Value::Str(k.clone()), v.clone()))
                        .collect();
                    self.out.push(b'}');
                    self.items(&state, depth)?;
                    self.out.push(b'b');
                }
            }
            Value::Set(items, frozen) => {
                self.global("builtins", if *frozen { "frozenset" } else { "set" });
                self.out.push(b']');
                for chunk in items.chunks(1000) {
                    self.out.push(b'(');
                    for x in chunk {
                        self.value(x, depth + 1)?;
                    }
                    self.out.push(b'e');
                }
                self.out.push(0x85);
                self.out.push(b'R');
            }
            Value::Tensor(id, t, rg) => self.tensor(t, *rg, *id)?,
            Value::Parameter(id, t, rg) => {
                self.global("torch._utils", "_rebuild_parameter");
                self.tensor(t, false, None)?;
                self.out.push(if *rg { 0x88 } else { 0x89 });
                self.empty_ordered_dict();
                self.out.push(0x87);
                self.out.push(b'R');
                self.put(*id);
            }
            Value::Size(s) => {
                self.global("torch", "Size");
                let items: Vec<Value> = s.iter().map(|&i| Value::Int(i)).collect();
                self.tuple(&items, depth)?;
                self.out.push(0x85);
                self.out.push(b'R');
            }
            Value::DType(d) => self.global("torch", dtype_global(*d)),
            Value::Device(s) => {
                self.global("torch", "device");
                self.str(s);
                self.out.push(0x85);
                self.out.push(b'R');
            }
            Value::Object(id, module, name, state) => {
                self.global(module, name);
                self.out.push(b')');
                self.out.push(0x81);
                self.put(*id);
                self.value(state, depth + 1)?;
                self.out.push(b'b');
            }
            Value::Ref(id) => match self.memo.get(id) {
                Some(&k) => self.get(k),
                None => bail!(
                    Runtime,
                    "torch.save: a reference to an object not written before"
                ),
            },
        }
        Ok(())
    }
}
