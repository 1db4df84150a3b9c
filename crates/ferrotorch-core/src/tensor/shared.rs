//! Tensors in shared memory: `share_memory_()`, `is_shared()`, and the
//! description of a shared tensor that travels to another process with its
//! file's descriptor (Note [Shared memory]).

use super::layout::Layout;
use super::Tensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::storage::shared::SharedFile;
use crate::storage::Storage;
use std::sync::Arc;

/// Most dimensions a received tensor may have (torch's limit is 64 too).
pub const MAX_SHARED_DIMS: usize = 64;

/// What a process needs, besides the file, to rebuild a shared tensor:
/// where its storage lies in the file and how the tensor views it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedTensorMeta {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub sizes: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Offset of element 0 in the storage, in elements.
    pub storage_offset: usize,
    /// Byte offset of the storage in its file.
    pub file_offset: usize,
    /// Bytes of the storage.
    pub storage_nbytes: usize,
    /// Whether the tensor requires grad (a leaf; its graph stays behind).
    pub requires_grad: bool,
}

impl Tensor {
    /// Move this tensor's storage into shared memory, in place
    /// (`Tensor.share_memory_()`): the tensor and every view of its storage
    /// now use the shared copy (Note [Moving a storage into shared
    /// memory]). A no-op when already shared.
    pub fn share_memory_(&self) -> Result<&Tensor> {
        self.storage().share_memory_()?;
        Ok(self)
    }

    /// Whether the storage is in shared memory (`Tensor.is_shared()`).
    pub fn is_shared(&self) -> bool {
        self.storage().is_shared()
    }

    /// Share this tensor's storage (moving it into shared memory when it
    /// is not yet) and describe it for another process: the file to send
    /// and what to send with it. This is what `torch.multiprocessing`'s
    /// reductions pickle.
    pub fn to_shared(&self) -> Result<(Arc<SharedFile>, SharedTensorMeta)> {
        self.share_memory_()?;
        let (file, file_offset) = self
            .storage()
            .shared_file()
            .expect("a shared storage has a file");
        let meta = SharedTensorMeta {
            dtype: self.dtype(),
            sizes: self.shape().to_vec(),
            strides: self.stride().to_vec(),
            storage_offset: self.storage_offset(),
            file_offset,
            storage_nbytes: self.storage().nbytes(),
            requires_grad: self.requires_grad(),
        };
        Ok((file, meta))
    }

    /// Rebuild a tensor another process shared: a view of `file` as `meta`
    /// describes, with every part of the description checked against the
    /// file first (Note [Shared memory]). Tensors rebuilt from one storage
    /// of one file share one storage here too, as views of it do there.
    pub fn from_shared(file: Arc<SharedFile>, meta: &SharedTensorMeta) -> Result<Tensor> {
        let op = "from_shared";
        crate::ensure!(
            meta.sizes.len() == meta.strides.len() && meta.sizes.len() <= MAX_SHARED_DIMS,
            Runtime,
            "{op}: {} sizes and {} strides (at most {MAX_SHARED_DIMS} dimensions)",
            meta.sizes.len(),
            meta.strides.len()
        );
        let storage = storage_for(file, meta.file_offset, meta.storage_nbytes)?;
        let layout = Layout::new(
            meta.sizes.iter().copied().collect(),
            meta.strides.iter().copied().collect(),
            meta.storage_offset,
        );
        super::layout::checked_numel(op, &meta.sizes)?;
        let t = Tensor::from_storage(storage, layout, meta.dtype)?;
        if meta.dtype == DType::Bool {
            t.check_bool_bytes(op)?;
        }
        if meta.requires_grad {
            t.requires_grad_(true)?;
        }
        Ok(t)
    }
}

/// `torch.stack(tensors, 0)` written straight into a new tensor in shared
/// memory (what a DataLoader worker's `default_collate` does, so that the
/// batch then crosses to the main process as a descriptor, never copied
/// again). Tensors `stack` would refuse give its error.
pub fn stack_shared(tensors: &[Tensor]) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        return crate::native::stack(tensors, 0);
    };
    if tensors
        .iter()
        .any(|t| t.shape() != first.shape() || t.dtype() != first.dtype())
    {
        return crate::native::stack(tensors, 0);
    }
    let mut sizes = vec![tensors.len()];
    sizes.extend_from_slice(first.shape());
    let numel = super::layout::checked_numel("stack", &sizes)?;
    let nbytes = numel.checked_mul(first.element_size()).ok_or_else(|| {
        crate::Error::new(
            crate::ErrorKind::Runtime,
            format!("stack: {sizes:?} elements overflow"),
        )
    })?;
    let storage = Storage::new_shared(nbytes)?;
    let out = Tensor::from_storage(storage, Layout::contiguous("stack", &sizes)?, first.dtype())?;
    let _g = crate::autograd::no_grad();
    for (i, t) in tensors.iter().enumerate() {
        out.select(0, i as i64)?.copy_(t)?;
    }
    Ok(out)
}

/// One storage per (file, offset, size): tensors received from one storage
/// alias here as they did in the sender.
fn storage_for(file: Arc<SharedFile>, offset: usize, nbytes: usize) -> Result<Storage> {
    use parking_lot::Mutex;
    use std::collections::HashMap;
    type Key = (usize, usize, usize);
    struct Known {
        map: HashMap<Key, crate::storage::WeakStorage>,
        prune_at: usize,
    }
    static STORAGES: Mutex<Option<Known>> = Mutex::new(None);
    let key = (file.base().as_ptr() as usize, offset, nbytes);
    let mut known = STORAGES.lock();
    let known = known.get_or_insert_with(|| Known {
        map: HashMap::new(),
        prune_at: 1024,
    });
    if let Some(s) = known.map.get(&key).and_then(|w| w.upgrade()) {
        return Ok(s);
    }
    let s = Storage::from_shared(file, offset, nbytes)?;
    if known.map.len() >= known.prune_at {
        // dead entries go in amortised O(1) per insert
        known.map.retain(|_, w| w.alive());
        known.prune_at = (2 * known.map.len()).max(1024);
    }
    known.map.insert(key, s.downgrade());
    Ok(s)
}
