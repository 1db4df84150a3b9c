//! The tar layout `torch.save` wrote before 0.4 (and that some published
//! weights still use): a tar of
//!
//! - `storages`: a pickled count, then per storage a pickled `(key,
//!   location, storage type)`, its element count (int64) and its bytes;
//!   then a pickled list of `(view key, root key, offset, numel)` views;
//! - `tensors`: a pickled count, then per tensor a pickled `(key, storage
//!   key, tensor type)`, its rank (int32, 4 bytes of padding), sizes,
//!   strides and offset (int64s);
//! - `pickle`: the object, naming tensors and storages by persistent ids
//!   (their keys as strings).
//!
//! Every pickle goes through the reader without callables, every header,
//! count and extent is checked before use (Note [Reading torch.save
//! files]); each persistent id becomes the tensor its key names.

use crate::pickle::{self, Document, Global, Obj};
use crate::pt::Checkpoint;
use ferrotorch_core::{bail, ensure, Error, ErrorKind, Result, Tensor};
use std::collections::HashMap;

const WHAT: &str = "torch.load";
/// More storages or tensors than a legacy file holds: checked before any
/// is read (each needs bytes of its own besides).
const MAX_ITEMS: usize = 1 << 20;

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("{WHAT}: {}", msg.into()))
}

/// Whether `bytes` is a tar archive (the `ustar` magic of its first
/// header).
pub fn is_tar(bytes: &[u8]) -> bool {
    bytes.len() >= 512 && &bytes[257..262] == b"ustar"
}

fn octal(field: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(field).ok()?;
    let s = s.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    usize::from_str_radix(s, 8).ok()
}

/// The tar's regular files, by name (extended headers skipped).
fn members(b: &[u8]) -> Result<Vec<(String, &[u8])>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + 512 <= b.len() {
        let h = &b[at..at + 512];
        if h.iter().all(|&c| c == 0) {
            return Ok(out);
        }
        let sum: usize = h
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    usize::from(c)
                }
            })
            .sum();
        ensure!(
            octal(&h[148..156]) == Some(sum),
            Runtime,
            "{WHAT}: a tar header at byte {at} is damaged (its checksum does not match)"
        );
        let name_len = h[..100].iter().position(|&c| c == 0).unwrap_or(100);
        let name = String::from_utf8_lossy(&h[..name_len]).into_owned();
        let size = octal(&h[124..136])
            .ok_or_else(|| bad(format!("tar member {name:?} has a bad size")))?;
        let data = at + 512;
        let end = data
            .checked_add(size)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| {
                bad(format!(
                    "tar member {name:?} ({size} bytes) runs past the end of the file"
                ))
            })?;
        if matches!(h[156], b'0' | 0) {
            ensure!(
                !out.iter().any(|(n, _)| *n == name),
                Runtime,
                "{WHAT}: the tar has two members named {name:?}"
            );
            out.push((name, &b[data..end]));
        }
        at = data + size.div_ceil(512) * 512;
    }
    bail!(
        Runtime,
        "{WHAT}: the tar archive is truncated (no end marker)"
    )
}

/// A cursor over a member holding pickles and raw fields in turn.
struct Stream<'a> {
    b: &'a [u8],
    at: usize,
    what: &'static str,
}

impl Stream<'_> {
    fn pickle(&mut self) -> Result<Document> {
        let (doc, at) = pickle::read_at(self.b, self.at, &[], WHAT)?;
        self.at = at;
        Ok(doc)
    }

    fn count(&mut self) -> Result<usize> {
        let doc = self.pickle()?;
        match doc.get(doc.root) {
            Obj::Int(n) if *n >= 0 && (*n as usize) <= MAX_ITEMS => Ok(*n as usize),
            _ => Err(bad(format!(
                "the {} member's count is not a small int",
                self.what
            ))),
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| bad(format!("the {} member is truncated", self.what)))?;
        let out = &self.b[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }
}

fn int(doc: &Document, id: usize, what: &str) -> Result<i64> {
    match doc.get(id) {
        Obj::Int(i) => Ok(*i),
        Obj::Str(s) => s
            .parse()
            .map_err(|_| bad(format!("{what} {s:?} is not a number"))),
        _ => Err(bad(format!("{what} is not an int"))),
    }
}

/// A tuple's items, exactly `n` of them.
fn items(doc: &Document, n: usize, what: &str) -> Result<Vec<usize>> {
    match doc.get(doc.root) {
        Obj::Tuple(v) | Obj::List(v) if v.len() == n => Ok(v.clone()),
        _ => Err(bad(format!("{what} is not a tuple of {n}"))),
    }
}

/// The `pickle` member's document alone (no storage read).
pub fn pickle_member(bytes: &[u8], allowed: &[String]) -> Result<Document> {
    let m = members(bytes)?;
    let p = m
        .iter()
        .find(|(n, _)| n == "pickle")
        .ok_or_else(|| bad("the legacy tar has no \"pickle\" member"))?;
    pickle::read(p.1, allowed, WHAT)
}

/// Read a tar-layout file (the module doc).
pub fn load_tar(bytes: &[u8], allowed: &[String]) -> Result<Checkpoint> {
    let m = members(bytes)?;
    let member = |name: &str| {
        m.iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| *d)
            .ok_or_else(|| bad(format!("the legacy tar has no {name:?} member")))
    };
    // storages, by key
    let mut storages: HashMap<i64, Tensor> = HashMap::new();
    let mut s = Stream {
        b: member("storages")?,
        at: 0,
        what: "storages",
    };
    for _ in 0..s.count()? {
        let d = s.pickle()?;
        let it = items(&d, 3, "a storage's header")?;
        let key = int(&d, it[0], "a storage key")?;
        let dtype = match d.get(it[2]) {
            Obj::Global(Global::Storage(name)) => crate::pt::dtype_of(name)?,
            _ => bail!(
                Runtime,
                "{WHAT}: storage {key}'s type is not a storage class"
            ),
        };
        let numel = usize::try_from(s.i64()?)
            .map_err(|_| bad(format!("storage {key} has a negative size")))?;
        let n = numel
            .checked_mul(dtype.size())
            .ok_or_else(|| bad(format!("storage {key} is too large")))?;
        let data = s.bytes(n)?;
        ensure!(
            !storages.contains_key(&key),
            Runtime,
            "{WHAT}: storage {key} appears twice"
        );
        storages.insert(key, Tensor::from_bytes(data, &[numel], dtype)?);
    }
    let views = s.pickle()?;
    if let Obj::List(vs) = views.get(views.root) {
        for &v in vs {
            let Obj::Tuple(p) = views.get(v) else {
                bail!(Runtime, "{WHAT}: a storage view is not a tuple");
            };
            ensure!(
                p.len() == 4,
                Runtime,
                "{WHAT}: a storage view is not (key, root, offset, numel)"
            );
            let (key, root) = (
                int(&views, p[0], "a view key")?,
                int(&views, p[1], "a view's root")?,
            );
            let (off, n) = (
                int(&views, p[2], "a view offset")?,
                int(&views, p[3], "a view size")?,
            );
            let base = storages
                .get(&root)
                .ok_or_else(|| bad(format!("view {key} of a missing storage {root}")))?;
            ensure!(
                off >= 0
                    && n >= 0
                    && off
                        .checked_add(n)
                        .is_some_and(|e| e as usize <= base.numel()),
                Runtime,
                "{WHAT}: view {key} ({off}, {n}) lies outside storage {root}"
            );
            let t = base.narrow(0, off, n as usize)?;
            storages.insert(key, t);
        }
    }
    // tensors, by key
    let mut tensors: HashMap<i64, Tensor> = HashMap::new();
    let mut s = Stream {
        b: member("tensors")?,
        at: 0,
        what: "tensors",
    };
    for _ in 0..s.count()? {
        let d = s.pickle()?;
        let it = items(&d, 3, "a tensor's header")?;
        let key = int(&d, it[0], "a tensor key")?;
        let sid = int(&d, it[1], "a tensor's storage key")?;
        let ndim = i32::from_le_bytes(s.bytes(4)?.try_into().expect("4 bytes"));
        s.bytes(4)?;
        ensure!(
            (0..=64).contains(&ndim),
            Runtime,
            "{WHAT}: tensor {key} has {ndim} dimensions"
        );
        let size: Vec<i64> = (0..ndim).map(|_| s.i64()).collect::<Result<_>>()?;
        let stride: Vec<i64> = (0..ndim).map(|_| s.i64()).collect::<Result<_>>()?;
        let offset = s.i64()?;
        let base = storages
            .get(&sid)
            .ok_or_else(|| bad(format!("tensor {key} names a missing storage {sid}")))?;
        tensors.insert(key, crate::pt::view_of(base, offset, &size, &stride)?);
    }
    // the object: each persistent id the tensor (or storage) its key names
    let mut doc = pickle::read(member("pickle")?, allowed, WHAT)?;
    let mut made = HashMap::new();
    for id in 0..doc.objs.len() {
        if let Obj::Persistent(p) = doc.objs[id] {
            let key = int(&doc, p, "a persistent id")?;
            let t = tensors
                .get(&key)
                .or_else(|| storages.get(&key))
                .cloned()
                .ok_or_else(|| bad(format!("the pickle names {key}, which is neither a tensor nor a storage of the file")))?;
            doc.objs[id] = Obj::Tensor {
                storage: p,
                offset: 0,
                size: t.shape().iter().map(|&s| s as i64).collect(),
                stride: t.stride().iter().map(|&s| s as i64).collect(),
                requires_grad: false,
                dtype: None,
            };
            made.insert(id, t);
        }
    }
    Ok(Checkpoint { doc, tensors: made })
}
