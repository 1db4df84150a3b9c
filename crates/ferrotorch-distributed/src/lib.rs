//! `torch.distributed` for ferrotorch: stores for rendezvous ([`store`])
//! and process groups on existing collective engines — Gloo
//! ([`gloo::ProcessGroupGloo`], Debian's `libgloo-dev` through a C++ shim)
//! and MPI ([`mpi::ProcessGroupMPI`], Open MPI through a C shim), both
//! behind one tensor-level [`ProcessGroup`]. No collective algorithm of
//! our own: the store is rendezvous only.

pub mod api;
pub mod file_store;
pub mod gloo;
pub mod group;
pub mod mpi;
pub mod parallel;
pub mod store;

pub use api::{
    all_gather, all_reduce, barrier, broadcast, default_group, destroy_process_group, get_backend,
    get_rank, get_world_size, init_process_group, init_process_group_with, is_initialized,
    new_group, recv, reduce, send, InitOptions,
};
pub use file_store::FileStore;
pub use gloo::ProcessGroupGloo;
pub use group::{Engine, ProcessGroup};
pub use mpi::ProcessGroupMPI;
pub use store::{HashStore, PrefixStore, Store, TCPStore};

/// `torch.distributed.ReduceOp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// `SUM`
    Sum,
    /// `AVG` (floating point: the sum over the world size)
    Avg,
    /// `PRODUCT`
    Product,
    /// `MIN`
    Min,
    /// `MAX`
    Max,
}

/// `torch.distributed.is_gloo_available()`.
pub fn is_gloo_available() -> bool {
    gloo::is_available()
}

/// `torch.distributed.is_mpi_available()`.
pub fn is_mpi_available() -> bool {
    mpi::is_available()
}
