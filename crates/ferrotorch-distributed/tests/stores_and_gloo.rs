//! Stores (HashStore, PrefixStore, TCPStore across threads) and Gloo's
//! collectives with ranks as threads of one process over Gloo's TCP
//! transport, checked against single-process references.

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_distributed::{
    is_gloo_available, HashStore, PrefixStore, ProcessGroupGloo, ReduceOp, Store, TCPStore,
};
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

/// `f(group)` on `n` ranks (threads), each with its own Gloo context.
fn on_ranks<T: Send + 'static>(
    n: usize,
    f: impl Fn(ProcessGroupGloo) -> Result<T> + Send + Sync + 'static,
) -> Vec<T> {
    let master = TCPStore::new("127.0.0.1", 0, true, Duration::from_secs(30)).unwrap();
    let port = master.port();
    let f = Arc::new(f);
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let f = f.clone();
            std::thread::spawn(move || {
                let s: Arc<dyn Store> = Arc::new(TCPStore::new(
                    "127.0.0.1",
                    port,
                    false,
                    Duration::from_secs(30),
                )?);
                let g = ProcessGroupGloo::new(s, r, n, "127.0.0.1", Duration::from_secs(30))?;
                f(g)
            })
        })
        .collect();
    let out = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    drop(master);
    out
}

#[test]
fn gloo_collectives_match_a_single_process() {
    if !is_gloo_available() {
        eprintln!("skipped: {}", ferrotorch_distributed::gloo::UNAVAILABLE);
        return;
    }
    // one rank: Gloo publishes empty values (a null pointer from the shim)
    for n in [1, 2, 4] {
        let got = on_ranks(n, move |g| {
            let r = g.rank() as f32;
            let x = Tensor::from_vec(vec![r + 1.0, -r, 2.0 * r], &[3]).unwrap();
            let s = x.deep_clone()?;
            g.all_reduce(&s, ReduceOp::Sum)?;
            let m = x.deep_clone()?;
            g.all_reduce(&m, ReduceOp::Max)?;
            let a = x.to_dtype(DType::F64)?;
            g.all_reduce(&a, ReduceOp::Avg)?;
            let i = Tensor::from_vec(vec![g.rank() as i64 + 1; 2], &[2])?;
            g.all_reduce(&i, ReduceOp::Product)?;
            // a non-contiguous tensor: its elements, reduced in place
            let t =
                Tensor::from_vec((0..6).map(|v| v as f32 * (r + 1.0)).collect(), &[2, 3])?.t()?;
            g.all_reduce(&t, ReduceOp::Min)?;
            let b = Tensor::from_vec(vec![r; 4], &[4])?;
            g.broadcast(&b, n - 1)?;
            let all = g.all_gather(&Tensor::from_vec(vec![r, r * 10.0], &[2])?)?;
            g.barrier()?;
            Ok((
                s.to_vec::<f32>()?,
                m.to_vec::<f32>()?,
                a.to_vec::<f64>()?,
                i.to_vec::<i64>()?,
                t.contiguous()?.to_vec::<f32>()?,
                b.to_vec::<f32>()?,
                all.iter()
                    .map(|t| t.to_vec::<f32>().unwrap())
                    .collect::<Vec<_>>(),
            ))
        });
        let nf = n as f32;
        let sum = |f: &dyn Fn(f32) -> f32| (0..n).map(|r| f(r as f32)).sum::<f32>();
        let want_sum = vec![sum(&|r| r + 1.0), sum(&|r| -r), sum(&|r| 2.0 * r)];
        let fact: i64 = (1..=n as i64).product();
        for (s, m, a, i, t, b, all) in &got {
            assert_eq!(s, &want_sum);
            assert_eq!(m, &vec![nf, 0.0, 2.0 * (nf - 1.0)]);
            assert_eq!(
                a,
                &want_sum
                    .iter()
                    .map(|v| *v as f64 / n as f64)
                    .collect::<Vec<_>>()
            );
            assert_eq!(i, &vec![fact, fact]);
            assert_eq!(t, &vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
            assert_eq!(b, &vec![nf - 1.0; 4]);
            assert_eq!(
                all,
                &(0..n)
                    .map(|r| vec![r as f32, r as f32 * 10.0])
                    .collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn unsupported_dtypes_and_bad_ranks_are_named_errors() {
    let s: Arc<dyn Store> = Arc::new(HashStore::new());
    let e = ProcessGroupGloo::new(s, 2, 2, "127.0.0.1", Duration::from_secs(1))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rank 2 is not in a group of 2"), "{e}");
    if !is_gloo_available() {
        return;
    }
    let got = on_ranks(2, |g| {
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
        let got = on_ranks(n, move |g| {
            let (r, last) = (g.rank(), n - 1);
            let x = Tensor::from_vec(vec![r as f64 + 1.0, 2.0], &[2])?;
            g.reduce(&x, last, ReduceOp::Product)?;
            let gathered = g.gather(&Tensor::from_vec(vec![r as i32; 3], &[3])?, 0)?;
            let pieces: Vec<Tensor> = (0..n)
                .map(|i| Tensor::from_vec(vec![10.0 * i as f32, 1.0], &[2]).unwrap())
                .collect();
            let out = Tensor::zeros(&[2], DType::F32)?;
            g.scatter(&out, 1, if r == 1 { Some(&pieces) } else { None })?;
            // rank r sends r*100 + i to rank i
            let input = Tensor::from_vec((0..n).map(|i| (r * 100 + i) as i64).collect(), &[n])?;
            let a2a = Tensor::zeros(&[n], DType::I64)?;
            g.all_to_all_single(&a2a, &input)?;
            // a ring: each rank sends to the next and receives from the previous
            let sent = Tensor::from_vec(vec![r as f32; 2], &[2])?;
            let got = Tensor::zeros(&[2], DType::F32)?;
            if r % 2 == 0 {
                g.send(&sent, (r + 1) % n, 7)?;
                g.recv(&got, (r + n - 1) % n, 7)?;
            } else {
                g.recv(&got, (r + n - 1) % n, 7)?;
                g.send(&sent, (r + 1) % n, 7)?;
            }
            Ok((
                x.to_vec::<f64>()?,
                gathered.map(|v| {
                    v.iter()
                        .map(|t| t.to_vec::<i32>().unwrap())
                        .collect::<Vec<_>>()
                }),
                out.to_vec::<f32>()?,
                a2a.to_vec::<i64>()?,
                got.to_vec::<f32>()?,
            ))
        });
        let fact: f64 = (1..=n).map(|v| v as f64).product();
        for (r, (x, gathered, out, a2a, ring)) in got.into_iter().enumerate() {
            if r == n - 1 {
                assert_eq!(x, vec![fact, 2f64.powi(n as i32)]);
            } else {
                assert_eq!(x, vec![r as f64 + 1.0, 2.0]);
            }
            if r == 0 {
                assert_eq!(
                    gathered.unwrap(),
                    (0..n).map(|i| vec![i as i32; 3]).collect::<Vec<_>>()
                );
            } else {
                assert!(gathered.is_none());
            }
            assert_eq!(out, vec![10.0 * r as f32, 1.0]);
            assert_eq!(
                a2a,
                (0..n).map(|i| (i * 100 + r) as i64).collect::<Vec<_>>()
            );
            assert_eq!(ring, vec![((r + n - 1) % n) as f32; 2]);
        }
    }
}

#[test]
fn desynchronised_ranks_get_an_error_naming_each_call() {
    if !is_gloo_available() {
        return;
    }
    let got = on_ranks(2, |g| {
        // both agree first, then rank 1 broadcasts where rank 0 all-reduces
        g.all_reduce(&Tensor::ones(&[2], DType::F32)?, ReduceOp::Sum)?;
        let r = if g.rank() == 0 {
            g.all_reduce(&Tensor::ones(&[3], DType::F32)?, ReduceOp::Max)
        } else {
            g.broadcast(&Tensor::ones(&[4], DType::F64)?, 0)
        };
        let e = r.unwrap_err().to_string();
        // the group stays usable once they agree again
        let x = Tensor::ones(&[1], DType::F32)?;
        g.all_reduce(&x, ReduceOp::Sum)?;
        Ok((e, x.to_vec::<f32>()?))
    });
    for (e, x) in &got {
        assert!(e.contains("disagree"), "{e}");
        assert!(
            e.contains("rank 0 calls all_reduce #1 of a torch.float32 tensor of 3 elements, MAX"),
            "{e}"
        );
        assert!(
            e.contains("rank 1 calls broadcast #1 of a torch.float64 tensor of 4 elements, root 0"),
            "{e}"
        );
        assert_eq!(x, &vec![2.0]);
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
