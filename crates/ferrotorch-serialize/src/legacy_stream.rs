//! The stream `torch.save` wrote before 1.6
//! (`_use_new_zipfile_serialization=False`), read without running code
//! (Note [Reading torch.save files]).

use crate::pickle::{self, Obj};
use crate::pt::{build, storage_key, storage_of, Checkpoint, MAGIC};
use ferrotorch_core::{bail, ensure, Result};
use std::collections::HashMap;

const WHAT: &str = "torch.load";

/// The stream torch wrote before 1.6 (`_use_new_zipfile_serialization=
/// False`): the magic number, the protocol version (1001), the system
/// info (byte order), the object's pickle, the list of storage keys, then
/// each storage as an int64 element count and its bytes.
pub(crate) fn load_legacy(bytes: &[u8], allowed: &[String]) -> Result<Checkpoint> {
    let (magic, at) = pickle::read_at(bytes, 0, &[], WHAT)?;
    ensure!(
        matches!(magic.get(magic.root), Obj::BigInt(b) if b[..] == MAGIC),
        Runtime,
        "{WHAT}: a pickle stream whose magic number is not torch's"
    );
    let (version, at) = pickle::read_at(bytes, at, &[], WHAT)?;
    ensure!(
        matches!(version.get(version.root), Obj::Int(1001)),
        Runtime,
        "{WHAT}: a legacy file of a protocol version other than 1001"
    );
    let (info, at) = pickle::read_at(bytes, at, &[], WHAT)?;
    let mut big = false;
    if let Obj::Dict(items) = info.get(info.root) {
        for &(k, v) in items {
            if matches!(info.get(k), Obj::Str(s) if s == "little_endian") {
                big = matches!(info.get(v), Obj::Bool(false));
            }
        }
    }
    let (doc, at) = pickle::read_at(bytes, at, allowed, WHAT)?;
    let (keys, mut at) = pickle::read_at(bytes, at, &[], WHAT)?;
    let Obj::List(key_ids) = keys.get(keys.root) else {
        bail!(
            Runtime,
            "{WHAT}: the legacy file's storage keys are not a list"
        );
    };
    // each storage's element size, from the persistent ids that name it
    let mut sizes: HashMap<String, usize> = HashMap::new();
    for o in &doc.objs {
        if let Obj::Persistent(pid) = o {
            if let (Some(key), Ok((dtype, _, _))) =
                (storage_key(&doc, *pid), storage_of(&doc, *pid))
            {
                sizes.insert(key, dtype.size());
            }
        }
    }
    let mut data: HashMap<String, &[u8]> = HashMap::new();
    for &k in key_ids {
        let Obj::Str(key) = keys.get(k) else {
            bail!(Runtime, "{WHAT}: a legacy storage key that is not a str");
        };
        let n = bytes
            .get(at..at + 8)
            .ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!("{WHAT}: the legacy file ends before storage {key}"),
                )
            })?
            .try_into()
            .map(|b: [u8; 8]| {
                if big {
                    u64::from_be_bytes(b)
                } else {
                    u64::from_le_bytes(b)
                }
            })
            .unwrap_or(0);
        let esize = *sizes.get(key.as_str()).ok_or_else(|| {
            ferrotorch_core::Error::new(
                ferrotorch_core::ErrorKind::Runtime,
                format!("{WHAT}: storage {key} is listed but no tensor names it"),
            )
        })?;
        let len = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(esize))
            .filter(|&l| at + 8 + l <= bytes.len())
            .ok_or_else(|| {
                ferrotorch_core::Error::new(
                    ferrotorch_core::ErrorKind::Runtime,
                    format!(
                        "{WHAT}: storage {key} declares {n} elements, more than the file holds"
                    ),
                )
            })?;
        data.insert(key.clone(), &bytes[at + 8..at + 8 + len]);
        at += 8 + len;
    }
    build(doc, |key| data.get(key).copied(), big)
}
