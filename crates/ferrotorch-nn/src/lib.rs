//! `torch.nn` for ferrotorch. So far the functional layer
//! ([`functional`], PyTorch's `torch.nn.functional`): stateless
//! compositions of native ops, differentiable through them.

pub mod functional;
