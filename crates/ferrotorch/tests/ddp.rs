//! Rust's DistributedDataParallel with ranks as threads on Gloo: shards
//! of a global batch give one process's parameters on the whole batch
//! (bucket copies and bucket views, several buckets), `no_sync`
//! accumulation equals the large batch, and a parameter without a
//! gradient is an error naming it unless `find_unused_parameters`.

#![cfg(feature = "distributed")]

use ferrotorch::distributed::{is_gloo_available, ProcessGroup, ProcessGroupGloo, Store, TCPStore};
use ferrotorch::nn::parallel::{DdpOptions, DistributedDataParallel};
use ferrotorch::nn::{functional as F, Forward, Linear, Module, Parameter};
use ferrotorch::optim::{Optimizer, SGDOptions, SGD};
use ferrotorch::{Result, Tensor};
use std::sync::Arc;
use std::time::Duration;

/// `f(group)` on `n` ranks (threads), each with its own Gloo context.
fn on_ranks<T: Send + 'static>(
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
                f(ProcessGroupGloo::connect(
                    s,
                    r,
                    n,
                    "127.0.0.1",
                    Duration::from_secs(30),
                )?)
            })
        })
        .collect();
    let out = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    drop(master);
    out
}

#[derive(Module)]
struct Net {
    a: Linear,
    b: Linear,
    /// used only when `extra` is set in forward
    spare: Linear,
}

impl Forward for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.b.call(&self.a.call(x)?.tanh()?)
    }
}

/// The same weights on every call, on rank 0; other ranks start
/// elsewhere (DDP broadcasts rank 0's).
fn net(rank: usize) -> Result<Net> {
    let n = Net {
        a: Linear::new(4, 8, true)?,
        b: Linear::new(8, 2, true)?,
        spare: Linear::new(2, 2, true)?,
    };
    for (k, p) in n.parameters().iter().enumerate() {
        let t = p.tensor();
        let vals: Vec<f32> = (0..t.numel())
            .map(|i| ((i * 7 + k * 3 + rank * 11) % 13) as f32 / 13.0 - 0.5)
            .collect();
        p.set_data(&Tensor::from_vec(vals, t.shape())?);
    }
    Ok(n)
}

fn batch(step: usize) -> Result<(Tensor, Tensor)> {
    let x: Vec<f32> = (0..32)
        .map(|i| (((i + step * 5) % 9) as f32 - 4.0) / 4.0)
        .collect();
    let x = Tensor::from_vec(x, &[8, 4])?;
    let y = x
        .sum_dim(Some(&[1]), true, None)?
        .sin()?
        .expand(&[8, 2])?
        .contiguous()?;
    Ok((x, y))
}

fn train(
    m: &dyn Forward,
    params: Vec<Parameter>,
    shard: (usize, usize),
    steps: usize,
) -> Result<Vec<Vec<f32>>> {
    let mut opt = SGD::new(
        params.clone(),
        SGDOptions {
            lr: 0.1,
            momentum: 0.5,
            ..Default::default()
        },
    )?;
    let (r, w) = shard;
    let k = 8 / w;
    for s in 0..steps {
        let (x, y) = batch(s)?;
        let (x, y) = (
            x.narrow(0, (r * k) as i64, k)?,
            y.narrow(0, (r * k) as i64, k)?,
        );
        opt.zero_grad();
        F::mse_loss(&m.call(&x)?, &y, F::Reduction::Mean)?.backward()?;
        opt.step()?;
    }
    params.iter().map(|p| p.tensor().to_vec::<f32>()).collect()
}

fn ddp_on(g: ProcessGroup, opts: DdpOptions) -> Result<Vec<Vec<f32>>> {
    let (r, w) = (g.rank(), g.size());
    let m = DistributedDataParallel::with_options(net(r)?, Arc::new(g), opts)?;
    let params: Vec<_> = m.module().parameters().into_iter().take(4).collect();
    train(&m, params, (r, w), 10)
}

fn close(a: &[Vec<f32>], b: &[Vec<f32>]) {
    for (x, y) in a.iter().zip(b) {
        for (u, v) in x.iter().zip(y) {
            assert!((u - v).abs() <= 1e-5, "{u} vs {v}");
        }
    }
}

#[test]
fn shards_match_one_process_with_copies_and_with_bucket_views() {
    if !is_gloo_available() {
        return;
    }
    let m = net(0).unwrap();
    let params: Vec<_> = m.parameters().into_iter().take(4).collect();
    let want = train(&m, params, (0, 1), 10).unwrap();
    for view in [false, true] {
        for n in [2, 4] {
            let opts = DdpOptions {
                bucket_cap_mb: 0.0001, // several buckets
                gradient_as_bucket_view: view,
                find_unused_parameters: true, // `spare` is never used
                ..Default::default()
            };
            let got = on_ranks(n, move |g| ddp_on(g, opts.clone()));
            for r in &got {
                assert_eq!(r, &got[0], "ranks differ");
                close(r, &want);
            }
        }
    }
}

#[test]
fn views_are_the_buckets_no_sync_accumulates_and_unused_parameters_are_named() {
    if !is_gloo_available() {
        return;
    }
    let got = on_ranks(2, |g| {
        let r = g.rank();
        let g = Arc::new(g);
        // without find_unused_parameters, `spare` (never used) is named
        let m = DistributedDataParallel::with_options(net(r)?, g.clone(), DdpOptions::default())?;
        let (x, y) = batch(0)?;
        let e = F::mse_loss(&m.call(&x)?, &y, F::Reduction::Mean)?
            .backward()
            .unwrap_err()
            .to_string();
        drop(m);
        let opts = DdpOptions {
            gradient_as_bucket_view: true,
            find_unused_parameters: true,
            ..Default::default()
        };
        let m = DistributedDataParallel::with_options(net(r)?, g, opts)?;
        // no_sync: two local backwards on this rank's own data
        {
            let _ns = m.no_sync();
            for s in 1..3 {
                let (x, y) = batch(s + 10 * r)?;
                F::mse_loss(&m.call(&x)?, &y, F::Reduction::Mean)?.backward()?;
            }
        }
        let w = m.module().a.weight.tensor();
        let local = w.grad().unwrap().to_vec::<f32>()?;
        // then a synchronised backward adding nothing (the output as its
        // own target): the gradients become the ranks' average
        let x = batch(5)?.0;
        let out = m.call(&x)?;
        F::mse_loss(&out, &out.detach(), F::Reduction::Mean)?.backward()?;
        let synced = w.grad().unwrap();
        // bucket views: both layers' gradients live in one bucket
        let b = m.module().b.weight.tensor().grad().unwrap();
        let shared = synced.storage().is_same(b.storage());
        Ok((e, local, synced.to_vec::<f32>()?, shared, m.num_buckets()))
    });
    for (e, _, _, shared, buckets) in &got {
        assert!(
            e.contains("received no gradient") && e.contains("spare.weight"),
            "{e}"
        );
        assert!(*shared && *buckets == 1);
    }
    assert_ne!(
        got[0].1, got[1].1,
        "the ranks' local gradients should differ"
    );
    for (i, v) in got[0].2.iter().enumerate() {
        let want = (got[0].1[i] + got[1].1[i]) / 2.0;
        assert!((v - want).abs() <= 1e-6, "{v} vs {want}");
        assert_eq!(*v, got[1].2[i]);
    }
}

#[test]
fn the_default_group_gives_torchs_errors() {
    use ferrotorch::distributed::InitOptions;
    let opts = |backend: &str, rank, world| InitOptions {
        init_method: Some("tcp://127.0.0.1:1".into()),
        rank: Some(rank),
        world_size: Some(world),
        ..InitOptions::new(backend)
    };
    let e = |o| dist_err(ferrotorch::distributed::init_process_group_with(o));
    assert_eq!(
        e(opts("nccl", 0, 1)),
        "ProcessGroupNCCL is only supported with GPUs, no GPUs found!"
    );
    assert!(e(opts("ucc", 0, 1)).contains("Invalid backend: 'ucc'"));
    let file = InitOptions {
        init_method: Some("file:///nonexistent/store".into()),
        ..InitOptions::new("gloo")
    };
    assert!(e(file).contains("file:// rendezvous needs rank and world_size"));
    assert!(e(opts("gloo", 0, 0)).contains("world_size must be positive"));
    assert!(e(opts("gloo", 2, 2)).contains("Invalid rank 2 for world_size 2"));
    assert!(dist_err(ferrotorch::distributed::get_rank().map(|_| ()))
        .contains("has not been initialized"));
    if !is_gloo_available() {
        return;
    }
    // a world of one on a store this process serves, then a second init
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let one = InitOptions {
        init_method: Some(format!("tcp://127.0.0.1:{port}")),
        ..opts("gloo", 0, 1)
    };
    ferrotorch::distributed::init_process_group_with(one.clone()).unwrap();
    assert_eq!(ferrotorch::distributed::get_world_size().unwrap(), 1);
    assert!(e(one).contains("trying to initialize the default process group twice!"));
    ferrotorch::distributed::destroy_process_group();
    assert!(!ferrotorch::distributed::is_initialized());
}

fn dist_err(r: Result<()>) -> String {
    r.unwrap_err().to_string()
}
