//! Samplers: which dataset indices an epoch visits, in which order —
//! `SequentialSampler`, `RandomSampler`, `SubsetRandomSampler`,
//! `WeightedRandomSampler` — and `BatchSampler`, which groups them.
//! Random samplers draw from the same streams as PyTorch's.

use ferrotorch_core::native::random::{default_generator, Generator};
use ferrotorch_core::{ensure, DType, Result, Tensor};

/// The indices of one pass over a dataset (`iter(sampler)`).
pub trait Sampler: Send {
    /// The indices of the next epoch.
    fn indices(&mut self) -> Result<Vec<usize>>;
    /// How many indices an epoch has (`len(sampler)`).
    fn len(&self) -> usize;
    /// Whether an epoch is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn to_usize(t: &Tensor) -> Result<Vec<usize>> {
    Ok(t.to_vec_i64()?.into_iter().map(|i| i as usize).collect())
}

/// `0, 1, ..., n-1` (`SequentialSampler(data_source)`).
pub struct SequentialSampler {
    n: usize,
}

impl SequentialSampler {
    /// For a dataset of `n` samples.
    pub fn new(n: usize) -> SequentialSampler {
        SequentialSampler { n }
    }
}

impl Sampler for SequentialSampler {
    fn indices(&mut self) -> Result<Vec<usize>> {
        Ok((0..self.n).collect())
    }
    fn len(&self) -> usize {
        self.n
    }
}

/// Random order, or draws with replacement (`RandomSampler(data_source,
/// replacement=False, num_samples=None, generator=None)`).
pub struct RandomSampler {
    n: usize,
    replacement: bool,
    num_samples: usize,
    generator: Option<Generator>,
}

impl RandomSampler {
    /// `num_samples` defaults to `n`. Without a generator each epoch seeds
    /// a fresh one from the global generator, as PyTorch does.
    pub fn new(
        n: usize,
        replacement: bool,
        num_samples: Option<usize>,
        generator: Option<Generator>,
    ) -> Result<RandomSampler> {
        let num_samples = num_samples.unwrap_or(n);
        ensure!(
            num_samples > 0,
            Value,
            "num_samples should be a positive integer value, but got num_samples={num_samples}"
        );
        Ok(RandomSampler {
            n,
            replacement,
            num_samples,
            generator,
        })
    }
}

/// A seed drawn from `g` (or the global generator) as PyTorch's
/// `torch.empty((), dtype=torch.int64).random_()` does.
pub(crate) fn draw_seed(g: Option<&Generator>) -> u64 {
    g.unwrap_or_else(|| default_generator()).next_u64() % (1u64 << 63)
}

impl Sampler for RandomSampler {
    fn indices(&mut self) -> Result<Vec<usize>> {
        let g = match &self.generator {
            Some(g) => g.clone(),
            None => Generator::new(draw_seed(None)),
        };
        let (n, k) = (self.n, self.num_samples);
        let mut out = Vec::with_capacity(k);
        if self.replacement {
            ensure!(
                n > 0,
                Value,
                "RandomSampler: cannot draw from an empty dataset"
            );
            for chunk in std::iter::repeat_n(32, k / 32).chain(std::iter::once(k % 32)) {
                let t = Tensor::randint_with(0, n as i64, &[chunk], DType::I64, Some(&g))?;
                out.extend(to_usize(&t)?);
            }
        } else {
            for _ in 0..k / n.max(1) {
                out.extend(to_usize(&Tensor::randperm(n, Some(&g))?)?);
            }
            let perm = to_usize(&Tensor::randperm(n, Some(&g))?)?;
            out.extend(&perm[..k % n.max(1)]);
        }
        Ok(out)
    }
    fn len(&self) -> usize {
        self.num_samples
    }
}

/// The given indices in random order (`SubsetRandomSampler(indices)`).
pub struct SubsetRandomSampler {
    indices: Vec<usize>,
    generator: Option<Generator>,
}

impl SubsetRandomSampler {
    /// `SubsetRandomSampler(indices, generator)`.
    pub fn new(indices: Vec<usize>, generator: Option<Generator>) -> SubsetRandomSampler {
        SubsetRandomSampler { indices, generator }
    }
}

impl Sampler for SubsetRandomSampler {
    fn indices(&mut self) -> Result<Vec<usize>> {
        let perm = to_usize(&Tensor::randperm(
            self.indices.len(),
            self.generator.as_ref(),
        )?)?;
        Ok(perm.into_iter().map(|i| self.indices[i]).collect())
    }
    fn len(&self) -> usize {
        self.indices.len()
    }
}

/// Indices drawn with probability proportional to `weights`
/// (`WeightedRandomSampler(weights, num_samples, replacement=True)`).
pub struct WeightedRandomSampler {
    weights: Tensor,
    num_samples: usize,
    replacement: bool,
    generator: Option<Generator>,
}

impl WeightedRandomSampler {
    /// `WeightedRandomSampler(weights, num_samples, replacement, generator)`.
    pub fn new(
        weights: &[f64],
        num_samples: usize,
        replacement: bool,
        generator: Option<Generator>,
    ) -> Result<WeightedRandomSampler> {
        ensure!(
            num_samples > 0,
            Value,
            "num_samples should be a positive integer value, but got num_samples={num_samples}"
        );
        Ok(WeightedRandomSampler {
            weights: Tensor::from_slice(weights),
            num_samples,
            replacement,
            generator,
        })
    }
}

impl Sampler for WeightedRandomSampler {
    fn indices(&mut self) -> Result<Vec<usize>> {
        to_usize(&self.weights.multinomial(
            self.num_samples,
            self.replacement,
            self.generator.as_ref(),
        )?)
    }
    fn len(&self) -> usize {
        self.num_samples
    }
}

/// Groups another sampler's indices into batches
/// (`BatchSampler(sampler, batch_size, drop_last)`).
pub struct BatchSampler {
    sampler: Box<dyn Sampler>,
    batch_size: usize,
    drop_last: bool,
}

impl BatchSampler {
    /// `BatchSampler(sampler, batch_size, drop_last)`; `batch_size > 0`.
    pub fn new(sampler: Box<dyn Sampler>, batch_size: usize, drop_last: bool) -> Result<Self> {
        ensure!(
            batch_size > 0,
            Value,
            "batch_size should be a positive integer value, but got batch_size={batch_size}"
        );
        Ok(BatchSampler {
            sampler,
            batch_size,
            drop_last,
        })
    }

    /// The batches of the next epoch.
    pub fn batches(&mut self) -> Result<Vec<Vec<usize>>> {
        let idx = self.sampler.indices()?;
        let mut out: Vec<Vec<usize>> = idx.chunks(self.batch_size).map(<[usize]>::to_vec).collect();
        if self.drop_last && out.last().is_some_and(|b| b.len() < self.batch_size) {
            out.pop();
        }
        Ok(out)
    }

    /// Batches per epoch (`len(batch_sampler)`).
    pub fn len(&self) -> usize {
        let n = self.sampler.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// Whether an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
