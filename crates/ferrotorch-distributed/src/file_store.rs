//! `torch.distributed.FileStore`: a store in a file every rank can open
//! (a shared file system), for `init_method="file:///path"`.
//!
//! # Note [FileStore's log]
//! The file is an append-only log of records — `u32` key length, key,
//! `u32` value length (`u32::MAX`: the key was deleted), value, all
//! little-endian — written under an exclusive `flock` and read under a
//! shared one; the store's state is the log replayed. Records are
//! validated as they are read (every length against what is left of the
//! file), so a truncated or foreign file is an error naming the offset,
//! never a huge allocation. torch's own FileStore file is not this format
//! (each library reads its own files).

use crate::store::{add_to, compare_set_in, Store, DEFAULT_TIMEOUT};
use ferrotorch_core::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

const DELETED: u32 = u32::MAX;

/// `FileStore(file_name, world_size)`.
pub struct FileStore {
    path: PathBuf,
    file: Mutex<File>,
    timeout: Mutex<Duration>,
}

/// An `flock` held on a file until dropped.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn new(f: &'a File, exclusive: bool, path: &Path) -> Result<Locked<'a>> {
        let op = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        // SAFETY: a valid descriptor for the file's lifetime.
        if unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
            return Err(err(format!(
                "FileStore {}: flock: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(Locked(f))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    buf.get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// The log replayed (Note [FileStore's log]).
fn replay(buf: &[u8], path: &Path) -> Result<HashMap<String, Vec<u8>>> {
    let mut map = HashMap::new();
    let mut at = 0;
    let bad = |at: usize| {
        err(format!(
            "FileStore {}: a malformed record at byte {at} of {} (not a file this store wrote, or truncated)",
            path.display(),
            buf.len()
        ))
    };
    while at < buf.len() {
        let klen = u32_at(buf, at).ok_or_else(|| bad(at))? as usize;
        let key = buf.get(at + 4..at + 4 + klen).ok_or_else(|| bad(at))?;
        let key = std::str::from_utf8(key).map_err(|_| bad(at))?.to_string();
        let vat = at + 4 + klen;
        let vlen = u32_at(buf, vat).ok_or_else(|| bad(at))?;
        if vlen == DELETED {
            map.remove(&key);
            at = vat + 4;
            continue;
        }
        let value = buf
            .get(vat + 4..vat + 4 + vlen as usize)
            .ok_or_else(|| bad(at))?;
        map.insert(key, value.to_vec());
        at = vat + 4 + vlen as usize;
    }
    Ok(map)
}

fn record(key: &str, value: Option<&[u8]>) -> Result<Vec<u8>> {
    let too_big = |what: &str| err(format!("FileStore: a {what} over 4 GiB"));
    let mut r = Vec::new();
    r.extend_from_slice(
        &u32::try_from(key.len())
            .map_err(|_| too_big("key"))?
            .to_le_bytes(),
    );
    r.extend_from_slice(key.as_bytes());
    match value {
        None => r.extend_from_slice(&DELETED.to_le_bytes()),
        Some(v) => {
            let n = u32::try_from(v.len())
                .ok()
                .filter(|&n| n != DELETED)
                .ok_or_else(|| too_big("value"))?;
            r.extend_from_slice(&n.to_le_bytes());
            r.extend_from_slice(v);
        }
    }
    Ok(r)
}

impl FileStore {
    /// Open (or create) the store at `path`. `world_size` is torch's
    /// argument; the file is shared by whoever opens it.
    pub fn new(path: impl AsRef<Path>, world_size: Option<usize>) -> Result<FileStore> {
        let _ = world_size;
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| err(format!("FileStore {}: {e}", path.display())))?;
        Ok(FileStore {
            path,
            file: Mutex::new(file),
            timeout: Mutex::new(DEFAULT_TIMEOUT),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, e: std::io::Error) -> Error {
        err(format!("FileStore {}: {e}", self.path.display()))
    }

    /// Run `f` on the replayed state under the file's lock; the records it
    /// returns are appended before the lock is released.
    fn with_state<R>(
        &self,
        exclusive: bool,
        f: impl FnOnce(&mut HashMap<String, Vec<u8>>) -> Result<(R, Vec<u8>)>,
    ) -> Result<R> {
        let guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let handle: &File = &guard;
        let _lock = Locked::new(handle, exclusive, &self.path)?;
        let mut file = handle;
        let mut buf = Vec::new();
        file.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        file.read_to_end(&mut buf).map_err(|e| self.io(e))?;
        let mut map = replay(&buf, &self.path)?;
        let (r, append) = f(&mut map)?;
        if !append.is_empty() {
            file.write_all(&append).map_err(|e| self.io(e))?;
            file.flush().map_err(|e| self.io(e))?;
        }
        Ok(r)
    }

    fn wait_until<R>(
        &self,
        timeout: Duration,
        what: &str,
        mut f: impl FnMut(&HashMap<String, Vec<u8>>) -> Option<R>,
    ) -> Result<R> {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(r) = self.with_state(false, |m| Ok((f(m), Vec::new())))? {
                return Ok(r);
            }
            if Instant::now() >= deadline {
                return Err(err(format!(
                    "FileStore {}: wait timed out after {} ms for {what}",
                    self.path.display(),
                    timeout.as_millis()
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

impl Store for FileStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let r = record(key, Some(value))?;
        self.with_state(true, |_| Ok(((), r)))
    }

    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.wait_until(self.timeout(), &format!("key {key:?}"), |m| {
            m.get(key).cloned()
        })
    }

    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.with_state(true, |m| {
            let new = add_to(m, key, amount)?;
            Ok((new, record(key, Some(&m[key]))?))
        })
    }

    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        self.with_state(true, |m| {
            let before = m.get(key).cloned();
            let now = compare_set_in(m, key, expected, desired);
            let changed = before.as_deref() != Some(now.as_slice());
            Ok((
                now.clone(),
                if changed {
                    record(key, Some(&now))?
                } else {
                    Vec::new()
                },
            ))
        })
    }

    fn wait(&self, keys: &[String], timeout: Option<Duration>) -> Result<()> {
        self.wait_until(
            timeout.unwrap_or_else(|| self.timeout()),
            &format!("keys {keys:?}"),
            |m| keys.iter().all(|k| m.contains_key(k)).then_some(()),
        )
    }

    fn check(&self, keys: &[String]) -> Result<bool> {
        self.with_state(false, |m| {
            Ok((keys.iter().all(|k| m.contains_key(k)), Vec::new()))
        })
    }

    fn delete_key(&self, key: &str) -> Result<bool> {
        self.with_state(true, |m| {
            let had = m.remove(key).is_some();
            Ok((had, if had { record(key, None)? } else { Vec::new() }))
        })
    }

    fn num_keys(&self) -> Result<i64> {
        self.with_state(false, |m| Ok((m.len() as i64, Vec::new())))
    }

    fn timeout(&self) -> Duration {
        *self.timeout.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_timeout(&self, timeout: Duration) {
        *self.timeout.lock().unwrap_or_else(|p| p.into_inner()) = timeout;
    }
}
