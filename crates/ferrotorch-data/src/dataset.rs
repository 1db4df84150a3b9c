//! Datasets: the [`Dataset`] trait, `TensorDataset`, `Subset`,
//! `ConcatDataset` and `random_split`.

use ferrotorch_core::native::random::Generator;
use ferrotorch_core::{bail, ensure, Result, Tensor};
use std::sync::Arc;

/// A map-style dataset (`torch.utils.data.Dataset`): `len` items fetched
/// by index. Shared across loader workers, so `Send + Sync`.
pub trait Dataset: Send + Sync {
    /// One sample.
    type Item: Send + 'static;
    /// Number of samples (`len(dataset)`).
    fn len(&self) -> usize;
    /// Sample `index` (`dataset[index]`); an out-of-range index is an error.
    fn get(&self, index: usize) -> Result<Self::Item>;
    /// Whether the dataset is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        (**self).get(index)
    }
}

fn check_index(what: &str, index: usize, len: usize) -> Result<()> {
    ensure!(
        index < len,
        Index,
        "{what}: index {index} is out of range for a dataset of length {len}"
    );
    Ok(())
}

/// Samples are the rows of several tensors sharing their first dimension
/// (`TensorDataset(*tensors)`); an item is one row of each.
#[derive(Clone)]
pub struct TensorDataset {
    tensors: Vec<Tensor>,
}

impl TensorDataset {
    /// Wrap `tensors`; they must agree on their first dimension.
    pub fn new(tensors: Vec<Tensor>) -> Result<TensorDataset> {
        ensure!(
            !tensors.is_empty(),
            Value,
            "TensorDataset needs at least one tensor"
        );
        let n = tensors[0].shape().first().copied();
        for t in &tensors {
            ensure!(
                t.dim() > 0 && t.shape().first().copied() == n,
                Runtime,
                "Size mismatch between tensors: {:?} and {:?}",
                tensors[0].shape(),
                t.shape()
            );
        }
        Ok(TensorDataset { tensors })
    }

    /// The wrapped tensors (`dataset.tensors`).
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }
}

impl Dataset for TensorDataset {
    type Item = Vec<Tensor>;
    fn len(&self) -> usize {
        self.tensors[0].shape()[0]
    }
    fn get(&self, index: usize) -> Result<Vec<Tensor>> {
        check_index("TensorDataset", index, self.len())?;
        self.tensors
            .iter()
            .map(|t| t.select(0, index as i64))
            .collect()
    }
}

/// The samples of `dataset` at `indices` (`Subset(dataset, indices)`).
#[derive(Clone)]
pub struct Subset<D> {
    /// The underlying dataset.
    pub dataset: Arc<D>,
    /// Its indices, in order.
    pub indices: Vec<usize>,
}

impl<D: Dataset> Subset<D> {
    /// `Subset(dataset, indices)`; indices are checked when fetched.
    pub fn new(dataset: Arc<D>, indices: Vec<usize>) -> Subset<D> {
        Subset { dataset, indices }
    }
}

impl<D: Dataset> Dataset for Subset<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        self.indices.len()
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        check_index("Subset", index, self.indices.len())?;
        self.dataset.get(self.indices[index])
    }
}

/// Several datasets one after another (`ConcatDataset(datasets)`).
pub struct ConcatDataset<D> {
    datasets: Vec<D>,
    cumulative: Vec<usize>,
}

impl<D: Dataset> ConcatDataset<D> {
    /// `ConcatDataset(datasets)`; at least one dataset.
    pub fn new(datasets: Vec<D>) -> Result<ConcatDataset<D>> {
        ensure!(
            !datasets.is_empty(),
            Value,
            "datasets should not be an empty iterable"
        );
        let cumulative = datasets
            .iter()
            .scan(0, |acc, d| {
                *acc += d.len();
                Some(*acc)
            })
            .collect();
        Ok(ConcatDataset {
            datasets,
            cumulative,
        })
    }

    /// The end offset of each dataset (`cumulative_sizes`).
    pub fn cumulative_sizes(&self) -> &[usize] {
        &self.cumulative
    }
}

impl<D: Dataset> Dataset for ConcatDataset<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        *self.cumulative.last().unwrap_or(&0)
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        check_index("ConcatDataset", index, self.len())?;
        let d = self.cumulative.partition_point(|&end| end <= index);
        let start = if d == 0 { 0 } else { self.cumulative[d - 1] };
        self.datasets[d].get(index - start)
    }
}

/// How [`random_split`] sizes its parts.
pub enum Lengths<'a> {
    /// Exact sizes summing to the dataset's length.
    Counts(&'a [usize]),
    /// Fractions summing to 1; remainders go round-robin to the first parts.
    Fractions(&'a [f64]),
}

/// Split `dataset` into non-overlapping random subsets
/// (`random_split(dataset, lengths, generator)`), drawing one `randperm`
/// as PyTorch does.
pub fn random_split<D: Dataset>(
    dataset: Arc<D>,
    lengths: Lengths<'_>,
    generator: Option<&Generator>,
) -> Result<Vec<Subset<D>>> {
    let n = dataset.len();
    let counts: Vec<usize> = match lengths {
        Lengths::Counts(c) => c.to_vec(),
        Lengths::Fractions(f) => {
            let total: f64 = f.iter().sum();
            ensure!(
                (total - 1.0).abs() < 1e-9 && f.iter().all(|x| (0.0..=1.0).contains(x)),
                Value,
                "Sum of input lengths does not equal the length of the input dataset!"
            );
            let mut c: Vec<usize> = f.iter().map(|x| (n as f64 * x).floor() as usize).collect();
            let rem = n - c.iter().sum::<usize>();
            let parts = c.len();
            for i in 0..rem {
                c[i % parts] += 1;
            }
            c
        }
    };
    if counts.iter().sum::<usize>() != n {
        bail!(
            Value,
            "Sum of input lengths does not equal the length of the input dataset!"
        );
    }
    let perm = Tensor::randperm(n, generator)?.to_vec_i64()?;
    let mut start = 0;
    Ok(counts
        .iter()
        .map(|&c| {
            let idx = perm[start..start + c].iter().map(|&i| i as usize).collect();
            start += c;
            Subset::new(dataset.clone(), idx)
        })
        .collect())
}
