//! Safetensors files, compatible with `safetensors.torch`: `save_file` /
//! `load_file` (and `save` / `load` on bytes) for state dicts.
//!
//! # Note [Safetensors]
//! Layout: an 8-byte little-endian header length, a JSON header mapping
//! each name to `{dtype, shape, data_offsets}` (plus an optional
//! `__metadata__` map of strings), padded with spaces to a multiple of 8,
//! then the tensors' bytes. We write exactly what the reference
//! implementation writes — tensors ordered by dtype (widest first), then
//! name — so a file saved here is byte-identical to `safetensors.torch`'s.
//! Loading trusts nothing: the header length, JSON, every dtype, shape and
//! offset are checked, offsets must tile the data exactly (no overlap, no
//! gap, nothing past the end), and bool bytes must be 0 or 1. Saving writes
//! a temporary file, syncs it and renames it over the target, so a failed
//! save leaves the old file as it was.

use crate::StateDict;
use ferrotorch_core::{bail, ensure, DType, Error, ErrorKind, Result, Tensor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

const MAX_HEADER: u64 = 100_000_000;

fn code(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F64 => "F64",
        DType::F32 => "F32",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::I64 => "I64",
        DType::I32 => "I32",
        DType::I16 => "I16",
        DType::I8 => "I8",
        DType::U8 => "U8",
        DType::Bool => "BOOL",
        DType::C64 => "C64",
        DType::C32 | DType::C128 => bail!(
            Runtime,
            "safetensors: the format has no {} dtype (complex64 is C64)",
            dtype.name()
        ),
    })
}

fn parse_code(s: &str) -> Result<DType> {
    Ok(match s {
        "F64" => DType::F64,
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "I64" => DType::I64,
        "I32" => DType::I32,
        "I16" => DType::I16,
        "I8" => DType::I8,
        "U8" => DType::U8,
        "BOOL" => DType::Bool,
        "C64" => DType::C64,
        other => bail!(Runtime, "safetensors: unsupported dtype {other:?}"),
    })
}

/// The reference implementation's dtype order (its enum order), widest
/// kinds last; files list tensors in descending order of this.
fn rank(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        DType::U8 => 1,
        DType::I8 => 2,
        DType::I16 => 3,
        DType::F16 => 4,
        DType::BF16 => 5,
        DType::I32 => 6,
        DType::F32 => 7,
        DType::C64 => 8,
        DType::F64 => 9,
        DType::I64 => 10,
        DType::C128 => 11,
        DType::C32 => 12,
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serialises")
}

/// A safetensors file laid out but not yet written: its length is known,
/// so it can be written straight into a buffer someone else allocated (a
/// Python `bytes`), copying each tensor once.
pub struct Encoded<'a> {
    header: String,
    entries: Vec<(&'a String, &'a Tensor)>,
    data_len: usize,
}

impl Encoded<'_> {
    /// The file's length in bytes.
    pub fn len(&self) -> usize {
        8 + self.header.len() + self.data_len
    }

    /// Whether the file is empty (never: it has a header).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Write the file into `out`, which must be exactly [`Encoded::len`]
    /// bytes.
    pub fn write_into(&self, out: &mut [u8]) -> Result<()> {
        ensure!(
            out.len() == self.len(),
            Value,
            "safetensors: a buffer of {} bytes for a file of {}",
            out.len(),
            self.len()
        );
        let h = self.header.len();
        out[..8].copy_from_slice(&(h as u64).to_le_bytes());
        out[8..8 + h].copy_from_slice(self.header.as_bytes());
        let mut at = 8 + h;
        for (_, t) in &self.entries {
            let n = t.numel() * t.element_size();
            t.write_bytes(&mut out[at..at + n])?;
            at += n;
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        out.extend((self.header.len() as u64).to_le_bytes());
        out.extend(self.header.as_bytes());
        for (_, t) in &self.entries {
            t.append_bytes(&mut out)?;
        }
        Ok(out)
    }
}

/// Lay out `tensors` (and optional string `metadata`) as a safetensors
/// file: the header, with each tensor's offsets from its size.
pub fn encode<'a>(
    tensors: &'a StateDict,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Encoded<'a>> {
    let mut entries: Vec<(&String, &Tensor)> = tensors.iter().collect();
    for (name, _) in &entries {
        ensure!(
            name.as_str() != "__metadata__",
            Value,
            "safetensors: the name \"__metadata__\" is reserved"
        );
    }
    entries.sort_by(|(ln, lt), (rn, rt)| rank(rt.dtype()).cmp(&rank(lt.dtype())).then(ln.cmp(rn)));
    let mut header = String::from("{");
    if let Some(meta) = metadata {
        let fields: Vec<String> = meta
            .iter()
            .map(|(k, v)| format!("{}:{}", json_str(k), json_str(v)))
            .collect();
        header += &format!("\"__metadata__\":{{{}}}", fields.join(","));
    }
    let mut end = 0;
    for (name, t) in &entries {
        let begin = end;
        end += t.numel() * t.element_size();
        let shape: Vec<String> = t.shape().iter().map(usize::to_string).collect();
        if header.len() > 1 {
            header.push(',');
        }
        header += &format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{begin},{end}]}}",
            json_str(name),
            code(t.dtype())?,
            shape.join(",")
        );
    }
    header.push('}');
    while (8 + header.len()) % 8 != 0 {
        header.push(' ');
    }
    Ok(Encoded {
        header,
        entries,
        data_len: end,
    })
}

/// Serialise `tensors` (and optional string `metadata`) to safetensors bytes.
pub fn save(tensors: &StateDict, metadata: Option<&BTreeMap<String, String>>) -> Result<Vec<u8>> {
    encode(tensors, metadata)?.to_vec()
}

/// Save `tensors` to `path` atomically (`safetensors.torch.save_file`):
/// a temporary file next to it is written, synced and renamed over it.
pub fn save_file(
    tensors: &StateDict,
    path: impl AsRef<Path>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    write_file_atomic(path.as_ref(), &save(tensors, metadata)?)
}

/// Write `bytes` to `path` so that a failure leaves any old file whole: a
/// temporary file next to it is written, synced and renamed over it.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io_err(path, "is not a file path"))?;
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Persist the rename itself; not every platform can open a directory.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(path, &e.to_string())
    })
}

fn io_err(path: &Path, msg: &str) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("safetensors: {}: {msg}", path.display()),
    )
}

/// Read the tensors of a safetensors file (`safetensors.torch.load_file`),
/// by name in sorted order.
pub fn load_file(path: impl AsRef<Path>) -> Result<StateDict> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err(path, &e.to_string()))?;
    load(&bytes)
}

/// Parse safetensors bytes, validating everything (see Note [Safetensors]).
pub fn load(bytes: &[u8]) -> Result<StateDict> {
    Ok(parse(bytes)?.0)
}

/// The `__metadata__` map of safetensors bytes (empty when absent).
pub fn metadata(bytes: &[u8]) -> Result<BTreeMap<String, String>> {
    Ok(parse(bytes)?.1)
}

/// What a file that is not safetensors most likely is, recognised by its
/// first bytes, with what reads it instead (PyTorch's checkpoints: the
/// serialize crate's reader, which runs none of their pickle).
fn foreign_format(bytes: &[u8]) -> Option<&'static str> {
    let zip = bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06");
    // a saved program's first entry (Note [Program archives] in ferrotorch-jit)
    if zip && bytes.get(30..45) == Some(b"archive/version") {
        return Some("a zip archive: a saved program (torch.jit.save); load it with jit.load");
    }
    if zip {
        Some("a zip archive: PyTorch's torch.save format, which ferrotorch.load (Python) and ferrotorch::serialization::load_pt (Rust) read without running its pickle")
    } else if bytes.len() >= 2 && bytes[0] == 0x80 && (2..=5).contains(&bytes[1]) {
        Some("a Python pickle: PyTorch's legacy torch.save format (_use_new_zipfile_serialization=False), which ferrotorch.load (Python) and ferrotorch::serialization::load_pt (Rust) read without running its pickle")
    } else if bytes.starts_with(b"\x93NUMPY") {
        Some("a NumPy .npy file: read it with numpy.load and convert with torch.from_numpy")
    } else {
        None
    }
}

/// [`parse_safetensors`], naming the format of a file that fails to parse
/// when it is a known other one (a valid safetensors file whose header
/// length happens to start with such bytes still parses).
fn parse(bytes: &[u8]) -> Result<(StateDict, BTreeMap<String, String>)> {
    parse_safetensors(bytes).map_err(|e| match foreign_format(bytes) {
        Some(what) => Error::new(
            ErrorKind::Runtime,
            format!("safetensors: this file is not safetensors but {what}."),
        ),
        None => e,
    })
}

fn parse_safetensors(bytes: &[u8]) -> Result<(StateDict, BTreeMap<String, String>)> {
    ensure!(
        bytes.len() >= 8,
        Runtime,
        "safetensors: {} bytes is too short for the 8-byte header length",
        bytes.len()
    );
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    ensure!(
        n <= MAX_HEADER && 8 + n <= bytes.len() as u64,
        Runtime,
        "safetensors: header of {n} bytes does not fit in a file of {} bytes",
        bytes.len()
    );
    let header = &bytes[8..8 + n as usize];
    let data = &bytes[8 + n as usize..];
    let text = std::str::from_utf8(header)
        .map_err(|_| Error::new(ErrorKind::Runtime, "safetensors: header is not UTF-8"))?;
    ensure!(
        text.starts_with('{'),
        Runtime,
        "safetensors: header is not a JSON object"
    );
    let json: Value = serde_json::from_str(text.trim_end()).map_err(|e| {
        Error::new(
            ErrorKind::Runtime,
            format!("safetensors: invalid header JSON: {e}"),
        )
    })?;
    let Value::Object(map) = json else {
        bail!(Runtime, "safetensors: header is not a JSON object");
    };
    let mut meta = BTreeMap::new();
    let mut specs = Vec::new();
    for (name, v) in &map {
        if name == "__metadata__" {
            let Value::Object(m) = v else {
                bail!(
                    Runtime,
                    "safetensors: __metadata__ must map strings to strings"
                );
            };
            for (k, v) in m {
                let Value::String(s) = v else {
                    bail!(
                        Runtime,
                        "safetensors: __metadata__ must map strings to strings"
                    );
                };
                meta.insert(k.clone(), s.clone());
            }
            continue;
        }
        specs.push(spec(name, v)?);
    }
    specs.sort_by_key(|s| (s.begin, s.end));
    let mut expected = 0;
    for s in &specs {
        ensure!(
            s.begin == expected,
            Runtime,
            "safetensors: tensor {:?} starts at byte {} but the previous data ends at {expected} (overlapping or missing data)",
            s.name,
            s.begin
        );
        expected = s.end;
    }
    ensure!(
        expected == data.len(),
        Runtime,
        "safetensors: the tensors cover {expected} bytes but the data section has {}",
        data.len()
    );
    let mut sd = StateDict::new();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    for s in specs {
        let t = Tensor::from_bytes(&data[s.begin..s.end], &s.shape, s.dtype).map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("safetensors: tensor {:?}: {}", s.name, e.message()),
            )
        })?;
        sd.insert(s.name, t);
    }
    Ok((sd, meta))
}

struct Spec {
    name: String,
    dtype: DType,
    shape: Vec<usize>,
    begin: usize,
    end: usize,
}

fn spec(name: &str, v: &Value) -> Result<Spec> {
    let bad = |what: &str| {
        Error::new(
            ErrorKind::Runtime,
            format!("safetensors: tensor {name:?}: {what}"),
        )
    };
    let dtype = parse_code(v["dtype"].as_str().ok_or_else(|| bad("missing dtype"))?)?;
    let ints = |key: &str| -> Result<Vec<usize>> {
        v[key]
            .as_array()
            .ok_or_else(|| bad(&format!("missing {key}")))?
            .iter()
            .map(|d| {
                d.as_u64()
                    .and_then(|d| usize::try_from(d).ok())
                    .ok_or_else(|| bad(&format!("{key} must hold non-negative integers")))
            })
            .collect()
    };
    let shape = ints("shape")?;
    let offsets = ints("data_offsets")?;
    let [begin, end] = offsets[..] else {
        return Err(bad("data_offsets must be [begin, end]"));
    };
    ensure!(
        begin <= end,
        Runtime,
        "safetensors: tensor {name:?}: data_offsets [{begin}, {end}] run backwards"
    );
    let nbytes = shape
        .iter()
        .try_fold(dtype.size(), |a, &s| a.checked_mul(s))
        .ok_or_else(|| bad("shape overflows"))?;
    ensure!(
        nbytes == end - begin,
        Runtime,
        "safetensors: tensor {name:?} of dtype {} and shape {shape:?} needs {nbytes} bytes but its data_offsets span {}",
        code(dtype)?,
        end - begin
    );
    Ok(Spec {
        name: name.to_string(),
        dtype,
        shape,
        begin,
        end,
    })
}
