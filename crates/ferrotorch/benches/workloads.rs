//! The shared workloads W1–W5 of `shared/bench/torch_workloads.py`, mirrored
//! exactly (same shapes, same ops, 2 threads). `bench/compare.py` runs this
//! and the PyTorch script in one go and writes the side-by-side table in
//! BENCHMARKS.md.
//!
//! Run: `cargo bench -p ferrotorch --bench workloads`

use divan::{black_box, Bencher};
use ferrotorch as torch;
use torch::{DType, Tensor};

fn main() {
    torch::set_num_threads(2);
    torch::manual_seed(0);
    divan::main();
}

const N16M: usize = 16 * 1024 * 1024;

/// W1: SGEMM n×n (GFLOP/s = 2n³ / time).
#[divan::bench(args = [256, 1024, 2048], sample_count = 20)]
fn w1_sgemm(b: Bencher, n: usize) {
    let x = torch::randn(&[n, n], ()).unwrap();
    let y = torch::randn(&[n, n], ()).unwrap();
    b.bench(|| black_box(x.matmul(&y).unwrap()));
}

fn vec16m() -> (Tensor, Tensor) {
    (
        torch::randn(&[N16M], ()).unwrap(),
        torch::randn(&[N16M], ()).unwrap(),
    )
}

/// W2: a + b on 16M f32 (GB/s = 3·4·n / time).
#[divan::bench(sample_count = 30)]
fn w2_add_16m(b: Bencher) {
    let (x, y) = vec16m();
    b.bench(|| black_box(x.add(&y).unwrap()));
}

/// W2: exp on 16M f32 (GB/s = 2·4·n / time).
#[divan::bench(sample_count = 30)]
fn w2_exp_16m(b: Bencher) {
    let (x, _) = vec16m();
    b.bench(|| black_box(x.exp().unwrap()));
}

/// W2: tanh on 16M f32.
#[divan::bench(sample_count = 30)]
fn w2_tanh_16m(b: Bencher) {
    let (x, _) = vec16m();
    b.bench(|| black_box(x.tanh().unwrap()));
}

/// W2: gelu (exact) on 16M f32.
#[divan::bench(sample_count = 30)]
fn w2_gelu_16m(b: Bencher) {
    let (x, _) = vec16m();
    b.bench(|| black_box(x.gelu("none").unwrap()));
}

/// W2: m.t() + m on 4096² f32 (GB/s = 3·4·n² / time).
#[divan::bench(sample_count = 30)]
fn w2_add_transposed_4096(b: Bencher) {
    let m = torch::randn(&[4096, 4096], ()).unwrap();
    b.bench(|| black_box(m.t().unwrap().add(&m).unwrap()));
}

/// W3: sum of 16M f32 (GB/s = 4·n / time).
#[divan::bench(sample_count = 50)]
fn w3_sum_16m(b: Bencher) {
    let (x, _) = vec16m();
    b.bench(|| black_box(x.sum().unwrap()));
}

/// W3: softmax over the last dim of 4096×1024 f32 (GB/s = 2·4·n / time).
#[divan::bench(sample_count = 50)]
fn w3_softmax_4096x1024(b: Bencher) {
    let x = torch::randn(&[4096, 1024], ()).unwrap();
    b.bench(|| black_box(x.softmax(-1, None).unwrap()));
}

/// W4: conv2d 3×3, 64→64 channels, 56×56, batch 8, no bias, eval
/// (GFLOP/s = 2·8·64·64·9·56·56 / time).
#[divan::bench(sample_count = 10)]
fn w4_conv3x3_64_56_b8(b: Bencher) {
    let x = torch::randn(&[8, 64, 56, 56], ()).unwrap();
    let w = torch::randn(&[64, 64, 3, 3], ()).unwrap();
    b.bench(|| black_box(x.conv2d(&w, None, &[1], &[1], &[1], 1).unwrap()));
}

/// W5: a + b on 1-element tensors (µs per op).
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn w5_tiny_add(b: Bencher) {
    let x = torch::ones(&[1], DType::F32).unwrap();
    let y = torch::ones(&[1], DType::F32).unwrap();
    b.bench(|| black_box(x.add(&y).unwrap()));
}

/// A custom op (issue 24) with fourteen tensor inputs and a Rust kernel,
/// called through its op handle as a Rust caller calls any op by name
/// (µs per call; the pytorch#177109 shape).
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn custom_op_14_inputs(b: Bencher) {
    use torch::dispatch::{IValue, OpHandle};
    use torch::library::{Kind, Library};
    static OP: OpHandle = OpHandle::new("bench_rs::first_of_14");
    static DEFINED: std::sync::Once = std::sync::Once::new();
    DEFINED.call_once(|| {
        let mut m = Library::new("bench_rs", Kind::Def).unwrap();
        let params: Vec<String> = (0..14).map(|i| format!("Tensor a{i}")).collect();
        m.def_impl(
            &format!("first_of_14({}) -> Tensor", params.join(", ")),
            |a| Ok(a.tensor(0)?.into()),
        )
        .unwrap();
    });
    let args: Vec<IValue> = (0..14)
        .map(|_| torch::ones(&[1], DType::F32).unwrap().into())
        .collect();
    b.bench(|| black_box(OP.call(&args, &[]).unwrap()));
}

/// W5 with autograd: a + b on 1-element tensors that require grad, so each
/// op also records a node (µs per op; PyTorch's row is "W5 tiny add
/// requires_grad", from Python).
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn w5_tiny_add_grad(b: Bencher) {
    let x = torch::ones(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = torch::ones(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    b.bench(|| black_box(x.add(&y).unwrap()));
}

/// Autograd: backward through a chain of 100 ops (`y = y * 1.0001`, then
/// `sin`, alternating) on 1-element tensors; the chain is rebuilt outside
/// the timing for each sample.
#[divan::bench(sample_count = 100, sample_size = 10)]
fn autograd_backward_chain_100(b: Bencher) {
    let x = torch::ones(&[1], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    b.with_inputs(|| {
        let mut y = x.clone();
        for i in 0..100 {
            y = if i % 2 == 0 {
                y.mul(1.0001).unwrap()
            } else {
                y.sin().unwrap()
            };
        }
        y
    })
    // The chain is returned, so it is freed after the timing, as in the
    // PyTorch script (where `y` lives until the next iteration).
    .bench_local_values(|y| {
        y.backward().unwrap();
        y
    });
}
