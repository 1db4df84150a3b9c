//! Every integration test of ferrotorch-nn, linked into one binary
//! (Note [One test binary per crate] in ferrotorch-core's tests): tests that
//! seed or draw from the global generator share `common::rng_lock`.

mod common;
mod functional;
mod layers;
mod models;
mod modules;
mod rnn;
mod safetensors;
mod transformer;
