//! Data-parallel training from Rust: an MLP regression trained with
//! `DistributedDataParallel`, each rank on its share of every global batch.
//!
//! Run it as torch programs are run (two ranks each):
//!
//! ```text
//! # Gloo, launched by ferrotorch's torchrun (RANK, WORLD_SIZE, MASTER_ADDR... set):
//! python -m ferrotorch.distributed.run --nproc-per-node 2 --no-python target/debug/examples/ddp
//! # MPI, launched by mpirun (as root in a container, see the README):
//! mpirun -np 2 target/debug/examples/ddp --backend mpi
//! # one process on the whole batch (the reference):
//! target/debug/examples/ddp --single
//! ```
//!
//! Rank 0 prints the loss every 20 steps and, at the end, a checksum of the
//! parameters (`params: <sum> <sum of squares>`); every rank checks that its
//! parameters are bit-identical to rank 0's.

use ferrotorch as torch;
use torch::distributed::{self as dist, ReduceOp};
use torch::nn::parallel::DistributedDataParallel;
use torch::nn::{self, functional as F, Forward, Module};
use torch::optim::{Optimizer, SGDOptions, SGD};
use torch::{Generator, Result, Tensor};

const STEPS: usize = 100;
const BATCH: usize = 64;

/// A 8-32-32-1 MLP with ReLU.
#[derive(Module)]
struct Mlp {
    l1: nn::Linear,
    l2: nn::Linear,
    l3: nn::Linear,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = F::relu(&self.l1.call(x)?)?;
        let x = F::relu(&self.l2.call(&x)?)?;
        self.l3.call(&x)
    }
}

/// Global batch `step`: the same on every rank (seeded by the step).
fn batch(step: usize) -> Result<(Tensor, Tensor)> {
    let g = Generator::new(1000 + step as u64);
    let x = Tensor::randn_with(&[BATCH, 8], torch::DType::F32, Some(&g))?;
    let y = x.sum_dim(Some(&[1]), true, None)?.mul(0.4)?.tanh()?;
    Ok((x, y))
}

/// Train `net` for [`STEPS`] SGD steps on this rank's shard of each
/// global batch (the mean-squared error, so the averaged gradients of the
/// shards are the whole batch's).
fn train(net: &dyn Forward, rank: usize, world: usize) -> Result<()> {
    let mut opt = SGD::new(
        net.parameters(),
        SGDOptions {
            lr: 0.05,
            momentum: 0.9,
            ..Default::default()
        },
    )?;
    let k = BATCH / world;
    for step in 0..STEPS {
        let (x, y) = batch(step)?;
        let (x, y) = (
            x.narrow(0, (rank * k) as i64, k)?,
            y.narrow(0, (rank * k) as i64, k)?,
        );
        opt.zero_grad();
        let loss = F::mse_loss(&net.call(&x)?, &y, F::Reduction::Mean)?;
        loss.backward()?;
        opt.step()?;
        if rank == 0 && step % 20 == 0 {
            println!("step {step:3}  loss {:.5}", loss.item()?.to_f64());
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let single = args.iter().any(|a| a == "--single");
    let backend = args
        .iter()
        .position(|a| a == "--backend")
        .and_then(|i| args.get(i + 1))
        .map_or("gloo", String::as_str);
    // every rank starts from a different init: DDP broadcasts rank 0's
    let seed = if single {
        0
    } else {
        std::env::var("RANK")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    };
    torch::manual_seed(seed);
    let model = Mlp {
        l1: nn::Linear::new(8, 32, true)?,
        l2: nn::Linear::new(32, 32, true)?,
        l3: nn::Linear::new(32, 1, true)?,
    };
    let params: Vec<Tensor> = if single {
        train(&model, 0, 1)?;
        model.parameters().iter().map(|p| p.tensor()).collect()
    } else {
        dist::init_process_group(backend)?;
        let (rank, world) = (dist::get_rank()?, dist::get_world_size()?);
        if !BATCH.is_multiple_of(world) {
            return Err(torch::Error::new(
                torch::ErrorKind::Value,
                format!("the global batch of {BATCH} does not split over {world} ranks"),
            ));
        }
        let ddp = DistributedDataParallel::new(model)?;
        train(&ddp, rank, world)?;
        // bit-identical on every rank: each compares its parameters to rank 0's
        let params: Vec<Tensor> = ddp.parameters().iter().map(|p| p.tensor()).collect();
        for p in &params {
            let theirs = p.deep_clone()?;
            dist::broadcast(&theirs, 0)?;
            let differs = Tensor::from_vec(vec![i64::from(!theirs.equal(p)?)], &[1])?;
            dist::all_reduce(&differs, ReduceOp::Max)?;
            if differs.item()?.to_i64() != 0 {
                return Err(torch::Error::new(
                    torch::ErrorKind::Runtime,
                    "the ranks' parameters differ after training".to_string(),
                ));
            }
        }
        if rank != 0 {
            dist::destroy_process_group();
            return Ok(());
        }
        params
    };
    let (mut sum, mut sq) = (0f64, 0f64);
    for p in &params {
        for v in p
            .to_dtype(torch::DType::F64)?
            .reshape(&[-1])?
            .to_vec::<f64>()?
        {
            sum += v;
            sq += v * v;
        }
    }
    println!("params: {sum:.9} {sq:.9}");
    if !single {
        dist::destroy_process_group();
    }
    Ok(())
}
