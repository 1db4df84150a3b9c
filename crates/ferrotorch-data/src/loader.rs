//! `DataLoader`: batches from a dataset in sampler order, collated, with an
//! optional pool of worker threads that prefetch batches ahead of the
//! training loop.
//!
//! # Note [Loader workers]
//! Each epoch's batches are numbered and queued; `num_workers` threads take
//! them in order, fetch and collate, and send them back; the iterator
//! hands them out by number, so the order — and so the run, for a given
//! seed — does not depend on thread timing. Workers are threads, or, for a
//! loader made by [`DataLoader::with_worker_processes`], processes (Note
//! [Process workers]); they stop when the iterator is dropped.

use crate::dataset::Dataset;
use crate::sampler::{draw_seed, BatchSampler, RandomSampler, Sampler, SequentialSampler};
use ferrotorch_core::native::random::Generator;
use ferrotorch_core::native::stack;
use ferrotorch_core::{ensure, Result, Tensor};
use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A function turning a list of samples into a batch (`collate_fn`).
pub type Collate<I, B> = Arc<dyn Fn(Vec<I>) -> Result<B> + Send + Sync>;

/// Stack each field of the samples along a new first dimension
/// (`default_collate` for samples that are tuples of tensors).
pub fn default_collate(samples: Vec<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    collate_fields(samples, |column| stack(column, 0))
}

/// Stack each field of the samples with `stack` (a worker process stacks
/// into shared memory).
pub(crate) fn collate_fields(
    samples: Vec<Vec<Tensor>>,
    stack: impl Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    let fields = samples.first().map_or(0, Vec::len);
    ensure!(
        samples.iter().all(|s| s.len() == fields),
        Runtime,
        "each element in list of batch should be of equal size"
    );
    (0..fields)
        .map(|f| {
            let column: Vec<Tensor> = samples.iter().map(|s| s[f].clone()).collect();
            stack(&column)
        })
        .collect()
}

/// Options of a [`DataLoader`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct DataLoaderOptions {
    /// Samples per batch (default 1).
    pub batch_size: usize,
    /// Reshuffle every epoch (default false); exclusive with a sampler.
    pub shuffle: bool,
    /// Drop a last, incomplete batch (default false).
    pub drop_last: bool,
    /// Worker threads prefetching batches; 0 loads in the calling thread.
    pub num_workers: usize,
    /// Batches each worker may prepare ahead (default 2).
    pub prefetch_factor: usize,
    /// Seed of the loader's own generator (PyTorch's `generator=`); `None`
    /// draws from the global generator.
    pub seed: Option<u64>,
}

impl Default for DataLoaderOptions {
    fn default() -> Self {
        DataLoaderOptions {
            batch_size: 1,
            shuffle: false,
            drop_last: false,
            num_workers: 0,
            prefetch_factor: 2,
            seed: None,
        }
    }
}

/// Where a loader with worker processes gets one epoch's batches.
pub(crate) trait BatchSource<B>: Send {
    /// Batch number `no`, in order.
    fn batch(&mut self, no: usize) -> Result<B>;
}

/// Starts an epoch's worker processes: (jobs, workers, batches in flight).
type Starter<B> = Arc<dyn Fn(Jobs, usize, usize) -> Result<Box<dyn BatchSource<B>>> + Send + Sync>;

/// Batches of a dataset (`torch.utils.data.DataLoader`).
pub struct DataLoader<D: Dataset, B> {
    dataset: Arc<D>,
    batches: BatchSampler,
    options: DataLoaderOptions,
    generator: Option<Generator>,
    collate: Collate<D::Item, B>,
    processes: Option<Starter<B>>,
}

impl<D: Dataset<Item = Vec<Tensor>> + 'static> DataLoader<D, Vec<Tensor>> {
    /// A loader stacking tensor samples with [`default_collate`].
    pub fn new(
        dataset: Arc<D>,
        options: DataLoaderOptions,
        sampler: Option<Box<dyn Sampler>>,
    ) -> Result<Self> {
        DataLoader::with_collate(dataset, options, sampler, Arc::new(default_collate))
    }
}

#[cfg(unix)]
impl<D: crate::process::ProcessDataset> DataLoader<D, Vec<Tensor>> {
    /// A loader whose `num_workers` workers are processes: this program
    /// started again by `command` (Note [Process workers]; the program must
    /// call [`crate::run_if_worker`]`::<D>()` first in `main`). Batches are
    /// stacked into shared memory in the workers and arrive without a copy.
    pub fn with_worker_processes(
        dataset: Arc<D>,
        options: DataLoaderOptions,
        sampler: Option<Box<dyn Sampler>>,
        command: crate::process::WorkerCommand,
    ) -> Result<Self> {
        ensure!(
            options.num_workers > 0,
            Value,
            "worker processes need num_workers > 0"
        );
        let mut loader = DataLoader::new(dataset.clone(), options, sampler)?;
        loader.processes = Some(Arc::new(move |jobs, n, cap| {
            let pool = crate::process::ProcessPool::start(&*dataset, n, cap, &command, jobs)?;
            Ok(Box::new(pool) as Box<dyn BatchSource<Vec<Tensor>>>)
        }));
        Ok(loader)
    }
}

impl<D: Dataset + 'static, B: Send + 'static> DataLoader<D, B> {
    /// A loader with its own `collate_fn`.
    pub fn with_collate(
        dataset: Arc<D>,
        options: DataLoaderOptions,
        sampler: Option<Box<dyn Sampler>>,
        collate: Collate<D::Item, B>,
    ) -> Result<Self> {
        ensure!(
            !(options.shuffle && sampler.is_some()),
            Value,
            "sampler option is mutually exclusive with shuffle"
        );
        ensure!(
            options.num_workers == 0 || options.prefetch_factor > 0,
            Value,
            "prefetch_factor option must be positive when num_workers > 0"
        );
        let generator = options.seed.map(Generator::new);
        let sampler: Box<dyn Sampler> = match sampler {
            Some(s) => s,
            None if options.shuffle => Box::new(RandomSampler::new(
                dataset.len(),
                false,
                None,
                generator.clone(),
            )?),
            None => Box::new(SequentialSampler::new(dataset.len())),
        };
        let batches = BatchSampler::new(sampler, options.batch_size, options.drop_last)?;
        Ok(DataLoader {
            dataset,
            batches,
            options,
            generator,
            collate,
            processes: None,
        })
    }

    /// Batches per epoch (`len(loader)`).
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    /// Whether an epoch has no batches.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Start an epoch (`iter(loader)`): draws the epoch's order now.
    pub fn iter(&mut self) -> Result<BatchIter<D, B>> {
        // PyTorch draws a base seed for its workers first; keep the stream.
        let _base_seed = draw_seed(self.generator.as_ref());
        let jobs: Jobs = self.batches.batches()?.into_iter().enumerate().collect();
        let total = jobs.len();
        let (dataset, collate) = (self.dataset.clone(), self.collate.clone());
        if self.options.num_workers == 0 {
            return Ok(BatchIter {
                inline: Some((dataset, collate, jobs)),
                pool: None,
                procs: None,
                next: 0,
                total,
            });
        }
        let cap = self.options.num_workers * self.options.prefetch_factor;
        if let Some(start) = &self.processes {
            return Ok(BatchIter {
                inline: None,
                pool: None,
                procs: Some(start(jobs, self.options.num_workers, cap)?),
                next: 0,
                total,
            });
        }
        let queue = Arc::new(Mutex::new(jobs));
        let (tx, rx) = sync_channel(cap);
        let workers = (0..self.options.num_workers)
            .map(|_| {
                let (queue, tx) = (queue.clone(), tx.clone());
                let (dataset, collate) = (dataset.clone(), collate.clone());
                std::thread::spawn(move || loop {
                    let job = queue.lock().map(|mut q| q.pop_front()).ok().flatten();
                    let Some((no, indices)) = job else { break };
                    let batch = fetch(&*dataset, &*collate, &indices);
                    if tx.send((no, batch)).is_err() {
                        break;
                    }
                })
            })
            .collect();
        Ok(BatchIter {
            inline: None,
            procs: None,
            pool: Some(Pool {
                queue,
                rx,
                workers,
                ready: BTreeMap::new(),
            }),
            next: 0,
            total,
        })
    }
}

fn fetch<D: Dataset, B>(
    dataset: &D,
    collate: &(dyn Fn(Vec<D::Item>) -> Result<B> + Send + Sync),
    indices: &[usize],
) -> Result<B> {
    let samples = indices
        .iter()
        .map(|&i| dataset.get(i))
        .collect::<Result<Vec<_>>>()?;
    collate(samples)
}

/// Numbered batches of indices still to load.
pub(crate) type Jobs = VecDeque<(usize, Vec<usize>)>;

type Inline<D, B> = (Arc<D>, Collate<<D as Dataset>::Item, B>, Jobs);

struct Pool<B> {
    queue: Arc<Mutex<Jobs>>,
    rx: Receiver<(usize, Result<B>)>,
    workers: Vec<JoinHandle<()>>,
    ready: BTreeMap<usize, Result<B>>,
}

/// One epoch of batches, in sampler order. See Note [Loader workers].
pub struct BatchIter<D: Dataset, B> {
    inline: Option<Inline<D, B>>,
    pool: Option<Pool<B>>,
    procs: Option<Box<dyn BatchSource<B>>>,
    next: usize,
    total: usize,
}

impl<D: Dataset, B> Iterator for BatchIter<D, B> {
    type Item = Result<B>;

    fn next(&mut self) -> Option<Result<B>> {
        if self.next == self.total {
            return None;
        }
        self.next += 1;
        if let Some((dataset, collate, jobs)) = &mut self.inline {
            let (_, indices) = jobs.pop_front()?;
            return Some(fetch(&**dataset, &**collate, &indices));
        }
        if let Some(procs) = &mut self.procs {
            return Some(procs.batch(self.next - 1));
        }
        let pool = self.pool.as_mut()?;
        let want = self.next - 1;
        loop {
            if let Some(b) = pool.ready.remove(&want) {
                return Some(b);
            }
            match pool.rx.recv() {
                Ok((no, b)) => {
                    pool.ready.insert(no, b);
                }
                Err(_) => {
                    return Some(Err(ferrotorch_core::Error::new(
                        ferrotorch_core::ErrorKind::Runtime,
                        "DataLoader worker exited unexpectedly",
                    )))
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.total - self.next;
        (left, Some(left))
    }
}

impl<D: Dataset, B> Drop for BatchIter<D, B> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            if let Ok(mut q) = pool.queue.lock() {
                q.clear();
            }
            drop(pool.rx);
            for w in pool.workers {
                let _ = w.join();
            }
        }
    }
}
