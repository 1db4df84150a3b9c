//! `.pt` checkpoints as `torch.save` writes them: a zip whose
//! `<archive>/data.pkl` is a pickle naming storages by persistent id
//! (`('storage', <storage class>, key, location, numel)`), each stored as
//! `<archive>/data/<key>`, with `<archive>/byteorder` saying how.
//!
//! # Note [Reading torch.save files]
//! The pickle is read by [`crate::pickle::read`] (no code runs); each
//! storage it names is checked against its entry (dtype known here, size
//! `numel × element size`) and becomes one 1-D tensor, and every tensor of
//! the pickle is a strided view of its storage's tensor, its extent checked
//! against the storage first. So views that shared a storage in torch share
//! one here, and non-contiguous and offset tensors load as they were.
//! Big-endian files are byte-swapped element by element.

use crate::pickle::{self, Document, Global, Id, Obj};
use ferrotorch_core::{bail, ensure, DType, Result, Tensor};
use std::collections::HashMap;

/// A loaded checkpoint: the pickle's objects and the tensors they rebuild.
pub struct Checkpoint {
    /// The pickle's objects.
    pub doc: Document,
    /// The tensor of every `Obj::Tensor` and `Obj::Parameter`, by id.
    pub tensors: HashMap<Id, Tensor>,
}

const WHAT: &str = "torch.load";

/// The dtype of a storage class's dtype name, or a named error.
pub(crate) fn dtype_of(name: &str) -> Result<DType> {
    Ok(match name {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int64" => DType::I64,
        "int32" => DType::I32,
        "int16" => DType::I16,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "bool" => DType::Bool,
        "complex32" => DType::C32,
        "complex64" => DType::C64,
        "complex128" => DType::C128,
        q @ ("qint8" | "quint8" | "qint32") => bail!(
            Runtime,
            "{WHAT}: the file holds a quantized tensor (torch.{q}), which ferrotorch does not have"
        ),
        other => bail!(
            Runtime,
            "{WHAT}: the file holds a tensor of dtype torch.{other}, which ferrotorch does not have"
        ),
    })
}

/// Whether `bytes` is a zip (the format `torch.save` writes since 1.6).
pub fn is_pt_zip(bytes: &[u8]) -> bool {
    crate::zip::is_zip(bytes)
}

/// Read a file `torch.save` wrote (Note [Reading torch.save files]): the
/// zip format, or the stream before torch 1.6; `allowed` names extra
/// classes the pickle may hold (`safe_globals`).
pub fn load_pt(bytes: &[u8], allowed: &[String]) -> Result<Checkpoint> {
    if crate::zip::is_zip(bytes) {
        return load_zip(bytes, allowed);
    }
    if bytes.starts_with(LEGACY_START) {
        return crate::legacy_stream::load_legacy(bytes, allowed);
    }
    if crate::legacy_tar::is_tar(bytes) {
        return crate::legacy_tar::load_tar(bytes, allowed);
    }
    bail!(
        Runtime,
        "{WHAT}: not a file torch.save wrote (neither its zip format, its legacy stream nor its tar layout)"
    )
}

/// The classes a `torch.save` file's pickle names beyond the tensors,
/// containers and values [`load_pt`] rebuilds by itself, in first-use
/// order (`torch.serialization.get_unsafe_globals_in_checkpoint`): what
/// `allowed` must hold to load it. No storage is read.
pub fn pickle_classes(bytes: &[u8]) -> Result<Vec<String>> {
    let any = [pickle::ANY_CLASS.to_string()];
    let doc = if crate::zip::is_zip(bytes) {
        let entries = crate::zip::entries_for(bytes, WHAT)?;
        pickle::read(&archive_entry(&entries, "data.pkl")?.1, &any, WHAT)?
    } else if bytes.starts_with(LEGACY_START) {
        let mut at = 0;
        for _ in 0..3 {
            at = pickle::read_at(bytes, at, &[], WHAT)?.1;
        }
        pickle::read_at(bytes, at, &any, WHAT)?.0
    } else if crate::legacy_tar::is_tar(bytes) {
        crate::legacy_tar::pickle_member(bytes, &any)?
    } else {
        bail!(Runtime, "{WHAT}: not a file torch.save wrote");
    };
    let mut out: Vec<String> = Vec::new();
    for o in &doc.objs {
        if let Obj::Global(Global::Allowed(p)) = o {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    Ok(out)
}

/// [`pickle_classes`] of the file at `path`, read through a mapping of
/// it (no buffer of the whole file).
pub fn pickle_classes_file(path: &std::path::Path) -> Result<Vec<String>> {
    let map = crate::mmap::Mapping::open(path)?;
    pickle_classes(map.bytes())
}

/// The entry `<archive>/<name>` of a zip torch wrote (one folder deep).
fn archive_entry<'e, 'a>(
    entries: &'e [(String, std::borrow::Cow<'a, [u8]>)],
    name: &str,
) -> Result<&'e (String, std::borrow::Cow<'a, [u8]>)> {
    entries
        .iter()
        .find(|(n, _)| {
            n.strip_suffix(name)
                .is_some_and(|p| p.ends_with('/') && p.matches('/').count() == 1)
        })
        .ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: the zip has no <archive>/{name}: it is not a file torch wrote"),
            )
        })
}

/// How the legacy stream begins: protocol 2, then the magic number as a
/// 10-byte LONG1.
pub(crate) const LEGACY_START: &[u8] = b"\x80\x02\x8a\x0a";
/// torch's legacy magic number, little-endian.
pub(crate) const MAGIC: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

fn load_zip(bytes: &[u8], allowed: &[String]) -> Result<Checkpoint> {
    load_zip_with(bytes, allowed, &storage_tensor)
}

fn load_zip_with(bytes: &[u8], allowed: &[String], make: &MakeStorage<'_>) -> Result<Checkpoint> {
    let names = crate::zip::names_for(bytes, WHAT)?;
    if let Some(n) = names.iter().find(|n| n.split('/').nth(1) == Some("code")) {
        bail!(
            Runtime,
            "{WHAT}: the file is a TorchScript archive (torch.jit.save; it has {n}), whose data.pkl is a scripted module: load it with torch.jit.load"
        );
    }
    load_zip_pickle_with(bytes, "data.pkl", "data", allowed, make)
}

/// One pickle of a zip archive torch wrote (`data.pkl` of a checkpoint,
/// `constants.pkl` of a TorchScript archive) with the storages it names
/// read from `<archive>/<storages>/<key>` (Note [Reading torch.save
/// files]); errors begin with `what`.
pub fn load_zip_pickle(
    bytes: &[u8],
    pickle: &str,
    storages: &str,
    allowed: &[String],
) -> Result<Checkpoint> {
    load_zip_pickle_with(bytes, pickle, storages, allowed, &storage_tensor)
}

fn load_zip_pickle_with(
    bytes: &[u8],
    pickle: &str,
    storages: &str,
    allowed: &[String],
    make: &MakeStorage<'_>,
) -> Result<Checkpoint> {
    let entries = crate::zip::entries_for(bytes, WHAT)?;
    let pkl = archive_entry(&entries, pickle)?;
    let prefix = &pkl.0[..pkl.0.len() - pickle.len()];
    let entry = |name: &str| -> Option<&[u8]> {
        let full = format!("{prefix}{name}");
        entries.iter().find(|(n, _)| *n == full).map(|(_, d)| &**d)
    };
    let big = match entry("byteorder") {
        None | Some(b"little") => false,
        Some(b"big") => true,
        Some(other) => bail!(
            Runtime,
            "{WHAT}: the file's byteorder is {:?}",
            String::from_utf8_lossy(other)
        ),
    };
    let doc = pickle::read(&pkl.1, allowed, WHAT)?;
    build_with(doc, |key| entry(&format!("{storages}/{key}")), big, make)
}

/// [`load_pt`] of the file at `path`, read through a mapping of it (the
/// storages are copied out of the page cache once, with no buffer of the
/// whole file between; not populated up front: `MAP_POPULATE` made a
/// 524 MB load 240 ms instead of 33, the kernel's fault-around maps the
/// pages as the copies reach them).
pub fn load_pt_file(path: &std::path::Path, allowed: &[String]) -> Result<Checkpoint> {
    let map = crate::mmap::Mapping::open(path)?;
    load_pt(map.bytes(), allowed)
}

/// [`load_pt`] of the file at `path` with `torch.load(mmap=True)`'s
/// memory: the file is mapped (privately: writes to a tensor stay in this
/// process) and each storage whose entry is stored aligned, in this
/// machine's byte order, is a view of the mapping instead of a copy (Note
/// [Reading torch.save files]); the mapping lives as long as one of them.
pub fn load_pt_mmap(path: &std::path::Path, allowed: &[String]) -> Result<Checkpoint> {
    let map = crate::mmap::Mapping::open(path)?;
    let bytes = map.bytes();
    if !crate::zip::is_zip(bytes) {
        bail!(
            Runtime,
            "{WHAT}: mmap can only be used with files saved with `torch.save(_use_new_zipfile_serialization=True)`, please torch.save your checkpoint with this option in order to use mmap."
        );
    }
    let make = |key: &str, data: &[u8], dtype: DType, big: bool| -> Result<Tensor> {
        let at = data.as_ptr() as usize;
        if big || data.is_empty() || !at.is_multiple_of(dtype.size().max(1)) || !map.contains(data)
        {
            return storage_tensor(key, data, dtype, big);
        }
        map.tensor_of(data, dtype)
    };
    load_zip_with(bytes, allowed, &make)
}

pub(crate) fn storage_key(doc: &Document, pid: Id) -> Option<String> {
    match doc.get(pid) {
        Obj::Tuple(parts) if parts.len() >= 5 => match doc.get(parts[2]) {
            Obj::Str(k) => Some(k.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A persistent id's `(dtype, numel, view offset)`.
pub(crate) fn storage_of(doc: &Document, pid: Id) -> Result<(DType, usize, usize)> {
    let Obj::Tuple(parts) = doc.get(pid) else {
        bail!(Runtime, "{WHAT}: a persistent id that is not a tuple");
    };
    ensure!(
        (parts.len() == 5 || parts.len() == 6)
            && matches!(doc.get(parts[0]), Obj::Str(s) if s == "storage"),
        Runtime,
        "{WHAT}: a persistent id that is not ('storage', type, key, location, numel)"
    );
    let dtype = match doc.get(parts[1]) {
        Obj::Global(Global::Storage(d)) => dtype_of(d)?,
        Obj::DType(d) => dtype_of(d)?,
        _ => bail!(
            Runtime,
            "{WHAT}: a storage whose type is not a storage class"
        ),
    };
    let numel = match doc.get(parts[4]) {
        Obj::Int(n) if *n >= 0 => *n as usize,
        _ => bail!(Runtime, "{WHAT}: a storage without an element count"),
    };
    // the legacy format's (view key, offset, size) of a storage view
    let view = match parts.get(5).map(|&v| doc.get(v)) {
        None | Some(Obj::None) => 0,
        Some(Obj::Tuple(v)) if v.len() == 3 => match doc.get(v[1]) {
            Obj::Int(o) if *o >= 0 => *o as usize,
            _ => bail!(Runtime, "{WHAT}: a storage view with a bad offset"),
        },
        _ => bail!(
            Runtime,
            "{WHAT}: a storage view that is not (key, offset, size)"
        ),
    };
    Ok((dtype, numel, view))
}

/// The checkpoint of a pickle whose storages `data` gives by key.
pub(crate) fn build<'a>(
    doc: Document,
    data: impl Fn(&str) -> Option<&'a [u8]>,
    big: bool,
) -> Result<Checkpoint> {
    build_with(doc, data, big, &storage_tensor)
}

/// Makes storage `key`'s tensor from its bytes, dtype and byte order.
type MakeStorage<'m> = dyn Fn(&str, &[u8], DType, bool) -> Result<Tensor> + Sync + 'm;

/// [`build`] with each storage's tensor made by `make`.
fn build_with<'a>(
    doc: Document,
    data: impl Fn(&str) -> Option<&'a [u8]>,
    big: bool,
    make: &MakeStorage<'_>,
) -> Result<Checkpoint> {
    // the storages the persistent ids name: (key, entry bytes, dtype, view offset)
    let mut storages: HashMap<Id, (String, &[u8], DType, usize)> = HashMap::new();
    for (id, o) in doc.objs.iter().enumerate() {
        let Obj::Persistent(pid) = o else { continue };
        let (dtype, numel, view) = storage_of(&doc, *pid)?;
        let key = storage_key(&doc, *pid).ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: a storage whose key is not a str"),
            )
        })?;
        let bytes = data(&key).ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: storage {key} has no data in the file"),
            )
        })?;
        ensure!(
            numel.checked_mul(dtype.size()) == Some(bytes.len()),
            Runtime,
            "{WHAT}: storage {key} should hold {numel} elements of torch.{} ({} bytes) but its entry has {} bytes",
            dtype.name(),
            numel.saturating_mul(dtype.size()),
            bytes.len()
        );
        storages.insert(id, (key, bytes, dtype, view));
    }
    // one tensor per (storage, dtype): views of a storage share it
    let mut wanted: Vec<((String, DType), &[u8])> = Vec::new();
    for o in &doc.objs {
        if let Obj::Tensor { storage, dtype, .. } = o {
            if let Some((key, bytes, stored, _)) = storages.get(storage) {
                let dt = match dtype {
                    Some(d) => dtype_of(d)?,
                    None => *stored,
                };
                if !wanted.iter().any(|(k, _)| k.0 == *key && k.1 == dt) {
                    wanted.push(((key.clone(), dt), bytes));
                }
            }
        }
    }
    let mut made = make_all(&wanted, big, make)?;
    let mut tensors = HashMap::new();
    for (id, o) in doc.objs.iter().enumerate() {
        if let Obj::Tensor {
            storage,
            offset,
            size,
            stride,
            requires_grad,
            dtype,
        } = o
        {
            let (key, bytes, stored, view) = storages.get(storage).ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!("{WHAT}: a tensor whose storage is not one of the file's"),
                )
            })?;
            let dt = match dtype {
                Some(d) => dtype_of(d)?,
                None => *stored,
            };
            let base = match made.get(&(key.clone(), dt)) {
                Some(t) => t.clone(),
                None => {
                    let t = make(key, bytes, dt, big)?;
                    made.insert((key.clone(), dt), t.clone());
                    t
                }
            };
            let offset = offset.checked_add(*view as i64).ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!("{WHAT}: a tensor offset overflows"),
                )
            })?;
            let t = view_of(&base, offset, size, stride)?;
            let t = if *requires_grad {
                t.requires_grad_(true)?
            } else {
                t
            };
            tensors.insert(id, t);
        }
    }
    for (id, o) in doc.objs.iter().enumerate() {
        if let Obj::Parameter {
            data,
            requires_grad,
        } = o
        {
            let t = tensors.get(data).cloned().ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!("{WHAT}: a parameter of something that is not a tensor"),
                )
            })?;
            let t = t.detach().requires_grad_(*requires_grad)?;
            tensors.insert(id, t);
        }
    }
    Ok(Checkpoint { doc, tensors })
}

/// A storage to make: its key and dtype, and its entry's bytes.
type Wanted<'a> = ((String, DType), &'a [u8]);
/// A made storage, by key and dtype.
type Made = ((String, DType), Tensor);

/// The storages' tensors, made on up to `torch.get_num_threads()` threads
/// when there is much to copy (each thread a run of storages of about
/// equal bytes: the copies and the page faults of their new memory are
/// most of a large checkpoint's load).
fn make_all(
    wanted: &[Wanted<'_>],
    big: bool,
    make: &MakeStorage<'_>,
) -> Result<HashMap<(String, DType), Tensor>> {
    let total: usize = wanted.iter().map(|(_, b)| b.len()).sum();
    let threads = ferrotorch_kernels::parallel::get_num_threads().clamp(1, 16);
    let one = |w: &Wanted<'_>| make(&w.0 .0, w.1, w.0 .1, big).map(|t| (w.0.clone(), t));
    if threads == 1 || total < (32 << 20) || wanted.len() < 2 {
        return wanted.iter().map(one).collect();
    }
    // split into runs of about total / threads bytes
    let mut runs: Vec<&[Wanted<'_>]> = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, w) in wanted.iter().enumerate() {
        acc += w.1.len();
        if acc * threads >= total * (runs.len() + 1) || i + 1 == wanted.len() {
            runs.push(&wanted[start..=i]);
            start = i + 1;
        }
    }
    let parts: Vec<Result<Vec<Made>>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|run| s.spawn(move || run.iter().map(one).collect::<Result<Vec<_>>>()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ferrotorch_core::Error::new(
                        ferrotorch_core::ErrorKind::Runtime,
                        format!("{WHAT}: a thread copying storages failed"),
                    ))
                })
            })
            .collect()
    });
    let mut out = HashMap::new();
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// Storage `key`'s bytes as a 1-D tensor of `dtype` (byte-swapped from a
/// big-endian file).
fn storage_tensor(key: &str, data: &[u8], dtype: DType, big: bool) -> Result<Tensor> {
    let size = dtype.size();
    ensure!(
        data.len().is_multiple_of(size),
        Runtime,
        "{WHAT}: storage {key} ({} bytes) does not hold whole elements of torch.{}",
        data.len(),
        dtype.name()
    );
    let numel = data.len() / size;
    if !big {
        return Tensor::from_bytes(data, &[numel], dtype);
    }
    let unit = if dtype.is_complex() { size / 2 } else { size };
    let mut swapped = data.to_vec();
    for c in swapped.chunks_mut(unit) {
        c.reverse();
    }
    Tensor::from_bytes(&swapped, &[numel], dtype)
}

/// `base[offset..]` viewed with `size`/`stride`, its extent checked.
pub(crate) fn view_of(base: &Tensor, offset: i64, size: &[i64], stride: &[i64]) -> Result<Tensor> {
    let n = base.numel() as i64;
    ensure!(
        offset >= 0 && size.iter().all(|&s| s >= 0) && stride.iter().all(|&s| s >= 0),
        Runtime,
        "{WHAT}: a tensor with a negative offset, size or stride ({offset}, {size:?}, {stride:?})"
    );
    let empty = size.contains(&0);
    if !empty {
        let mut last = offset;
        for (&s, &st) in size.iter().zip(stride) {
            last = s
                .checked_sub(1)
                .and_then(|k| k.checked_mul(st))
                .and_then(|k| k.checked_add(last))
                .ok_or_else(|| {
                    ferrotorch_core::Error::new(
                        ferrotorch_core::ErrorKind::Runtime,
                        format!("{WHAT}: a tensor's extent overflows ({size:?}, {stride:?})"),
                    )
                })?;
        }
        ensure!(
            last < n,
            Runtime,
            "{WHAT}: a tensor of size {size:?}, stride {stride:?} and offset {offset} reaches element {last} of a storage of {n}"
        );
    }
    let size: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    let stride: Vec<usize> = stride.iter().map(|&s| s as usize).collect();
    base.as_strided(&size, &stride, Some(offset as usize))
}

impl Checkpoint {
    /// The tensor object `id` rebuilds, if it is one.
    pub fn tensor(&self, id: Id) -> Option<&Tensor> {
        self.tensors.get(&id)
    }

    /// The checkpoint as a state dict: its root must be a dict (or
    /// `OrderedDict`) of str keys to tensors.
    pub fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let items = match self.doc.get(self.doc.root) {
            Obj::Dict(v) | Obj::OrderedDict(v, _) => v,
            _ => bail!(
                Runtime,
                "{WHAT}: the checkpoint is not a dict of tensors (a state dict)"
            ),
        };
        items
            .iter()
            .map(|&(k, v)| {
                let Obj::Str(k) = self.doc.get(k) else {
                    bail!(Runtime, "{WHAT}: a state dict key that is not a str");
                };
                let t = self.tensor(v).ok_or_else(|| {
                    ferrotorch_core::Error::new(
                        ferrotorch_core::ErrorKind::Runtime,
                        format!("{WHAT}: state dict entry {k:?} is not a tensor"),
                    )
                })?;
                Ok((k.clone(), t.clone()))
            })
            .collect()
    }
}

/// `v` as the bytes of a `torch.save` zip whose entries sit under
/// `archive/` (torch names it after the file: `model` for `model.pt`)
/// (Note [Writing torch.save files]); `torch.load` reads it.
pub fn save_pt(v: &crate::pickle_write::Value, archive: &str) -> Result<Vec<u8>> {
    ensure!(
        !archive.is_empty() && !archive.contains('/'),
        Runtime,
        "torch.save: the archive name {archive:?} is not one path component"
    );
    let (pkl, storages) = crate::pickle_write::write(v)?;
    let id = serialization_id();
    let mut names: Vec<String> = vec![
        format!("{archive}/data.pkl"),
        format!("{archive}/.format_version"),
        format!("{archive}/.storage_alignment"),
        format!("{archive}/byteorder"),
    ];
    names.extend(storages.iter().map(|s| format!("{archive}/data/{}", s.key)));
    names.push(format!("{archive}/version"));
    names.push(format!("{archive}/.data/serialization_id"));
    let mut datas: Vec<&[u8]> = vec![&pkl, b"1", b"64", b"little"];
    datas.extend(storages.iter().map(|s| s.bytes.as_slice()));
    datas.push(b"3\n");
    datas.push(id.as_bytes());
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| n.as_str()).zip(datas).collect();
    crate::zip::write(&entries)
}

/// torch's `.data/serialization_id`: 40 decimal digits, unique per file.
fn serialization_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let s = format!("{t:020}{:010}{n:010}", std::process::id());
    s.chars()
        .rev()
        .take(40)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}
