//! `torch.utils`: data loading, activation checkpointing and (feature
//! `tensorboard`) TensorBoard's event files.

/// `torch.utils.data`: datasets, samplers, `DataLoader`.
pub use ferrotorch_data as data;

/// `torch.utils.checkpoint`.
pub mod checkpoint {
    pub use ferrotorch_core::autograd::checkpoint::checkpoint;
}

#[cfg(feature = "tensorboard")]
pub mod tensorboard;
