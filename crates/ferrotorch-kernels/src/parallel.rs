//! The intra-op thread pool, sized like `torch.get_num_threads()`.
//!
//! One rayon pool, replaced when [`set_num_threads`] changes its size. Kernels
//! call [`parallel_for`] with a grain size; work below the grain, or work
//! started from inside a pool thread (nested parallelism), runs inline.

use parking_lot::RwLock;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;

static POOL: RwLock<Option<Arc<rayon::ThreadPool>>> = RwLock::new(None);

fn default_threads() -> usize {
    std::env::var("FERROTORCH_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn build(n: usize) -> Arc<rayon::ThreadPool> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ferrotorch-{i}"))
        .build();
    match pool {
        Ok(p) => Arc::new(p),
        // Spawning threads failed (resource limits): fall back to one thread,
        // which rayon builds without spawning anything new.
        Err(_) => Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("a one-thread rayon pool needs no new OS thread"),
        ),
    }
}

fn pool() -> Arc<rayon::ThreadPool> {
    if let Some(p) = POOL.read().as_ref() {
        return p.clone();
    }
    let mut w = POOL.write();
    w.get_or_insert_with(|| build(default_threads())).clone()
}

/// Number of threads intra-op parallelism uses (`torch.get_num_threads`).
pub fn get_num_threads() -> usize {
    pool().current_num_threads()
}

/// Set the number of intra-op threads (`torch.set_num_threads`); 0 means the
/// machine's default.
pub fn set_num_threads(n: usize) {
    let n = if n == 0 { default_threads() } else { n };
    *POOL.write() = Some(build(n));
}

/// Run `f` inside the pool (so that nested rayon work, e.g. GEMM, uses it).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    pool().install(f)
}

/// Split `0..total` into at most one chunk per thread, each at least `grain`
/// long, and run `f` on each chunk. Runs inline when there is one chunk.
pub fn parallel_for(total: usize, grain: usize, f: impl Fn(Range<usize>) + Sync + Send) {
    let grain = grain.max(1);
    if total <= grain || rayon::current_thread_index().is_some() {
        if total > 0 {
            f(0..total);
        }
        return;
    }
    let p = pool();
    let threads = p.current_num_threads();
    let chunks = threads.min(total.div_ceil(grain));
    if chunks <= 1 {
        f(0..total);
        return;
    }
    let per = total.div_ceil(chunks);
    p.install(|| {
        (0..chunks).into_par_iter().for_each(|c| {
            let start = c * per;
            let end = (start + per).min(total);
            if start < end {
                f(start..end);
            }
        })
    });
}

/// Like [`parallel_for`] but each chunk produces a value; results are
/// returned in chunk order (for deterministic reductions).
pub fn parallel_map<R: Send>(
    total: usize,
    grain: usize,
    f: impl Fn(Range<usize>) -> R + Sync + Send,
) -> Vec<R> {
    let grain = grain.max(1);
    if total <= grain || rayon::current_thread_index().is_some() {
        return vec![f(0..total)];
    }
    let p = pool();
    let chunks = p.current_num_threads().min(total.div_ceil(grain)).max(1);
    let per = total.div_ceil(chunks);
    p.install(|| {
        (0..chunks)
            .into_par_iter()
            .map(|c| {
                let start = (c * per).min(total);
                f(start..(start + per).min(total))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn parallel_for_covers_every_index_once() {
        let hits: Vec<AtomicUsize> = (0..100_003).map(|_| AtomicUsize::new(0)).collect();
        parallel_for(hits.len(), 1000, |r| {
            for i in r {
                hits[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        let parts = parallel_map(10_000, 10, |r| r.len());
        assert_eq!(parts.iter().sum::<usize>(), 10_000);
    }
}
