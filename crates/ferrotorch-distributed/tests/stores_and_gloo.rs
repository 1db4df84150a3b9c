//! Stores (HashStore, PrefixStore, TCPStore across threads) and Gloo's
//! collectives with ranks as threads of one process over Gloo's TCP
//! transport, checked against single-process references.

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_distributed::{
    is_gloo_available, HashStore, PrefixStore, ProcessGroupGloo, ReduceOp, Store, TCPStore,
};

mod common;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn hash_and_prefix_stores_follow_torchs_semantics() -> Result<()> {
    let s: Arc<dyn Store> = Arc::new(HashStore::new());
    s.set("a", b"1")?;
    assert_eq!(s.get("a")?, b"1");
    assert_eq!(s.add("n", 5)?, 5);
    assert_eq!(s.add("n", -2)?, 3);
    assert_eq!(s.compare_set("c", b"", b"x")?, b"x");
    assert_eq!(s.compare_set("c", b"y", b"z")?, b"x");
    assert_eq!(s.compare_set("c", b"x", b"z")?, b"z");
    assert!(s.check(&["a".into(), "c".into()])?);
    assert!(!s.check(&["missing".into()])?);
    let p = PrefixStore::new("job", s.clone());
    p.set("a", b"2")?;
    assert_eq!(s.get("job/a")?, b"2");
    assert_eq!(s.get("a")?, b"1");
    assert!(s.delete_key("a")?);
    s.set_timeout(Duration::from_millis(50));
    let e = s.get("a").unwrap_err().to_string();
    assert!(e.contains("timed out") && e.contains("\"a\""), "{e}");
    s.set("txt", b"abc")?;
    assert!(s.add("txt", 1).unwrap_err().to_string().contains("integer"));
    Ok(())
}

#[test]
fn a_tcp_store_serves_ranks_that_wait_for_each_other() -> Result<()> {
    let master = TCPStore::new("127.0.0.1", 0, true, Duration::from_secs(10))?;
    let port = master.port();
    let worker = std::thread::spawn(move || -> Result<Vec<u8>> {
        let c = TCPStore::new("127.0.0.1", port, false, Duration::from_secs(10))?;
        c.wait(&["ready".into()], None)?;
        c.add("count", 1)?;
        c.get("payload")
    });
    std::thread::sleep(Duration::from_millis(50));
    master.set("payload", &[7u8; 100_000])?;
    master.set("ready", b"")?;
    assert_eq!(worker.join().unwrap()?, vec![7u8; 100_000]);
    assert_eq!(master.add("count", 1)?, 2);
    assert_eq!(master.num_keys()?, 3);
    master.set_timeout(Duration::from_millis(100));
    assert!(master
        .get("never")
        .unwrap_err()
        .to_string()
        .contains("timed out"));
    let e = TCPStore::new("127.0.0.1", 1, false, Duration::from_millis(200))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no store at 127.0.0.1:1"), "{e}");
    Ok(())
}

#[test]
fn gloo_collectives_match_a_single_process() {
    if !is_gloo_available() {
        eprintln!("skipped: {}", ferrotorch_distributed::gloo::UNAVAILABLE);
        return;
    }
    // one rank: Gloo publishes empty values (a null pointer from the shim)
    for n in [1, 2, 4] {
        for got in common::on_ranks(n, |g| common::reductions(&g)) {
            common::check_reductions(n, &got);
        }
    }
}

#[test]
fn unsupported_dtypes_and_bad_ranks_are_named_errors() {
    let s: Arc<dyn Store> = Arc::new(HashStore::new());
    let e = ProcessGroupGloo::connect(s, 2, 2, "127.0.0.1", Duration::from_secs(1))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rank 2 is not in a group of 2"), "{e}");
    if !is_gloo_available() {
        return;
    }
    let got = common::on_ranks(2, |g| {
        let h = Tensor::ones(&[2], DType::F16)?;
        Ok(g.all_reduce(&h, ReduceOp::Sum).unwrap_err().to_string())
    });
    assert!(
        got[0].contains("dtype") && got[0].contains("float16"),
        "{}",
        got[0]
    );
}

#[test]
fn rooted_collectives_all_to_all_and_point_to_point() {
    if !is_gloo_available() {
        return;
    }
    for n in [2, 3] {
        for (r, got) in common::on_ranks(n, |g| common::rooted(&g))
            .into_iter()
            .enumerate()
        {
            common::check_rooted(n, r, got);
        }
    }
}

#[test]
fn desynchronised_ranks_get_an_error_naming_each_call() {
    if !is_gloo_available() {
        return;
    }
    for got in common::on_ranks(2, |g| common::desynchronised(&g)) {
        common::check_desynchronised(&got);
    }
}

#[test]
fn a_malformed_request_drops_its_connection_without_a_panic() -> Result<()> {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let before = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {
        PANICS.fetch_add(1, Ordering::SeqCst);
    }));
    let master = TCPStore::new("127.0.0.1", 0, true, Duration::from_secs(10))?;
    // GET naming no key (op 2, 0 keys, timeout 0)
    let mut s = std::net::TcpStream::connect(("127.0.0.1", master.port())).unwrap();
    let mut req = vec![2u8];
    req.extend_from_slice(&0u64.to_le_bytes());
    req.extend_from_slice(&0u64.to_le_bytes());
    s.write_all(&req).unwrap();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    std::panic::set_hook(before);
    assert_eq!(n, 0, "the server answered a malformed request");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "the server panicked");
    master.set("still", b"serving")?;
    assert_eq!(master.get("still")?, b"serving");
    Ok(())
}

#[test]
fn a_file_store_is_shared_by_everyone_who_opens_it_and_rejects_foreign_files() -> Result<()> {
    use ferrotorch_distributed::FileStore;
    let dir = std::env::temp_dir().join(format!("ft_filestore_{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    // two handles, as two processes would open the file
    let a = FileStore::new(&dir, Some(2))?;
    let b = FileStore::new(&dir, Some(2))?;
    let waiter = std::thread::spawn({
        let p = dir.clone();
        move || -> Result<Vec<u8>> { FileStore::new(&p, None)?.get("late") }
    });
    a.set("x", b"1")?;
    assert_eq!(b.get("x")?, b"1");
    assert_eq!(a.add("n", 3)?, 3);
    assert_eq!(b.add("n", 4)?, 7);
    assert_eq!(b.compare_set("c", b"", b"v")?, b"v");
    assert_eq!(a.compare_set("c", b"w", b"z")?, b"v");
    assert!(a.delete_key("x")? && !b.check(&["x".into()])?);
    assert_eq!(b.num_keys()?, 2);
    b.set("late", &[9u8; 1000])?;
    assert_eq!(waiter.join().unwrap()?, vec![9u8; 1000]);
    a.set_timeout(Duration::from_millis(30));
    assert!(a
        .get("never")
        .unwrap_err()
        .to_string()
        .contains("timed out"));
    // a file this store did not write: a named error, no huge allocation
    let bad = dir.with_extension("bad");
    std::fs::write(&bad, [0xff, 0xff, 0xff, 0x7f, b'k'])?;
    let e = FileStore::new(&bad, None)?
        .check(&["k".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("malformed record at byte 0"), "{e}");
    std::fs::remove_file(&dir)?;
    std::fs::remove_file(&bad)?;
    Ok(())
}
