//! Training workloads, mirroring ../shared/bench/torch_workloads.py:
//! W6 — the randomized-prior-functions loop (50 members × 100 epochs,
//! full batch, Adam) — and W8 — one SGD-momentum step of an
//! MLP 784-512-512-10 at batch 128. W6 also runs with the members spread
//! over 2 threads, which the workload allows (members are independent).
//! W7 — ResNet-18 forward in eval mode at 224², batch 1 and 8.
//!
//! `cargo bench -p ferrotorch --bench training`

#[path = "../examples/rpf/model.rs"]
#[allow(dead_code)]
mod model;

use divan::Bencher;
use ferrotorch as torch;
use model::{train, Mlp, ModelWithPrior};
use torch::nn::{self, functional as F, Forward, Module};
use torch::optim::{Optimizer, SGDOptions, SGD};
use torch::{DType, Tensor};

fn main() {
    torch::set_num_threads(2);
    divan::main();
}

fn rpf_data() -> (Tensor, Tensor) {
    torch::manual_seed(0);
    let x = torch::linspace(-1.0, 1.0, 100, ())
        .unwrap()
        .unsqueeze(1)
        .unwrap();
    let noise = torch::randn(x.shape(), ()).unwrap().mul(0.1).unwrap();
    let y = x.mul(3.0).unwrap().sin().unwrap().add(&noise).unwrap();
    (x, y)
}

/// One member as the PyTorch workload does it: bootstrap indices, a model
/// with an MLP prior, 100 epochs.
fn member(x: &Tensor, y: &Tensor) {
    let idx = Tensor::randint(0, 100, &[100], DType::I64).unwrap();
    let (xb, yb) = (
        x.index_select(0, &idx).unwrap(),
        y.index_select(0, &idx).unwrap(),
    );
    let model = ModelWithPrior {
        base_model: Mlp::new().unwrap(),
        prior_model: Box::new(Mlp::new().unwrap()),
        prior_scale: 1.0,
    };
    train(&model, &xb, &yb, 100).unwrap();
}

#[divan::bench(sample_count = 10)]
fn w6_rpf_50x100(b: Bencher) {
    let (x, y) = rpf_data();
    b.bench(|| {
        for _ in 0..50 {
            member(&x, &y);
        }
    });
}

#[divan::bench(sample_count = 10)]
fn w6_rpf_50x100_2threads(b: Bencher) {
    let (x, y) = rpf_data();
    torch::set_num_threads(1);
    b.bench(|| {
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..25 {
                        member(&x, &y);
                    }
                });
            }
        })
    });
    torch::set_num_threads(2);
}

#[divan::bench(args = [1, 8], sample_count = 10)]
fn w7_resnet18_eval(b: Bencher, batch: usize) {
    torch::manual_seed(0);
    let net = torch::models::resnet18(1000).unwrap();
    net.eval();
    let x = torch::randn(&[batch, 3, 224, 224], ()).unwrap();
    let _g = torch::no_grad();
    b.bench_local(|| net.call(&x).unwrap());
}

#[divan::bench(sample_count = 20, sample_size = 5)]
fn w8_mlp_sgd_step(b: Bencher) {
    torch::manual_seed(0);
    let net = nn::Sequential::new()
        .append(nn::Linear::new(784, 512, true).unwrap())
        .append(nn::ReLU::new())
        .append(nn::Linear::new(512, 512, true).unwrap())
        .append(nn::ReLU::new())
        .append(nn::Linear::new(512, 10, true).unwrap());
    let opts = SGDOptions {
        lr: 0.01,
        momentum: 0.9,
        ..Default::default()
    };
    let mut opt = SGD::new(net.parameters(), opts).unwrap();
    let x = torch::randn(&[128, 784], ()).unwrap();
    let y = torch::randint(0, 10, &[128], ()).unwrap();
    b.bench_local(|| {
        let loss = F::cross_entropy(&net.call(&x).unwrap(), &y, Default::default()).unwrap();
        opt.zero_grad();
        loss.backward().unwrap();
        opt.step().unwrap();
    });
}
