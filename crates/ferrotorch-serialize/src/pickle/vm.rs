//! The opcodes: a stack machine over the pickle's bytes, every length and
//! bound checked (Note [A pickle reader without callables]).

use super::{err, Global, Id, Obj, MAX_OBJECTS, MAX_STACK};
use ferrotorch_core::{bail, ensure, Result};
use std::collections::HashMap;

pub(super) enum Item {
    Obj(Id),
    Mark,
}

pub(super) struct Vm<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
    pub(super) objs: Vec<Obj>,
    pub(super) stack: Vec<Item>,
    pub(super) memo: HashMap<u32, Id>,
    pub(super) allowed: &'a [String],
    pub(super) what: &'a str,
}

impl<'a> Vm<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
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

    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(super) fn len_u64(&mut self) -> Result<usize> {
        let n = self.u64()?;
        usize::try_from(n).map_err(|_| err(format!("{}: a length of {n} bytes", self.what)))
    }

    pub(super) fn line(&mut self) -> Result<&'a str> {
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

    pub(super) fn alloc(&mut self, o: Obj) -> Result<Id> {
        ensure!(
            self.objs.len() < MAX_OBJECTS,
            Runtime,
            "{}: the pickle makes more than {MAX_OBJECTS} objects",
            self.what
        );
        self.objs.push(o);
        Ok(self.objs.len() - 1)
    }

    pub(super) fn push(&mut self, o: Obj) -> Result<()> {
        let id = self.alloc(o)?;
        self.push_id(id)
    }

    pub(super) fn push_id(&mut self, id: Id) -> Result<()> {
        ensure!(
            self.stack.len() < MAX_STACK,
            Runtime,
            "{}: the pickle's stack grows past {MAX_STACK} entries",
            self.what
        );
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Result<Id> {
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

    pub(super) fn top(&self) -> Result<Id> {
        match self.stack.last() {
            Some(Item::Obj(id)) => Ok(*id),
            _ => bail!(Runtime, "{}: no object on the stack", self.what),
        }
    }

    /// The objects above the topmost mark, the mark removed.
    pub(super) fn pop_mark(&mut self) -> Result<Vec<Id>> {
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

    pub(super) fn memo_put(&mut self, key: u32) -> Result<()> {
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

    pub(super) fn memo_get(&mut self, key: u32) -> Result<()> {
        let id = *self.memo.get(&key).ok_or_else(|| {
            err(format!(
                "{}: memo entry {key} read before it was written",
                self.what
            ))
        })?;
        self.push_id(id)
    }

    pub(super) fn run(&mut self) -> Result<Id> {
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
