//! `torch.distributed` for ferrotorch: stores for rendezvous ([`store`])
//! and process groups on existing collective engines — Gloo
//! ([`gloo::ProcessGroupGloo`], Debian's `libgloo-dev` through a C++ shim)
//! first, MPI next (issue 51). No collective algorithm of our own: the
//! store is rendezvous only.

pub mod gloo;
pub mod store;

pub use gloo::ProcessGroupGloo;
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
