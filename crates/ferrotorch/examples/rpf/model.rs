//! The models of the randomized-prior-functions example (shared with the
//! W6 benchmark, which includes this file).

use ferrotorch as torch;
use torch::nn::{self, functional as F, init, Forward, Module};
use torch::optim::{Adam, AdamOptions, Optimizer};
use torch::{Result, Tensor};

/// The post's MLP: 1-20-20-1, SELU, Glorot-uniform weights.
#[derive(Module)]
pub struct Mlp {
    l1: nn::Linear,
    l2: nn::Linear,
    l3: nn::Linear,
}

impl Mlp {
    /// Linear layers with PyTorch's init, then xavier_uniform_ weights.
    pub fn new() -> Result<Mlp> {
        let m = Mlp {
            l1: nn::Linear::new(1, 20, true)?,
            l2: nn::Linear::new(20, 20, true)?,
            l3: nn::Linear::new(20, 1, true)?,
        };
        for l in [&m.l1, &m.l2, &m.l3] {
            init::xavier_uniform_(&l.weight.tensor(), 1.0, None)?;
        }
        Ok(m)
    }
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = F::selu(&self.l1.call(x)?)?;
        let x = F::selu(&self.l2.call(&x)?)?;
        self.l3.call(&x)
    }
}

/// The fixed prior `sin(3x)`.
#[derive(Module)]
pub struct SinPrior;

impl Forward for SinPrior {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(3.0)?.sin()
    }
}

/// `f(x) + scale · p(x)`, the prior evaluated without gradients.
#[derive(Module)]
pub struct ModelWithPrior {
    /// The trained network.
    pub base_model: Mlp,
    /// The fixed prior.
    pub prior_model: Box<dyn Forward>,
    /// Its weight.
    pub prior_scale: f64,
}

impl Forward for ModelWithPrior {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let prior = {
            let _g = torch::no_grad();
            self.prior_model.call(x)?.detach()
        };
        self.base_model.call(x)?.add(&prior.mul(self.prior_scale)?)
    }
}

/// The post's training loop: Adam (lr 0.05) on the MSE, full batch.
pub fn train(model: &ModelWithPrior, x: &Tensor, y: &Tensor, epochs: usize) -> Result<()> {
    let opts = AdamOptions {
        lr: 0.05,
        ..Default::default()
    };
    let mut optimizer = Adam::new(model.parameters(), opts)?;
    for _ in 0..epochs {
        model.train(true);
        let loss = F::mse_loss(&model.call(x)?, y, F::Reduction::Mean)?;
        optimizer.zero_grad();
        loss.backward()?;
        optimizer.step()?;
    }
    Ok(())
}
