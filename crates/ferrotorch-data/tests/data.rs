//! torch.utils.data against PyTorch (fixtures/data.json, made by
//! fixtures/gen_data.py): sampler index streams, random_split and a
//! shuffling loader under the same seeds; plus datasets, collation,
//! worker-pool determinism and the error cases.

use ferrotorch_core::native::random::{manual_seed, Generator};
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_data::*;
use serde_json::Value;
use std::sync::Arc;

fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/data.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ints(v: &Value) -> Vec<usize> {
    serde_json::from_value(v.clone()).unwrap()
}

fn g(seed: u64) -> Option<Generator> {
    Some(Generator::new(seed))
}

#[test]
fn samplers_draw_pytorchs_indices() -> Result<()> {
    let fx = load();
    assert_eq!(
        RandomSampler::new(10, false, None, g(1))?.indices()?,
        ints(&fx["random_perm"])
    );
    assert_eq!(
        RandomSampler::new(10, true, Some(70), g(2))?.indices()?,
        ints(&fx["random_replacement"])
    );
    assert_eq!(
        RandomSampler::new(6, false, Some(15), g(3))?.indices()?,
        ints(&fx["random_more_than_n"])
    );
    manual_seed(4);
    let mut two = RandomSampler::new(8, false, None, None)?.indices()?;
    two.extend(RandomSampler::new(8, false, None, None)?.indices()?);
    assert_eq!(two, ints(&fx["random_global_two_epochs"]));
    assert_eq!(
        SubsetRandomSampler::new(vec![10, 20, 30, 40, 50], g(5)).indices()?,
        ints(&fx["subset_random"])
    );
    let w = [0.1, 0.5, 2.0, 0.0, 1.0];
    assert_eq!(
        WeightedRandomSampler::new(&w, 12, true, g(6))?.indices()?,
        ints(&fx["weighted"])
    );
    let w = [0.1, 0.5, 2.0, 0.3, 1.0];
    assert_eq!(
        WeightedRandomSampler::new(&w, 4, false, g(7))?.indices()?,
        ints(&fx["weighted_no_replacement"])
    );
    let e = WeightedRandomSampler::new(&[], 3, true, None)?
        .indices()
        .unwrap_err();
    assert!(e.to_string().contains("no categories"));
    let mut b = BatchSampler::new(Box::new(SequentialSampler::new(10)), 3, true)?;
    let expected: Vec<Vec<usize>> = serde_json::from_value(fx["batch_drop_last"].clone()).unwrap();
    assert_eq!(b.batches()?, expected);
    assert_eq!(b.len(), 3);
    Ok(())
}

#[test]
fn random_split_matches_pytorch() -> Result<()> {
    let fx = load();
    let data = Arc::new(TensorDataset::new(vec![Tensor::arange(
        0,
        11,
        1,
        DType::I64,
    )?])?);
    let ten = Arc::new(Subset::new(data.clone(), (0..10).collect()));
    let parts = random_split(ten, Lengths::Counts(&[3, 7]), g(8).as_ref())?;
    let got: Vec<Vec<usize>> = parts.iter().map(|s| s.indices.clone()).collect();
    let expected: Vec<Vec<usize>> = serde_json::from_value(fx["split_counts"].clone()).unwrap();
    assert_eq!(got, expected);
    let parts = random_split(data, Lengths::Fractions(&[0.5, 0.3, 0.2]), g(9).as_ref())?;
    let got: Vec<Vec<usize>> = parts.iter().map(|s| s.indices.clone()).collect();
    let expected: Vec<Vec<usize>> = serde_json::from_value(fx["split_fractions"].clone()).unwrap();
    assert_eq!(got, expected);
    // The subsets fetch the underlying samples.
    assert_eq!(parts[0].get(0)?[0].item_f64()? as usize, expected[0][0]);
    let e = random_split(parts[0].dataset.clone(), Lengths::Counts(&[3, 3]), None)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "Sum of input lengths does not equal the length of the input dataset!"
    );
    Ok(())
}

fn xy() -> Result<Arc<TensorDataset>> {
    let x = Tensor::arange(0, 20, 1, DType::F32)?.reshape(&[10, 2])?;
    let y = Tensor::arange(0, 10, 1, DType::I64)?;
    Ok(Arc::new(TensorDataset::new(vec![x, y])?))
}

#[test]
fn shuffling_loader_matches_pytorch_and_workers_keep_order() -> Result<()> {
    let fx = load();
    let expected: Vec<Vec<Vec<usize>>> =
        serde_json::from_value(fx["loader_epochs"].clone()).unwrap();
    for workers in [0, 1, 3] {
        let opts = DataLoaderOptions {
            batch_size: 4,
            shuffle: true,
            seed: Some(10),
            num_workers: workers,
            ..Default::default()
        };
        let mut loader = DataLoader::new(xy()?, opts, None)?;
        assert_eq!(loader.len(), 3);
        for epoch in &expected {
            let mut got = Vec::new();
            for batch in loader.iter()? {
                let batch = batch?;
                let ys: Vec<usize> = batch[1]
                    .to_vec_i64()?
                    .into_iter()
                    .map(|v| v as usize)
                    .collect();
                // x rows are collated with their y.
                let xs = batch[0].to_vec::<f32>()?;
                for (k, yv) in ys.iter().enumerate() {
                    assert_eq!(xs[2 * k] as usize, 2 * yv);
                }
                got.push(ys);
            }
            assert_eq!(&got, epoch, "workers={workers}");
        }
    }
    Ok(())
}

#[test]
fn bootstrap_loader_as_in_the_seed() -> Result<()> {
    // RandomSampler(dataset, True, len(dataset)) and one full batch.
    let data = xy()?;
    let sampler = RandomSampler::new(data.len(), true, Some(data.len()), g(0))?;
    let opts = DataLoaderOptions {
        batch_size: data.len(),
        ..Default::default()
    };
    let mut loader = DataLoader::new(data, opts, Some(Box::new(sampler)))?;
    let batches: Vec<Vec<Tensor>> = loader.iter()?.collect::<Result<_>>()?;
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0][0].shape(), &[10, 2]);
    let ys = batches[0][1].to_vec_i64()?;
    let mut distinct = ys.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() < 10,
        "with replacement, a draw of 10 from 10 repeats (p = 1 - 10!/10^10)"
    );
    Ok(())
}

#[test]
fn datasets_and_errors() -> Result<()> {
    let data = xy()?;
    assert_eq!(data.len(), 10);
    let e = data.get(10).unwrap_err();
    assert_eq!(
        e.to_string(),
        "TensorDataset: index 10 is out of range for a dataset of length 10"
    );
    let e = TensorDataset::new(vec![Tensor::zeros(&[3], ())?, Tensor::zeros(&[4], ())?])
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "Size mismatch between tensors: [3] and [4]");
    let cat = ConcatDataset::new(vec![
        Subset::new(data.clone(), vec![1, 2]),
        Subset::new(data.clone(), vec![7]),
    ])?;
    assert_eq!(cat.len(), 3);
    assert_eq!(cat.cumulative_sizes(), &[2, 3]);
    assert_eq!(cat.get(2)?[1].item_f64()?, 7.0);
    assert!(cat.get(3).is_err());
    let opts = DataLoaderOptions {
        shuffle: true,
        ..Default::default()
    };
    let e = DataLoader::new(
        data.clone(),
        opts,
        Some(Box::new(SequentialSampler::new(10))),
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "sampler option is mutually exclusive with shuffle"
    );
    let e = DataLoader::new(
        data.clone(),
        DataLoaderOptions {
            batch_size: 0,
            ..Default::default()
        },
        None,
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "batch_size should be a positive integer value, but got batch_size=0"
    );
    // drop_last and a custom collate.
    let opts = DataLoaderOptions {
        batch_size: 4,
        drop_last: true,
        num_workers: 2,
        ..Default::default()
    };
    let collate: Collate<Vec<Tensor>, usize> = Arc::new(|s: Vec<Vec<Tensor>>| Ok(s.len()));
    let mut loader = DataLoader::with_collate(data, opts, None, collate)?;
    assert_eq!(loader.iter()?.collect::<Result<Vec<_>>>()?, vec![4, 4]);
    // Dropping an iterator early stops its workers.
    let mut it = loader.iter()?;
    assert_eq!(it.next().transpose()?, Some(4));
    drop(it);
    Ok(())
}

/// Arguments that make this test binary, started again as a worker, run
/// only `test` (which calls `run_if_worker` first: Note [Process workers]).
fn worker_command(test: &str) -> WorkerCommand {
    WorkerCommand {
        program: None,
        args: Some(
            ["--exact", test, "--test-threads", "1", "--nocapture"]
                .iter()
                .map(|s| s.into())
                .collect(),
        ),
    }
}

#[test]
fn worker_processes_give_pytorchs_batches_through_shared_memory() -> Result<()> {
    run_if_worker::<TensorDataset>();
    let fx = load();
    let expected: Vec<Vec<Vec<usize>>> =
        serde_json::from_value(fx["loader_epochs"].clone()).unwrap();
    let opts = DataLoaderOptions {
        batch_size: 4,
        shuffle: true,
        seed: Some(10),
        num_workers: 2,
        ..Default::default()
    };
    let cmd = worker_command("worker_processes_give_pytorchs_batches_through_shared_memory");
    let data = xy()?;
    let mut loader = DataLoader::with_worker_processes(data.clone(), opts, None, cmd)?;
    for epoch in &expected {
        let mut got = Vec::new();
        for batch in loader.iter()? {
            let batch = batch?;
            assert!(batch[0].is_shared() && batch[1].is_shared());
            let ys: Vec<usize> = batch[1].to_vec_i64()?.iter().map(|&v| v as usize).collect();
            let xs = batch[0].to_vec::<f32>()?;
            for (k, yv) in ys.iter().enumerate() {
                assert_eq!(xs[2 * k] as usize, 2 * yv);
            }
            got.push(ys);
        }
        assert_eq!(&got, epoch);
    }
    // the dataset moved into shared memory once, in place
    assert!(data.tensors()[0].is_shared());
    // leaving an epoch early stops its workers
    let mut it = loader.iter()?;
    it.next().unwrap()?;
    drop(it);
    Ok(())
}

/// Datasets whose worker fails at index 3 (`Fragile`) or dies at index 7
/// (`Dying`).
macro_rules! fragile {
    ($name:ident, $at:expr, $what:expr) => {
        struct $name(TensorDataset);

        impl Dataset for $name {
            type Item = Vec<Tensor>;
            fn len(&self) -> usize {
                self.0.len()
            }
            fn get(&self, i: usize) -> Result<Vec<Tensor>> {
                if i == $at && std::env::var_os(WORKER_ENV).is_some() {
                    $what
                }
                self.0.get(i)
            }
        }

        impl ProcessDataset for $name {
            fn to_parts(&self) -> Result<(Vec<Tensor>, Vec<u8>)> {
                self.0.to_parts()
            }
            fn from_parts(tensors: Vec<Tensor>, bytes: &[u8]) -> Result<Self> {
                Ok($name(TensorDataset::from_parts(tensors, bytes)?))
            }
        }
    };
}

fragile!(
    Fragile,
    3,
    return Err(ferrotorch_core::Error::new(
        ferrotorch_core::ErrorKind::Index,
        "index 3 is cursed",
    ))
);
fragile!(Dying, 7, std::process::abort());

#[test]
fn a_worker_process_error_is_raised_with_its_message() -> Result<()> {
    run_if_worker::<Fragile>();
    let opts = DataLoaderOptions {
        batch_size: 2,
        num_workers: 2,
        ..Default::default()
    };
    let cmd = worker_command("a_worker_process_error_is_raised_with_its_message");
    let data = Arc::new(Fragile(TensorDataset::new(xy()?.tensors().to_vec())?));
    let mut loader = DataLoader::with_worker_processes(data, opts, None, cmd)?;
    let got: Vec<Result<Vec<Tensor>>> = loader.iter()?.collect();
    assert_eq!(got[0].as_ref().unwrap()[1].to_vec_i64()?, [0, 1]);
    let e = got[1].as_ref().unwrap_err().to_string();
    assert!(
        e.contains("DataLoader worker process") && e.contains("index 3 is cursed"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_worker_process_that_dies_is_an_error_not_a_hang() -> Result<()> {
    run_if_worker::<Dying>();
    let opts = DataLoaderOptions {
        batch_size: 2,
        num_workers: 2,
        ..Default::default()
    };
    let cmd = worker_command("a_worker_process_that_dies_is_an_error_not_a_hang");
    let data = Arc::new(Dying(TensorDataset::new(xy()?.tensors().to_vec())?));
    let mut loader = DataLoader::with_worker_processes(data, opts, None, cmd)?;
    let got: Vec<Result<Vec<Tensor>>> = loader.iter()?.collect();
    // batches 0-2 may arrive before the worker holding batch 3 (indices
    // 6 and 7) dies; batch 3 is the error
    assert!(got[..3]
        .iter()
        .all(|b| b.is_ok() || b.as_ref().unwrap_err().to_string().contains("killed")));
    let e = got[3].as_ref().unwrap_err().to_string();
    assert!(e.contains("is killed by signal: Aborted"), "{e}");
    Ok(())
}
