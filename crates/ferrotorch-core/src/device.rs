//! Where a tensor's memory lives.

use std::fmt;

/// A device, as `torch.device`. Only `Cpu` has kernels today; the enum has
/// room for `Cuda` so that code matching on devices is written once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory.
    #[default]
    Cpu,
    /// A CUDA device by ordinal (no kernels yet; ops on it are errors).
    Cuda(usize),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
