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
fn dtype_of(name: &str) -> Result<DType> {
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

/// Read a `torch.save` zip (Note [Reading torch.save files]); `allowed`
/// names extra classes the pickle may hold (`safe_globals`).
pub fn load_pt(bytes: &[u8], allowed: &[String]) -> Result<Checkpoint> {
    let names = crate::zip::names_for(bytes, WHAT)?;
    if let Some(n) = names.iter().find(|n| n.split('/').nth(1) == Some("code")) {
        bail!(
            Runtime,
            "{WHAT}: the file is a TorchScript archive (torch.jit.save; it has {n}), whose data.pkl is a scripted module: load it with torch.jit.load"
        );
    }
    let entries = crate::zip::entries_for(bytes, WHAT)?;
    let pkl = entries
        .iter()
        .find(|(n, _)| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
        .ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: the zip has no <archive>/data.pkl: it is not a torch.save file"),
            )
        })?;
    let prefix = &pkl.0[..pkl.0.len() - "data.pkl".len()];
    let entry = |name: &str| -> Option<&[u8]> {
        let full = format!("{prefix}{name}");
        entries.iter().find(|(n, _)| *n == full).map(|(_, d)| *d)
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
    let doc = pickle::read(pkl.1, allowed, WHAT)?;
    // the storages the persistent ids name: (entry bytes, dtype, numel)
    let mut storages: HashMap<Id, (String, &[u8], DType)> = HashMap::new();
    for (id, o) in doc.objs.iter().enumerate() {
        let Obj::Persistent(pid) = o else { continue };
        let Obj::Tuple(parts) = doc.get(*pid) else {
            bail!(Runtime, "{WHAT}: a persistent id that is not a tuple");
        };
        ensure!(
            parts.len() == 5 && matches!(doc.get(parts[0]), Obj::Str(s) if s == "storage"),
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
        let Obj::Str(key) = doc.get(parts[2]) else {
            bail!(Runtime, "{WHAT}: a storage whose key is not a str");
        };
        let numel = match doc.get(parts[4]) {
            Obj::Int(n) if *n >= 0 => *n as usize,
            _ => bail!(Runtime, "{WHAT}: storage {key} has no element count"),
        };
        let data = entry(&format!("data/{key}")).ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: storage {key} has no entry data/{key} in the file"),
            )
        })?;
        ensure!(
            numel.checked_mul(dtype.size()) == Some(data.len()),
            Runtime,
            "{WHAT}: storage {key} should hold {numel} elements of torch.{} ({} bytes) but its entry has {} bytes",
            dtype.name(),
            numel.saturating_mul(dtype.size()),
            data.len()
        );
        storages.insert(id, (key.clone(), data, dtype));
    }
    // one tensor per (storage, dtype): views of a storage share it
    let mut made: HashMap<(String, DType), Tensor> = HashMap::new();
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
            let (key, data, stored) = storages.get(storage).ok_or_else(|| {
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
                    let t = storage_tensor(key, data, dt, big)?;
                    made.insert((key.clone(), dt), t.clone());
                    t
                }
            };
            let t = view_of(&base, *offset, size, stride)?;
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
fn view_of(base: &Tensor, offset: i64, size: &[i64], stride: &[i64]) -> Result<Tensor> {
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
