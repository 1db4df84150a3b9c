//! Key-value stores for rendezvous (`torch.distributed.Store`): ranks
//! publish their transport addresses and find each other's. `HashStore`
//! (one process), `TCPStore` (a server on rank 0's host at
//! `MASTER_ADDR:MASTER_PORT`, clients on every rank), `PrefixStore`
//! (a namespace inside another). This is rendezvous only: the collectives
//! themselves run on Gloo or MPI.
//!
//! # Note [TCPStore protocol]
//! A request is one byte of op, then length-prefixed (u32, little-endian)
//! keys and values; a reply is a status byte and a length-prefixed value.
//! `get` and `wait` block on the server (a condition variable, bounded by
//! the store's timeout), so a rank that waits for a key another has not
//! set yet costs no polling; every length is checked against a bound
//! before anything is allocated.

use ferrotorch_core::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// torch's default store timeout (300 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest key or value a TCPStore moves (rendezvous data is small).
const MAX_VALUE: usize = 64 << 20;

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

/// `torch.distributed.Store`.
pub trait Store: Send + Sync {
    /// Set `key` to `value`.
    fn set(&self, key: &str, value: &[u8]) -> Result<()>;
    /// The value of `key`, waiting up to the timeout for it to be set.
    fn get(&self, key: &str) -> Result<Vec<u8>>;
    /// Add `amount` to the integer at `key` (0 when unset); the new value.
    fn add(&self, key: &str, amount: i64) -> Result<i64>;
    /// Set `key` to `desired` if it holds `expected` (or is unset and
    /// `expected` is empty); the value it holds afterwards.
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>>;
    /// Wait until every key is set, up to `timeout` (the store's when
    /// `None`).
    fn wait(&self, keys: &[String], timeout: Option<Duration>) -> Result<()>;
    /// Whether every key is set now.
    fn check(&self, keys: &[String]) -> Result<bool>;
    /// Remove `key`; whether it was there.
    fn delete_key(&self, key: &str) -> Result<bool>;
    /// How many keys are set.
    fn num_keys(&self) -> Result<i64>;
    /// The timeout of blocking calls.
    fn timeout(&self) -> Duration;
    /// Change it.
    fn set_timeout(&self, timeout: Duration);
}

/// The state a `HashStore` and a TCPStore server share: keys and a
/// condition variable signalled on every write.
#[derive(Default)]
struct Table {
    map: Mutex<HashMap<String, Vec<u8>>>,
    changed: Condvar,
}

impl Table {
    fn set(&self, key: &str, value: &[u8]) {
        self.map
            .lock()
            .unwrap()
            .insert(key.to_string(), value.to_vec());
        self.changed.notify_all();
    }

    fn wait_for(&self, keys: &[String], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut map = self.map.lock().unwrap();
        loop {
            if let Some(missing) = keys.iter().find(|k| !map.contains_key(*k)) {
                let now = Instant::now();
                if now >= deadline {
                    return Err(err(format!(
                        "Store: wait timed out after {} ms for key {missing:?}",
                        timeout.as_millis()
                    )));
                }
                map = self.changed.wait_timeout(map, deadline - now).unwrap().0;
            } else {
                return Ok(());
            }
        }
    }

    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.wait_for(&[key.to_string()], timeout)?;
        self.map
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .ok_or_else(|| err(format!("Store.get: key {key:?} was deleted while waiting")))
    }

    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        let new = add_to(&mut self.map.lock().unwrap(), key, amount)?;
        self.changed.notify_all();
        Ok(new)
    }

    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Vec<u8> {
        let out = compare_set_in(&mut self.map.lock().unwrap(), key, expected, desired);
        self.changed.notify_all();
        out
    }
}

/// torch's `add` on a key map: the key's decimal integer (0 when absent)
/// plus `amount`, stored back as text.
pub(crate) fn add_to(map: &mut HashMap<String, Vec<u8>>, key: &str, amount: i64) -> Result<i64> {
    let now = match map.get(key) {
        None => 0,
        Some(v) => std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| err(format!("Store.add: key {key:?} does not hold an integer")))?,
    };
    let new = now
        .checked_add(amount)
        .ok_or_else(|| err(format!("Store.add: {now} + {amount} overflows")))?;
    map.insert(key.to_string(), new.to_string().into_bytes());
    Ok(new)
}

/// torch's `compare_set` on a key map: `desired` replaces the value when
/// it equals `expected` (or the key is absent and `expected` empty); the
/// value now held is returned.
pub(crate) fn compare_set_in(
    map: &mut HashMap<String, Vec<u8>>,
    key: &str,
    expected: &[u8],
    desired: &[u8],
) -> Vec<u8> {
    match map.get(key) {
        None if expected.is_empty() => {
            map.insert(key.to_string(), desired.to_vec());
            desired.to_vec()
        }
        None => expected.to_vec(),
        Some(v) if v == expected => {
            map.insert(key.to_string(), desired.to_vec());
            desired.to_vec()
        }
        Some(v) => v.clone(),
    }
}

/// `torch.distributed.HashStore`: keys in this process's memory (threads
/// as ranks, tests).
pub struct HashStore {
    table: Table,
    timeout: Mutex<Duration>,
}

impl Default for HashStore {
    fn default() -> Self {
        HashStore {
            table: Table::default(),
            timeout: Mutex::new(DEFAULT_TIMEOUT),
        }
    }
}

impl HashStore {
    /// An empty store.
    pub fn new() -> HashStore {
        HashStore::default()
    }
}

impl Store for HashStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.table.set(key, value);
        Ok(())
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.table.get(key, self.timeout())
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.table.add(key, amount)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        Ok(self.table.compare_set(key, expected, desired))
    }
    fn wait(&self, keys: &[String], timeout: Option<Duration>) -> Result<()> {
        self.table
            .wait_for(keys, timeout.unwrap_or_else(|| self.timeout()))
    }
    fn check(&self, keys: &[String]) -> Result<bool> {
        let map = self.table.map.lock().unwrap();
        Ok(keys.iter().all(|k| map.contains_key(k)))
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        Ok(self.table.map.lock().unwrap().remove(key).is_some())
    }
    fn num_keys(&self) -> Result<i64> {
        Ok(self.table.map.lock().unwrap().len() as i64)
    }
    fn timeout(&self) -> Duration {
        *self.timeout.lock().unwrap()
    }
    fn set_timeout(&self, timeout: Duration) {
        *self.timeout.lock().unwrap() = timeout;
    }
}

/// `torch.distributed.PrefixStore`: every key of `inner` under `prefix/`.
pub struct PrefixStore {
    prefix: String,
    inner: Arc<dyn Store>,
}

impl PrefixStore {
    /// `inner`'s keys under `prefix`.
    pub fn new(prefix: &str, inner: Arc<dyn Store>) -> PrefixStore {
        PrefixStore {
            prefix: prefix.to_string(),
            inner,
        }
    }

    fn key(&self, k: &str) -> String {
        format!("{}/{k}", self.prefix)
    }

    fn keys(&self, ks: &[String]) -> Vec<String> {
        ks.iter().map(|k| self.key(k)).collect()
    }

    /// The store it wraps.
    pub fn underlying_store(&self) -> Arc<dyn Store> {
        self.inner.clone()
    }
}

impl Store for PrefixStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.set(&self.key(key), value)
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.inner.get(&self.key(key))
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.inner.add(&self.key(key), amount)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        self.inner.compare_set(&self.key(key), expected, desired)
    }
    fn wait(&self, keys: &[String], timeout: Option<Duration>) -> Result<()> {
        self.inner.wait(&self.keys(keys), timeout)
    }
    fn check(&self, keys: &[String]) -> Result<bool> {
        self.inner.check(&self.keys(keys))
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        self.inner.delete_key(&self.key(key))
    }
    fn num_keys(&self) -> Result<i64> {
        self.inner.num_keys()
    }
    fn timeout(&self) -> Duration {
        self.inner.timeout()
    }
    fn set_timeout(&self, timeout: Duration) {
        self.inner.set_timeout(timeout)
    }
}

// ---- TCPStore ----

const SET: u8 = 1;
const GET: u8 = 2;
const ADD: u8 = 3;
const CAS: u8 = 4;
const WAIT: u8 = 5;
const CHECK: u8 = 6;
const DELETE: u8 = 7;
const NUM_KEYS: u8 = 8;

fn io_err(what: &str, e: std::io::Error) -> Error {
    err(format!("TCPStore: {what}: {e}"))
}

fn write_bytes(w: &mut impl Write, b: &[u8]) -> std::io::Result<()> {
    w.write_all(&(b.len() as u32).to_le_bytes())?;
    w.write_all(b)
}

fn read_bytes(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    let n = u32::from_le_bytes(n) as usize;
    if n > MAX_VALUE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a value of {n} bytes (at most {MAX_VALUE})"),
        ));
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn read_string(r: &mut impl Read) -> std::io::Result<String> {
    String::from_utf8(read_bytes(r)?).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "a key that is not UTF-8")
    })
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Serve one client until it disconnects.
fn serve(table: Arc<Table>, mut s: TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    loop {
        let mut op = [0u8; 1];
        if s.read(&mut op)? == 0 {
            return Ok(());
        }
        let reply: std::result::Result<Vec<u8>, String> = match op[0] {
            SET => {
                let k = read_string(&mut s)?;
                let v = read_bytes(&mut s)?;
                table.set(&k, &v);
                Ok(vec![])
            }
            GET | WAIT => {
                let n = read_u64(&mut s)? as usize;
                // a GET names one key; anything else is not our protocol
                if n > 1 << 16 || (op[0] == GET && n != 1) {
                    return Ok(());
                }
                let keys = (0..n)
                    .map(|_| read_string(&mut s))
                    .collect::<std::io::Result<Vec<_>>>()?;
                let t = Duration::from_millis(read_u64(&mut s)?);
                if op[0] == GET {
                    table.get(&keys[0], t).map_err(|e| e.to_string())
                } else {
                    table
                        .wait_for(&keys, t)
                        .map(|()| vec![])
                        .map_err(|e| e.to_string())
                }
            }
            ADD => {
                let k = read_string(&mut s)?;
                let amount = read_u64(&mut s)? as i64;
                table
                    .add(&k, amount)
                    .map(|v| v.to_le_bytes().to_vec())
                    .map_err(|e| e.to_string())
            }
            CAS => {
                let k = read_string(&mut s)?;
                let e = read_bytes(&mut s)?;
                let d = read_bytes(&mut s)?;
                Ok(table.compare_set(&k, &e, &d))
            }
            CHECK => {
                let n = read_u64(&mut s)? as usize;
                if n > 1 << 16 {
                    return Ok(());
                }
                let keys = (0..n)
                    .map(|_| read_string(&mut s))
                    .collect::<std::io::Result<Vec<_>>>()?;
                let map = table.map.lock().unwrap();
                Ok(vec![keys.iter().all(|k| map.contains_key(k)) as u8])
            }
            DELETE => {
                let k = read_string(&mut s)?;
                Ok(vec![table.map.lock().unwrap().remove(&k).is_some() as u8])
            }
            NUM_KEYS => Ok((table.map.lock().unwrap().len() as u64)
                .to_le_bytes()
                .to_vec()),
            _ => return Ok(()), // not our protocol: drop the connection
        };
        match reply {
            Ok(v) => {
                s.write_all(&[0])?;
                write_bytes(&mut s, &v)?;
            }
            Err(m) => {
                s.write_all(&[1])?;
                write_bytes(&mut s, m.as_bytes())?;
            }
        }
    }
}

/// `torch.distributed.TCPStore`: the master (`is_master`) serves the keys
/// on `host:port` from a thread of its own; every rank (the master too)
/// talks to it as a client (Note [TCPStore protocol]).
pub struct TCPStore {
    conn: Mutex<TcpStream>,
    timeout: Mutex<Duration>,
    port: u16,
    host: String,
}

impl TCPStore {
    /// Connect to (and, as `is_master`, first start) the store at
    /// `host:port`; port 0 for the master picks a free one (`port()`).
    /// A client retries until `timeout` while the master starts.
    pub fn new(host: &str, port: u16, is_master: bool, timeout: Duration) -> Result<TCPStore> {
        let mut port = port;
        if is_master {
            let listener = TcpListener::bind((host, port))
                .map_err(|e| io_err(&format!("cannot listen on {host}:{port}"), e))?;
            port = listener
                .local_addr()
                .map_err(|e| io_err("local address", e))?
                .port();
            let table = Arc::new(Table::default());
            std::thread::Builder::new()
                .name("TCPStore".into())
                .spawn(move || {
                    for s in listener.incoming().flatten() {
                        let t = table.clone();
                        let _ = std::thread::Builder::new()
                            .name("TCPStore-client".into())
                            .spawn(move || serve(t, s));
                    }
                })
                .map_err(|e| io_err("cannot start the server thread", e))?;
        }
        let deadline = Instant::now() + timeout;
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| io_err(&format!("cannot resolve {host}:{port}"), e))?
            .next()
            .ok_or_else(|| err(format!("TCPStore: {host}:{port} resolves to nothing")))?;
        let conn = loop {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                Ok(s) => break s,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(io_err(
                        &format!("no store at {host}:{port} after {} s", timeout.as_secs()),
                        e,
                    ))
                }
            }
        };
        conn.set_nodelay(true).map_err(|e| io_err("nodelay", e))?;
        Ok(TCPStore {
            conn: Mutex::new(conn),
            timeout: Mutex::new(timeout),
            port,
            host: host.to_string(),
        })
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host it connects to.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn call(&self, what: &str, req: &[u8]) -> Result<Vec<u8>> {
        let mut s = self.conn.lock().unwrap();
        s.write_all(req).map_err(|e| io_err(what, e))?;
        let mut status = [0u8; 1];
        s.read_exact(&mut status).map_err(|e| io_err(what, e))?;
        let v = read_bytes(&mut *s).map_err(|e| io_err(what, e))?;
        if status[0] != 0 {
            return Err(err(String::from_utf8_lossy(&v).into_owned()));
        }
        Ok(v)
    }

    fn keys_req(op: u8, keys: &[String], ms: Option<u64>) -> Vec<u8> {
        let mut r = vec![op];
        r.extend_from_slice(&(keys.len() as u64).to_le_bytes());
        for k in keys {
            write_bytes(&mut r, k.as_bytes()).expect("writes to a Vec");
        }
        if let Some(ms) = ms {
            r.extend_from_slice(&ms.to_le_bytes());
        }
        r
    }
}

impl Store for TCPStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let mut r = vec![SET];
        write_bytes(&mut r, key.as_bytes()).expect("writes to a Vec");
        write_bytes(&mut r, value).expect("writes to a Vec");
        self.call("set", &r).map(|_| ())
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        let ms = self.timeout().as_millis() as u64;
        self.call("get", &Self::keys_req(GET, &[key.to_string()], Some(ms)))
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        let mut r = vec![ADD];
        write_bytes(&mut r, key.as_bytes()).expect("writes to a Vec");
        r.extend_from_slice(&(amount as u64).to_le_bytes());
        let v = self.call("add", &r)?;
        Ok(i64::from_le_bytes(
            v.try_into()
                .map_err(|_| err("TCPStore: add: a short reply".into()))?,
        ))
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        let mut r = vec![CAS];
        write_bytes(&mut r, key.as_bytes()).expect("writes to a Vec");
        write_bytes(&mut r, expected).expect("writes to a Vec");
        write_bytes(&mut r, desired).expect("writes to a Vec");
        self.call("compare_set", &r)
    }
    fn wait(&self, keys: &[String], timeout: Option<Duration>) -> Result<()> {
        let ms = timeout.unwrap_or_else(|| self.timeout()).as_millis() as u64;
        self.call("wait", &Self::keys_req(WAIT, keys, Some(ms)))
            .map(|_| ())
    }
    fn check(&self, keys: &[String]) -> Result<bool> {
        Ok(self.call("check", &Self::keys_req(CHECK, keys, None))? == [1])
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        let mut r = vec![DELETE];
        write_bytes(&mut r, key.as_bytes()).expect("writes to a Vec");
        Ok(self.call("delete_key", &r)? == [1])
    }
    fn num_keys(&self) -> Result<i64> {
        let v = self.call("num_keys", &[NUM_KEYS])?;
        Ok(u64::from_le_bytes(
            v.try_into()
                .map_err(|_| err("TCPStore: a short reply".into()))?,
        ) as i64)
    }
    fn timeout(&self) -> Duration {
        *self.timeout.lock().unwrap()
    }
    fn set_timeout(&self, timeout: Duration) {
        *self.timeout.lock().unwrap() = timeout;
    }
}
