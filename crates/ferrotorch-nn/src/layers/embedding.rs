//! `nn.Embedding`.

use super::linear::empty_param;
use crate::functional as F;
use crate::{init, Forward, Module, ModuleState, Parameter};
use ferrotorch_core::{ensure, Result, Tensor};

/// A lookup table of `num_embeddings` vectors of size `embedding_dim`
/// (`nn.Embedding(num_embeddings, embedding_dim, padding_idx=None)`):
/// weights N(0, 1), the padding row zero and never updated.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Parameter,
    num_embeddings: usize,
    embedding_dim: usize,
    #[module(skip)]
    padding_idx: Option<usize>,
    state: ModuleState,
}

impl Embedding {
    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx)`; a
    /// negative `padding_idx` counts from the end, as in PyTorch.
    pub fn new(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<i64>,
    ) -> Result<Embedding> {
        let n = num_embeddings as i64;
        let padding_idx = match padding_idx {
            Some(p) => {
                ensure!(
                    (-n..n).contains(&p),
                    Value,
                    "Padding_idx must be within num_embeddings"
                );
                Some(if p < 0 { p + n } else { p } as usize)
            }
            None => None,
        };
        let weight = empty_param(&[num_embeddings, embedding_dim])?;
        init::normal_(&weight.tensor(), 0.0, 1.0, None)?;
        if let Some(p) = padding_idx {
            init::zeros_(&weight.tensor().select(0, p as i64)?)?;
        }
        Ok(Embedding {
            weight,
            num_embeddings,
            embedding_dim,
            padding_idx,
            state: ModuleState::new(),
        })
    }

    fn describe(&self) -> String {
        let mut s = format!("{}, {}", self.num_embeddings, self.embedding_dim);
        if let Some(p) = self.padding_idx {
            s += &format!(", padding_idx={p}");
        }
        s
    }
}

impl Forward for Embedding {
    fn forward(&self, indices: &Tensor) -> Result<Tensor> {
        F::embedding(
            indices,
            &self.weight.tensor(),
            self.padding_idx.map(|p| p as i64),
        )
    }
}
