//! `FtDataLoader`: batches of a tensor dataset (`TensorDataset` with
//! `DataLoader`), shuffled by torch's random streams.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::status::{entry, put, Fail, FtStatus};
use crate::tensor::{out_tensor, slice, tensor, FtTensor};
use ferrotorch_core::Tensor;
use ferrotorch_data::{BatchIter, DataLoader, DataLoaderOptions, TensorDataset};
use parking_lot::Mutex;
use std::sync::Arc;

type Loader = DataLoader<TensorDataset, Vec<Tensor>>;

/// A loader and its epoch in progress.
pub struct LoaderState {
    loader: Loader,
    epoch: Option<BatchIter<TensorDataset, Vec<Tensor>>>,
}

/// A data loader over tensors sharing their first dimension
/// (Note [C handles]).
pub struct FtDataLoader {
    _opaque: [u8; 0],
}

handle_kind!(FtDataLoader, Mutex<LoaderState>, 0x7E07);

/// `DataLoader(TensorDataset(*tensors), batch_size, shuffle, drop_last)`;
/// `seed` (when not negative) fixes the shuffling order.
#[no_mangle]
pub extern "C" fn ft_data_loader_new(
    tensors: *const *const FtTensor,
    n: usize,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    seed: i64,
    out: *mut *mut FtDataLoader,
) -> FtStatus {
    let what = "ft_data_loader_new";
    entry(what, || {
        let ts = slice(what, tensors, n)?
            .iter()
            .map(|&h| tensor(what, h).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let data = Arc::new(TensorDataset::new(ts)?);
        let opts = DataLoaderOptions {
            batch_size,
            shuffle,
            drop_last,
            seed: u64::try_from(seed).ok(),
            ..Default::default()
        };
        let loader = DataLoader::new(data, opts, None)?;
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        let state = LoaderState {
            loader,
            epoch: None,
        };
        put(what, out, new_handle::<FtDataLoader>(Mutex::new(state)))
    })
}

/// Batches per epoch.
#[no_mangle]
pub extern "C" fn ft_data_loader_len(dl: *const FtDataLoader, out: *mut usize) -> FtStatus {
    let what = "ft_data_loader_len";
    entry(what, || {
        put(
            what,
            out,
            get::<FtDataLoader>(what, dl)?.lock().loader.len(),
        )
    })
}

/// The next batch: one tensor per dataset tensor, written as new handles
/// to `batch[0..capacity]`, their number to `n`. At the end of an epoch
/// `n` is 0, and the next call starts a new epoch.
#[no_mangle]
pub extern "C" fn ft_data_loader_next(
    dl: *const FtDataLoader,
    batch: *mut *mut FtTensor,
    capacity: usize,
    n: *mut usize,
) -> FtStatus {
    let what = "ft_data_loader_next";
    entry(what, || {
        let mut st = get::<FtDataLoader>(what, dl)?.lock();
        if st.epoch.is_none() {
            let it = st.loader.iter()?;
            st.epoch = Some(it);
        }
        let next = st.epoch.as_mut().expect("set above").next();
        let Some(b) = next else {
            st.epoch = None;
            return put(what, n, 0);
        };
        let b = b?;
        if b.len() > capacity {
            return Err(Fail::new(
                FtStatus::FtErrorValue,
                format!(
                    "{what}: a batch has {} tensors; the array holds {capacity}",
                    b.len()
                ),
            ));
        }
        put(what, n, b.len())?;
        for (i, t) in b.into_iter().enumerate() {
            // SAFETY: i < capacity slots, as the caller promises.
            out_tensor(what, unsafe { batch.add(i) }, t)?;
        }
        Ok(())
    })
}

/// Release a data loader (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_data_loader_free(dl: *mut FtDataLoader) -> FtStatus {
    entry("ft_data_loader_free", || free("ft_data_loader_free", dl))
}
