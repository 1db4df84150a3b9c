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
//! entry.
//!
//! PyTorch's own archives may also hold deflated entries (the code of a
//! TorchScript archive) and ZIP64 records (files or entries past 4 GiB, or
//! a writer that always uses them): both are read. A deflated entry is
//! inflated into a buffer of exactly its declared size (itself bounded by
//! the file: no entry inflates past [`MAX_RATIO`] times its compressed
//! bytes), and its CRC-32 is checked on the inflated bytes. What this
//! module writes stays stored and under 4 GiB.

use ferrotorch_core::{ensure, Error, ErrorKind, Result};
use std::borrow::Cow;

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
const END64: u32 = 0x0606_4b50;
const LOCATOR64: u32 = 0x0706_4b50;
/// The ZIP64 extra field's id.
const ZIP64_ID: u16 = 0x0001;
/// The method numbers read: stored and deflated.
const STORED: u16 = 0;
const DEFLATED: u16 = 8;
/// How many times its compressed size an entry may inflate to (deflate's
/// own limit is about 1032): a bound on the memory a small file can ask for.
const MAX_RATIO: usize = 1100;
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

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
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
pub fn entries(b: &[u8]) -> Result<Vec<(String, Cow<'_, [u8]>)>> {
    entries_for(b, "jit.load")
}

/// [`entries`], errors beginning with `what` (`torch.load`): a stored
/// entry borrows the file's bytes, a deflated one is inflated.
pub fn entries_for<'a>(b: &'a [u8], what: &str) -> Result<Vec<(String, Cow<'a, [u8]>)>> {
    let dir = directory(b, what)?;
    let dir_at = dir.first().map_or(0, |d| d.dir_at);
    let mut out: Vec<(String, Cow<'a, [u8]>)> = Vec::with_capacity(dir.len());
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
            (method == STORED && csize == size) || method == DEFLATED,
            Runtime,
            "{what}: entry {name:?} is compressed with method {method}; only stored (0) and deflated (8) entries are read"
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
                && u16_at(b, header + 8) == Some(method)
                && usize::from(u16_at(b, header + 26).unwrap_or(0)) == nlen
                && b.get(header + 30..header + 30 + nlen) == Some(name.as_bytes()),
            Runtime,
            "{what}: the local header of entry {name:?} is damaged or disagrees with the directory"
        );
        let lextra = usize::from(u16_at(b, header + 28).unwrap_or(0));
        let data = header + 30 + nlen + lextra;
        ensure!(
            data.checked_add(csize).is_some_and(|e| e <= dir_at),
            Runtime,
            "{what}: entry {name:?} ({csize} bytes) runs past the end of the data"
        );
        let bytes: Cow<'a, [u8]> = if method == STORED {
            Cow::Borrowed(&b[data..data + size])
        } else {
            Cow::Owned(inflate(&b[data..data + csize], size, &name, what)?)
        };
        ensure!(
            crc32(&bytes) == crc,
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
    let mut count = usize::from(u16_at(b, end + 10).unwrap_or(0));
    let mut dir_len = u32_at(b, end + 12).unwrap_or(0) as usize;
    let mut dir_at = u32_at(b, end + 16).unwrap_or(0) as usize;
    let mut end = end;
    if end >= 20 && u32_at(b, end - 20) == Some(LOCATOR64) {
        // ZIP64: the locator just before the end record names the ZIP64
        // end record, whose fields replace the saturated ones
        let at64 = u64_at(b, end - 12)
            .and_then(|v| usize::try_from(v).ok())
            .filter(|&a| a.checked_add(56).is_some_and(|e| e <= end - 20))
            .ok_or_else(|| bad(what, "the archive's ZIP64 locator points outside the file"))?;
        ensure!(
            u32_at(b, at64) == Some(END64),
            Runtime,
            "{what}: the archive's ZIP64 end record is damaged"
        );
        let big = |off: usize| u64_at(b, at64 + off).and_then(|v| usize::try_from(v).ok());
        count = big(32).unwrap_or(usize::MAX);
        dir_len = big(40).unwrap_or(usize::MAX);
        dir_at = big(48).unwrap_or(usize::MAX);
        end = at64;
    }
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
        let mut d = Dir {
            name,
            method: u16_at(b, at + 10).unwrap_or(u16::MAX),
            crc: u32_at(b, at + 16).unwrap_or(0),
            csize: field(20).unwrap_or(0),
            size: field(24).unwrap_or(0),
            header: field(42).unwrap_or(usize::MAX),
            dir_at,
        };
        zip64_fields(&mut d, &b[at + 46 + nlen..at + 46 + nlen + elen], what)?;
        out.push(d);
        at = next;
    }
    Ok(out)
}

/// Replace `d`'s saturated sizes and offset (`0xFFFFFFFF`) with the
/// values of its ZIP64 extra field, which holds exactly those, in the
/// order size, compressed size, header offset.
fn zip64_fields(d: &mut Dir, extra: &[u8], what: &str) -> Result<()> {
    const SAT: usize = u32::MAX as usize;
    if d.size != SAT && d.csize != SAT && d.header != SAT {
        return Ok(());
    }
    let mut at = 0;
    while at + 4 <= extra.len() {
        let id = u16_at(extra, at).unwrap_or(0);
        let len = usize::from(u16_at(extra, at + 2).unwrap_or(0));
        let body = extra.get(at + 4..at + 4 + len).ok_or_else(|| {
            bad(
                what,
                format!("entry {:?} has a damaged extra field", d.name),
            )
        })?;
        if id == ZIP64_ID {
            let mut k = 0;
            let mut next = |name: &str| -> Result<usize> {
                let v = u64_at(body, k)
                    .and_then(|v| usize::try_from(v).ok())
                    .ok_or_else(|| {
                        bad(
                            what,
                            format!("entry {:?}'s ZIP64 field lacks its {name}", d.name),
                        )
                    })?;
                k += 8;
                Ok(v)
            };
            let size = if d.size == SAT {
                Some(next("size")?)
            } else {
                None
            };
            let csize = if d.csize == SAT {
                Some(next("compressed size")?)
            } else {
                None
            };
            let header = if d.header == SAT {
                Some(next("offset")?)
            } else {
                None
            };
            d.size = size.unwrap_or(d.size);
            d.csize = csize.unwrap_or(d.csize);
            d.header = header.unwrap_or(d.header);
            return Ok(());
        }
        at += 4 + len;
    }
    Err(bad(
        what,
        format!("entry {:?} has saturated sizes but no ZIP64 field", d.name),
    ))
}

/// Inflate a deflated entry into exactly `size` bytes, `size` bounded by
/// the compressed length first ([`MAX_RATIO`]).
fn inflate(data: &[u8], size: usize, name: &str, what: &str) -> Result<Vec<u8>> {
    ensure!(
        size <= data.len().saturating_mul(MAX_RATIO).max(64),
        Runtime,
        "{what}: entry {name:?} declares {size} bytes from {} compressed (more than deflate can give)",
        data.len()
    );
    let out = miniz_oxide::inflate::decompress_to_vec_with_limit(data, size).map_err(|e| {
        bad(
            what,
            format!("entry {name:?} does not inflate ({:?})", e.status),
        )
    })?;
    ensure!(
        out.len() == size,
        Runtime,
        "{what}: entry {name:?} inflates to {} bytes, not the {size} its directory declares",
        out.len()
    );
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
        assert_eq!(e[0].0, "archive/version");
        assert_eq!(&*e[0].1, &b"2\n"[..]);
        assert_eq!(&*e[1].1, &[7u8; 100][..]);
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

    /// A one-entry archive as zip writers other than ours lay it out:
    /// deflated, and with ZIP64 records (saturated sizes and offset in the
    /// directory, the real ones in its ZIP64 field, a ZIP64 end record).
    fn foreign(name: &str, data: &[u8], deflate: bool, zip64: bool) -> Vec<u8> {
        let body = if deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.to_vec()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let crc = crc32(data);
        let sat = |v: usize| if zip64 { u32::MAX } else { v as u32 };
        let mut out = Vec::new();
        out.extend(LOCAL.to_le_bytes());
        out.extend(45u16.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(method.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend(crc.to_le_bytes());
        out.extend(sat(body.len()).to_le_bytes());
        out.extend(sat(data.len()).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&body);
        let dir_at = out.len();
        let mut extra = Vec::new();
        if zip64 {
            extra.extend(ZIP64_ID.to_le_bytes());
            extra.extend(24u16.to_le_bytes());
            extra.extend((data.len() as u64).to_le_bytes());
            extra.extend((body.len() as u64).to_le_bytes());
            extra.extend(0u64.to_le_bytes());
        }
        out.extend(CENTRAL.to_le_bytes());
        out.extend(45u16.to_le_bytes());
        out.extend(45u16.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(method.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend(crc.to_le_bytes());
        out.extend(sat(body.len()).to_le_bytes());
        out.extend(sat(data.len()).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        out.extend((extra.len() as u16).to_le_bytes());
        out.extend([0u8; 6]); // comment, disk, internal attributes
        out.extend(0u32.to_le_bytes());
        out.extend(sat(0).to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&extra);
        let dir_len = out.len() - dir_at;
        if zip64 {
            let end64 = out.len();
            out.extend(END64.to_le_bytes());
            out.extend(44u64.to_le_bytes());
            out.extend(45u16.to_le_bytes());
            out.extend(45u16.to_le_bytes());
            out.extend([0u8; 8]);
            out.extend(1u64.to_le_bytes());
            out.extend(1u64.to_le_bytes());
            out.extend((dir_len as u64).to_le_bytes());
            out.extend((dir_at as u64).to_le_bytes());
            out.extend(LOCATOR64.to_le_bytes());
            out.extend(0u32.to_le_bytes());
            out.extend((end64 as u64).to_le_bytes());
            out.extend(1u32.to_le_bytes());
        }
        out.extend(END.to_le_bytes());
        out.extend([0u8; 4]);
        let n: u16 = if zip64 { u16::MAX } else { 1 };
        out.extend(n.to_le_bytes());
        out.extend(n.to_le_bytes());
        out.extend(sat(dir_len).to_le_bytes());
        out.extend(sat(dir_at).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    #[test]
    fn reads_deflated_and_zip64_entries() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        for (deflate, zip64) in [(true, false), (false, true), (true, true)] {
            let a = foreign("m/code/__torch__.py", &data, deflate, zip64);
            let e = entries(&a).unwrap();
            assert_eq!(e.len(), 1, "{deflate} {zip64}");
            assert_eq!(e[0].0, "m/code/__torch__.py");
            assert_eq!(&*e[0].1, &data[..], "{deflate} {zip64}");
            for n in 0..a.len() {
                assert!(entries(&a[..n]).is_err(), "{deflate} {zip64} {n}");
            }
        }
        // a damaged deflate stream, or one declaring more than it holds
        let mut a = foreign("x", &data, true, false);
        a[40] ^= 0xff;
        assert!(entries(&a).is_err());
        let mut a = foreign("x", &data, true, false);
        let dir = (0..a.len())
            .rev()
            .find(|&i| u32_at(&a, i) == Some(CENTRAL))
            .unwrap();
        a[dir + 24..dir + 28].copy_from_slice(&(1u32 << 31).to_le_bytes());
        let err = entries(&a).unwrap_err().to_string();
        assert!(err.contains("more than deflate can give"), "{err}");
    }
}
