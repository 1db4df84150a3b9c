//! `torch.utils.data` for ferrotorch: map-style datasets, samplers that
//! draw PyTorch's random streams, and a `DataLoader` with a prefetching
//! worker pool.
//!
//! ```
//! use ferrotorch_core::{Result, Tensor};
//! use ferrotorch_data::{DataLoader, DataLoaderOptions, TensorDataset};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<()> {
//! let x = Tensor::arange(0, 10, 1, ())?.reshape(&[5, 2])?;
//! let y = Tensor::arange(0, 5, 1, ())?;
//! let data = Arc::new(TensorDataset::new(vec![x, y])?);
//! let opts = DataLoaderOptions { batch_size: 2, shuffle: true, seed: Some(0), ..Default::default() };
//! let mut loader = DataLoader::new(data, opts, None)?;
//! for batch in loader.iter()? {
//!     let batch = batch?;                      // [x rows, y values]
//!     assert_eq!(batch[0].shape()[1], 2);
//! }
//! # Ok(())
//! # }
//! ```

mod dataset;
mod loader;
#[cfg(unix)]
mod process;
mod sampler;

pub use dataset::{random_split, ConcatDataset, Dataset, Lengths, Subset, TensorDataset};
pub use loader::{default_collate, BatchIter, Collate, DataLoader, DataLoaderOptions};
#[cfg(unix)]
pub use process::{run_if_worker, ProcessDataset, WorkerCommand, WORKER_ENV};
pub use sampler::{
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
};
