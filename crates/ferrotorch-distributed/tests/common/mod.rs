//! Collectives run on every rank of a group and checked against a
//! single-process reference: shared by the Gloo tests (ranks as threads)
//! and the MPI tests (ranks as processes under `mpirun`).

#![allow(dead_code)]

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_distributed::{ProcessGroup, ProcessGroupGloo, ReduceOp, Store, TCPStore};
use std::sync::Arc;
use std::time::Duration;

/// What one rank's reductions, broadcast and all-gather gave.
pub type Reductions = (
    Vec<f32>,
    Vec<f32>,
    Vec<f64>,
    Vec<i64>,
    Vec<f32>,
    Vec<f32>,
    Vec<Vec<f32>>,
    Vec<f32>,
);

/// all_reduce (SUM, MAX, AVG, PRODUCT, MIN of a non-contiguous tensor;
/// small ones, which Gloo's fingerprint check carries inline, and one of
/// 1,200 bytes, which it does not), broadcast, all_gather and barrier on
/// this rank.
pub fn reductions(g: &ProcessGroup) -> Result<Reductions> {
    let n = g.size();
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
    let t = Tensor::from_vec((0..6).map(|v| v as f32 * (r + 1.0)).collect(), &[2, 3])?.t()?;
    g.all_reduce(&t, ReduceOp::Min)?;
    let b = Tensor::from_vec(vec![r; 4], &[4])?;
    g.broadcast(&b, n - 1)?;
    let all = g.all_gather(&Tensor::from_vec(vec![r, r * 10.0], &[2])?)?;
    g.barrier()?;
    let big = Tensor::from_vec((0..300).map(|v| v as f32 * (r + 1.0)).collect(), &[300])?;
    g.all_reduce(&big, ReduceOp::Sum)?;
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
        big.to_vec::<f32>()?,
    ))
}

/// Check one rank's [`reductions`] of a group of `n`.
pub fn check_reductions(n: usize, got: &Reductions) {
    let (s, m, a, i, t, b, all, big) = got;
    let nf = n as f32;
    let sum = |f: &dyn Fn(f32) -> f32| (0..n).map(|r| f(r as f32)).sum::<f32>();
    let want_sum = vec![sum(&|r| r + 1.0), sum(&|r| -r), sum(&|r| 2.0 * r)];
    let fact: i64 = (1..=n as i64).product();
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
    let ranks = (n * (n + 1) / 2) as f32;
    assert_eq!(big, &(0..300).map(|v| v as f32 * ranks).collect::<Vec<_>>());
}

/// What one rank's rooted collectives, all-to-all and ring gave.
pub type Rooted = (
    Vec<f64>,
    Option<Vec<Vec<i32>>>,
    Vec<f32>,
    Vec<i64>,
    Vec<f32>,
);

/// reduce (PRODUCT), gather, scatter, all_to_all_single and a send/recv
/// ring on this rank.
pub fn rooted(g: &ProcessGroup) -> Result<Rooted> {
    let n = g.size();
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
    // uneven: rank r sends i+1 rows of [r*10+i, -1] to rank i, so rank r
    // receives r+1 rows from each rank
    let rows: Vec<f32> = (0..n)
        .flat_map(|i| (0..=i).flat_map(move |_| [(r * 10 + i) as f32, -1.0]))
        .collect();
    let uneven_in = Tensor::from_vec(rows, &[n * (n + 1) / 2, 2])?;
    let uneven = Tensor::zeros(&[n * (r + 1), 2], DType::F32)?;
    let in_splits: Vec<usize> = (1..=n).collect();
    g.all_to_all_single_uneven(&uneven, &uneven_in, &vec![r + 1; n], &in_splits)?;
    let want: Vec<f32> = (0..n)
        .flat_map(|i| (0..=r).flat_map(move |_| [(i * 10 + r) as f32, -1.0]))
        .collect();
    assert_eq!(uneven.to_vec::<f32>()?, want);
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
    // crossed: every rank receives on one thread while it sends on
    // another, and an all-reduce runs beside them (irecv before send)
    let crossed = Tensor::zeros(&[3], DType::I64)?;
    std::thread::scope(|s| -> Result<()> {
        let rx = s.spawn(|| g.recv(&crossed, (r + n - 1) % n, 9));
        let sum = s.spawn(|| {
            let one = Tensor::ones(&[1], DType::F64)?;
            g.all_reduce(&one, ReduceOp::Sum)?;
            one.to_vec::<f64>()
        });
        g.send(&Tensor::from_vec(vec![r as i64; 3], &[3])?, (r + 1) % n, 9)?;
        rx.join().unwrap()?;
        assert_eq!(sum.join().unwrap()?, vec![n as f64]);
        Ok(())
    })?;
    assert_eq!(crossed.to_vec::<i64>()?, vec![((r + n - 1) % n) as i64; 3]);
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
}

/// Check rank `r`'s [`rooted`] of a group of `n`.
pub fn check_rooted(n: usize, r: usize, got: Rooted) {
    let (x, gathered, out, a2a, ring) = got;
    let fact: f64 = (1..=n).map(|v| v as f64).product();
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

/// A desynchronised call on each rank: the error, and an all-reduce
/// after the ranks agree again.
pub fn desynchronised(g: &ProcessGroup) -> Result<(String, Vec<f32>)> {
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
}

/// Check a rank's [`desynchronised`] of two ranks.
pub fn check_desynchronised(got: &(String, Vec<f32>)) {
    let (e, x) = got;
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

/// `f(group)` on `n` ranks (threads), each with its own Gloo context.
pub fn on_ranks<T: Send + 'static>(
    n: usize,
    f: impl Fn(ProcessGroup) -> Result<T> + Send + Sync + 'static,
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
                let g = ProcessGroupGloo::connect(s, r, n, "127.0.0.1", Duration::from_secs(30))?;
                f(g)
            })
        })
        .collect();
    let out = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    drop(master);
    out
}
