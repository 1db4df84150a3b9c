//! PyTorch's files, read and written natively and safely: the zip
//! container ([`zip`]), a pickle reader with no general callables
//! ([`pickle`], Note [A pickle reader without callables]), its writer
//! ([`pickle_write`]) and `.pt` checkpoints as `torch.save` writes them
//! ([`pt`]; its stream before 1.6 in `legacy_stream`, its tar layout
//! before 0.4 in [`legacy_tar`]).

#![deny(missing_docs)]

mod legacy_stream;
pub mod legacy_tar;
pub mod mmap;
pub mod pickle;
pub mod pickle_write;
pub mod pt;
pub mod zip;
