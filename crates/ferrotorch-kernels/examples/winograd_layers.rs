//! ResNet-18's 3×3 layers (and two more) through the Winograd kernels
//! alone, 2×2 against 4×4 tiles, with filters transformed beforehand:
//! medians of repeated calls in milliseconds, one block size (the rule's
//! `nr` multiple) and twice that. The figures behind the F(4×4) rule in
//! ferrotorch-core's `conv_winograd.rs`.
//!
//! ```text
//! cargo run --release -p ferrotorch-kernels --example winograd_layers [threads]
//! ```
//!
//! `ONLY=i` runs layer `i` alone, `TILE=F2|F4` one tile size, `REPS=n`
//! repeats (for profiling one case).
use ferrotorch_kernels::parallel;
use ferrotorch_kernels::winograd::{self, Tile, Winograd};
use ferrotorch_kernels::winograd4;
use std::time::Instant;

/// (batch, channels in and out, map side)
const LAYERS: [(usize, usize, usize); 7] = [
    (1, 64, 56),
    (1, 128, 28),
    (8, 64, 56),
    (8, 128, 28),
    (8, 256, 14),
    (1, 256, 14),
    (8, 512, 7),
];

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let Some(sh) = ferrotorch_kernels::conv::shape() else {
        eprintln!("no direct convolution kernel on this CPU (AVX2 with FMA needed)");
        return;
    };
    if let Some(t) = std::env::args().nth(1).and_then(|v| v.parse().ok()) {
        parallel::set_num_threads(t);
    }
    let only: Option<usize> = env("ONLY");
    let tile_only: Option<String> = env("TILE");
    let reps: usize = env("REPS").unwrap_or(15);
    let threads = parallel::get_num_threads();
    println!("{threads} thread(s), kernel tile {}x{}", sh.mr, sh.nr);
    for (idx, &(n, c, hw)) in LAYERS.iter().enumerate() {
        if only.is_some_and(|o| o != idx) {
            continue;
        }
        let x: Vec<f32> = (0..n * c * hw * hw)
            .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
            .collect();
        let wt: Vec<f32> = (0..c * c * 9)
            .map(|i| ((i * 11) % 19) as f32 / 9.0 - 1.0)
            .collect();
        let mut line = format!("batch {n}, {c} channels, {hw}x{hw}:");
        for tile in [Tile::F2, Tile::F4] {
            if tile_only
                .as_deref()
                .is_some_and(|t| t != format!("{tile:?}"))
            {
                continue;
            }
            let pos = tile.positions();
            let mut u = vec![0.0f32; pos * c * c];
            // SAFETY: `u` holds [pos, c, c].
            unsafe {
                match tile {
                    Tile::F2 => winograd::transform_weights(&wt, c, c, 0..c, u.as_mut_ptr()),
                    Tile::F4 => winograd4::transform_weights(&wt, c, c, 0..c, u.as_mut_ptr()),
                }
            }
            let mut figures = vec![];
            for mult in [1, 2] {
                let by_cache = ferrotorch_kernels::cpu::l2_bytes() / 2 / (pos * 2 * c * 4);
                let block = (by_cache / sh.nr).max(1) * mult * sh.nr;
                let layer = || Winograd {
                    x: &x,
                    n,
                    c,
                    h: hw,
                    w: hw,
                    pad: (1, 1),
                    ho: hw,
                    wo: hw,
                    u: &u,
                    oc: c,
                    bias: None,
                    epilogue: None,
                    block,
                    tile,
                };
                let mut y = vec![0.0f32; n * c * hw * hw];
                let len = layer().scratch_len();
                let blocks = layer().blocks();
                let tasks = threads.clamp(1, blocks);
                let mut scratch = vec![0.0f32; len * tasks];
                let (sp, yp) = (scratch.as_mut_ptr() as usize, y.as_mut_ptr() as usize);
                let mut ts = vec![];
                for _ in 0..reps {
                    let t0 = Instant::now();
                    parallel::parallel_for(tasks, 1, |r| {
                        let layer = layer();
                        for t in r {
                            // SAFETY: task `t` alone uses slot `t` of the
                            // scratch and writes its own blocks of `y`.
                            unsafe {
                                let buf = std::slice::from_raw_parts_mut(
                                    (sp as *mut f32).add(t * len),
                                    len,
                                );
                                layer.run(
                                    blocks * t / tasks..blocks * (t + 1) / tasks,
                                    buf,
                                    yp as *mut f32,
                                )
                            }
                        }
                    });
                    ts.push(t0.elapsed().as_secs_f64() * 1e3);
                }
                ts.sort_by(f64::total_cmp);
                figures.push(format!("block {block}: {:.3}", ts[ts.len() / 2]));
            }
            line += &format!("  {tile:?} {}", figures.join(", "));
        }
        println!("{line}");
    }
}
