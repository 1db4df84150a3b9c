//! The zip container of saved programs and of PyTorch's checkpoints:
//! stored (uncompressed) entries, written and read here, every offset and
//! length checked before use.
//!
//! # Note [Program archives]
//! A saved program is a zip, as PyTorch's archives are, so `unzip -l`
//! lists it and later parts (custom class state) get entries of their
//! own. Entries are stored, not compressed, and each entry's data starts
//! on a 64-byte boundary (padding in the local header's extra field, as
//! PyTorch's writer does), so tensor data can be read in place. Reading
//! trusts nothing: the end record and every central-directory entry are
//! bounds-checked against the file, an entry's local header must agree
//! with its central one, entries may not overlap the directory or repeat
//! a name, only the stored method is accepted, and each entry's CRC-32 is
//! verified, so a truncated or corrupted file is an error naming the
//! entry. Files and entries are limited to 4 GiB (no ZIP64 yet).

use ferrotorch_core::{ensure, Error, ErrorKind, Result};

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// Where each entry's data is aligned.
const ALIGN: usize = 64;
/// More entries than an archive has (a checkpoint has one per storage): a
/// bound checked before any is read, besides the directory's own size.
const MAX_ENTRIES: usize = 1 << 20;
/// The extra-field id of alignment padding (PyTorch's writer uses the same).
const PAD_ID: u16 = 0x4246;

fn bad(what: &str, msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, format!("{what}: {}", msg.into()))
}

/// CRC-32 (IEEE, reflected), as zip stores it.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Where the parts of an archive go: the caller writes each entry's bytes
/// into [`Layout::data_range`], then [`Layout::finish`] adds the headers.
pub struct Layout {
    names: Vec<String>,
    /// (local header offset, data offset, data length) per entry.
    spans: Vec<(usize, usize, usize)>,
    central_at: usize,
    len: usize,
}

fn padding(at_data: usize) -> usize {
    let mut pad = (ALIGN - at_data % ALIGN) % ALIGN;
    // an extra field holds at least its 4-byte id and size
    if pad != 0 && pad < 4 {
        pad += ALIGN;
    }
    pad
}

fn central_len(name: &str) -> usize {
    46 + name.len()
}

impl Layout {
    /// Lay out entries `(name, length)` in order.
    pub fn new(entries: &[(&str, usize)]) -> Result<Layout> {
        let mut at = 0usize;
        let mut spans = Vec::with_capacity(entries.len());
        for (name, len) in entries {
            let header = at;
            let data = header + 30 + name.len();
            let data = data + padding(data);
            spans.push((header, data, *len));
            at = data + len;
        }
        let central_at = at;
        let len = central_at + entries.iter().map(|(n, _)| central_len(n)).sum::<usize>() + 22;
        ensure!(
            len <= u32::MAX as usize,
            Runtime,
            "jit.save: the program is {len} bytes; saved programs are limited to 4 GiB"
        );
        Ok(Layout {
            names: entries.iter().map(|(n, _)| n.to_string()).collect(),
            spans,
            central_at,
            len,
        })
    }

    /// The archive's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the archive is empty (never: it has an end record).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Where entry `i`'s data goes in the archive.
    pub fn data_range(&self, i: usize) -> std::ops::Range<usize> {
        let (_, data, len) = self.spans[i];
        data..data + len
    }

    /// Write the headers and directory around data already written into
    /// `out` (exactly [`Layout::len`] bytes) at each [`Layout::data_range`].
    pub fn finish(&self, out: &mut [u8]) {
        let mut central = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            let (header, data, len) = self.spans[i];
            let crc = crc32(&out[data..data + len]);
            let extra = data - header - 30 - name.len();
            let mut h = Vec::with_capacity(30 + name.len() + extra);
            h.extend(LOCAL.to_le_bytes());
            h.extend(20u16.to_le_bytes()); // version needed: 2.0
            h.extend(0u16.to_le_bytes()); // flags
            h.extend(0u16.to_le_bytes()); // stored
            h.extend(0u16.to_le_bytes()); // time
            h.extend(0x21u16.to_le_bytes()); // date: 1980-01-01
            h.extend(crc.to_le_bytes());
            h.extend((len as u32).to_le_bytes());
            h.extend((len as u32).to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend((extra as u16).to_le_bytes());
            h.extend(name.as_bytes());
            if extra > 0 {
                h.extend(PAD_ID.to_le_bytes());
                h.extend(((extra - 4) as u16).to_le_bytes());
                h.resize(30 + name.len() + extra, 0);
            }
            out[header..data].copy_from_slice(&h);
            central.extend(CENTRAL.to_le_bytes());
            central.extend(20u16.to_le_bytes()); // made by
            central.extend(20u16.to_le_bytes()); // needed
            central.extend(0u16.to_le_bytes());
            central.extend(0u16.to_le_bytes());
            central.extend(0u16.to_le_bytes());
            central.extend(0x21u16.to_le_bytes());
            central.extend(crc.to_le_bytes());
            central.extend((len as u32).to_le_bytes());
            central.extend((len as u32).to_le_bytes());
            central.extend((name.len() as u16).to_le_bytes());
            central.extend(0u16.to_le_bytes()); // extra
            central.extend(0u16.to_le_bytes()); // comment
            central.extend(0u16.to_le_bytes()); // disk
            central.extend(0u16.to_le_bytes()); // internal attributes
            central.extend(0u32.to_le_bytes()); // external attributes
            central.extend((header as u32).to_le_bytes());
            central.extend(name.as_bytes());
        }
        let n = self.names.len() as u16;
        central.extend(END.to_le_bytes());
        central.extend(0u16.to_le_bytes());
        central.extend(0u16.to_le_bytes());
        central.extend(n.to_le_bytes());
        central.extend(n.to_le_bytes());
        central.extend(((self.len - 22 - self.central_at) as u32).to_le_bytes());
        central.extend((self.central_at as u32).to_le_bytes());
        central.extend(0u16.to_le_bytes());
        out[self.central_at..].copy_from_slice(&central);
    }
}

/// Whether `bytes` starts like a zip archive.
pub fn is_zip(bytes: &[u8]) -> bool {
    u32_at(bytes, 0) == Some(LOCAL)
}

/// The entries of an archive, by name, each its checked data (errors
/// begin with `jit.load:`).
pub fn entries(b: &[u8]) -> Result<Vec<(String, &[u8])>> {
    entries_for(b, "jit.load")
}

/// [`entries`], errors beginning with `what` (`torch.load`).
pub fn entries_for<'a>(b: &'a [u8], what: &str) -> Result<Vec<(String, &'a [u8])>> {
    let dir = directory(b, what)?;
    let dir_at = dir.first().map_or(0, |d| d.dir_at);
    let mut out: Vec<(String, &[u8])> = Vec::with_capacity(dir.len());
    for d in dir {
        let Dir {
            name,
            method,
            crc,
            csize,
            size,
            header,
            ..
        } = d;
        let nlen = name.len();
        ensure!(
            method == 0 && csize == size,
            Runtime,
            "{what}: entry {name:?} is compressed (method {method}); programs store entries uncompressed"
        );
        ensure!(
            !out.iter().any(|(n, _)| *n == name),
            Runtime,
            "{what}: the archive has two entries named {name:?}"
        );
        // the local header must agree with the directory
        ensure!(
            header.checked_add(30).is_some_and(|e| e <= dir_at)
                && u32_at(b, header) == Some(LOCAL)
                && u16_at(b, header + 8) == Some(0)
                && usize::from(u16_at(b, header + 26).unwrap_or(0)) == nlen
                && b.get(header + 30..header + 30 + nlen) == Some(name.as_bytes()),
            Runtime,
            "{what}: the local header of entry {name:?} is damaged or disagrees with the directory"
        );
        let lextra = usize::from(u16_at(b, header + 28).unwrap_or(0));
        let data = header + 30 + nlen + lextra;
        ensure!(
            data.checked_add(size).is_some_and(|e| e <= dir_at),
            Runtime,
            "{what}: entry {name:?} ({size} bytes) runs past the end of the data"
        );
        let bytes = &b[data..data + size];
        ensure!(
            crc32(bytes) == crc,
            Runtime,
            "{what}: entry {name:?} is corrupted (its CRC-32 does not match)"
        );
        out.push((name, bytes));
    }
    Ok(out)
}

/// The names of an archive's entries, from its directory alone (what is
/// in a file before any entry is read).
pub fn names_for(b: &[u8], what: &str) -> Result<Vec<String>> {
    Ok(directory(b, what)?.into_iter().map(|d| d.name).collect())
}

/// One entry of the central directory.
struct Dir {
    name: String,
    method: u16,
    crc: u32,
    csize: usize,
    size: usize,
    header: usize,
    dir_at: usize,
}

/// The central directory, every entry bounds-checked against it.
fn directory(b: &[u8], what: &str) -> Result<Vec<Dir>> {
    // the end record: its last 22 bytes when there is no comment (ours);
    // otherwise searched for within the longest comment
    let lo = b.len().saturating_sub(22 + u16::MAX as usize);
    let end = (lo..=b.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(b, i) == Some(END))
        .ok_or_else(|| {
            bad(
                what,
                "not a complete zip archive (no end record; truncated?)",
            )
        })?;
    let count = usize::from(u16_at(b, end + 10).unwrap_or(0));
    let dir_len = u32_at(b, end + 12).unwrap_or(0) as usize;
    let dir_at = u32_at(b, end + 16).unwrap_or(0) as usize;
    ensure!(
        count <= MAX_ENTRIES,
        Runtime,
        "{what}: the archive lists {count} entries (at most {MAX_ENTRIES})"
    );
    ensure!(
        dir_at.checked_add(dir_len).is_some_and(|e| e <= end),
        Runtime,
        "{what}: the archive's directory lies outside the file"
    );
    ensure!(
        count.saturating_mul(46) <= dir_len,
        Runtime,
        "{what}: the archive lists {count} entries in a directory of {dir_len} bytes"
    );
    let mut out = Vec::with_capacity(count);
    let mut at = dir_at;
    for k in 0..count {
        let field = |off: usize| u32_at(b, at + off).map(|v| v as usize);
        ensure!(
            at + 46 <= dir_at + dir_len && u32_at(b, at) == Some(CENTRAL),
            Runtime,
            "{what}: directory entry {k} is damaged"
        );
        let nlen = usize::from(u16_at(b, at + 28).unwrap_or(0));
        let elen = usize::from(u16_at(b, at + 30).unwrap_or(0));
        let clen = usize::from(u16_at(b, at + 32).unwrap_or(0));
        let next = at + 46 + nlen + elen + clen;
        ensure!(
            next <= dir_at + dir_len,
            Runtime,
            "{what}: directory entry {k} runs past the directory"
        );
        let name = std::str::from_utf8(&b[at + 46..at + 46 + nlen])
            .map_err(|_| {
                bad(
                    what,
                    format!("directory entry {k} has a name that is not UTF-8"),
                )
            })?
            .to_string();
        out.push(Dir {
            name,
            method: u16_at(b, at + 10).unwrap_or(u16::MAX),
            crc: u32_at(b, at + 16).unwrap_or(0),
            csize: field(20).unwrap_or(0),
            size: field(24).unwrap_or(0),
            header: field(42).unwrap_or(usize::MAX),
            dir_at,
        });
        at = next;
    }
    Ok(out)
}

/// An archive of `entries` (name, bytes), in order.
pub fn write(entries: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let sizes: Vec<(&str, usize)> = entries.iter().map(|(n, d)| (*n, d.len())).collect();
    let lay = Layout::new(&sizes)?;
    let mut out = vec![0u8; lay.len()];
    for (i, (_, d)) in entries.iter().enumerate() {
        out[lay.data_range(i)].copy_from_slice(d);
    }
    lay.finish(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let lay = Layout::new(
            &entries
                .iter()
                .map(|(n, d)| (*n, d.len()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        for i in 0..entries.len() {
            assert_eq!(lay.data_range(i).start % ALIGN, 0);
        }
        write(entries).unwrap()
    }

    #[test]
    fn round_trips_and_checks() {
        let a = archive(&[("archive/version", b"2\n"), ("archive/x.bin", &[7u8; 100])]);
        assert!(is_zip(&a));
        let e = entries(&a).unwrap();
        assert_eq!(e[0], ("archive/version".to_string(), &b"2\n"[..]));
        assert_eq!(e[1].1, &[7u8; 100][..]);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926); // the standard check value
                                                      // a flipped data byte fails the CRC, naming the entry
        let mut c = a.clone();
        let at = Layout::new(&[("archive/version", 2), ("archive/x.bin", 100)])
            .unwrap()
            .data_range(1)
            .start;
        c[at + 5] ^= 1;
        let err = entries(&c).unwrap_err().to_string();
        assert!(err.contains("\"archive/x.bin\" is corrupted"), "{err}");
        // every truncation is an error, never a panic
        for n in 0..a.len() {
            assert!(entries(&a[..n]).is_err(), "{n}");
        }
    }
}
