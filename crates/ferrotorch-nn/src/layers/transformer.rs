//! `nn.MultiheadAttention`, `nn.TransformerEncoderLayer`,
//! `nn.TransformerEncoder`, `nn.TransformerDecoderLayer`, with PyTorch's
//! parameter names and initialisation order.

use super::linear::empty_param;
use crate::functional::{self as F, MhaParams};
use crate::{init, Dropout, Forward, LayerNorm, Linear, Module, ModuleState, Parameter};
use ferrotorch_core::{Result, Tensor};

/// `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
/// batch_first=False)`: packed `in_proj_weight` (Xavier-uniform), zero
/// biases, and an `out_proj` linear layer.
#[derive(Module)]
#[module(crate = "crate")]
pub struct MultiheadAttention {
    /// `[3E, E]` packed query/key/value projection.
    pub in_proj_weight: Parameter,
    /// `[3E]`.
    pub in_proj_bias: Option<Parameter>,
    /// The output projection.
    pub out_proj: Linear,
    #[module(skip)]
    num_heads: usize,
    dropout: f64,
    batch_first: bool,
    state: ModuleState,
}

impl MultiheadAttention {
    /// `nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first)`.
    pub fn new(
        embed_dim: usize,
        num_heads: usize,
        dropout: f64,
        bias: bool,
        batch_first: bool,
    ) -> Result<Self> {
        ferrotorch_core::ensure!(
            num_heads > 0 && embed_dim.is_multiple_of(num_heads),
            Value,
            "embed_dim must be divisible by num_heads"
        );
        let in_proj_weight = empty_param(&[3 * embed_dim, embed_dim])?;
        let in_proj_bias = bias.then(|| empty_param(&[3 * embed_dim])).transpose()?;
        // PyTorch makes out_proj (drawing its default init) before
        // _reset_parameters draws the Xavier in_proj: keep the order.
        let out_proj = Linear::new(embed_dim, embed_dim, bias)?;
        init::xavier_uniform_(&in_proj_weight.tensor(), 1.0, None)?;
        for b in in_proj_bias.iter().chain(&out_proj.bias) {
            init::zeros_(&b.tensor())?;
        }
        Ok(MultiheadAttention {
            in_proj_weight,
            in_proj_bias,
            out_proj,
            num_heads,
            dropout,
            batch_first,
            state: ModuleState::new(),
        })
    }

    /// `forward(query, key, value, key_padding_mask, need_weights,
    /// attn_mask, average_attn_weights)`: the output and, with
    /// `need_weights`, the attention weights.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        key_padding_mask: Option<&Tensor>,
        need_weights: bool,
        attn_mask: Option<&Tensor>,
        average_attn_weights: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let seq_first = |t: &Tensor| {
            if self.batch_first {
                t.transpose(0, 1)
            } else {
                Ok(t.clone())
            }
        };
        let (w, b) = (
            self.in_proj_weight.tensor(),
            self.in_proj_bias.as_ref().map(Parameter::tensor),
        );
        let (ow, ob) = (
            self.out_proj.weight.tensor(),
            self.out_proj.bias.as_ref().map(Parameter::tensor),
        );
        let p = MhaParams {
            num_heads: self.num_heads,
            in_proj_weight: &w,
            in_proj_bias: b.as_ref(),
            out_proj_weight: &ow,
            out_proj_bias: ob.as_ref(),
            dropout_p: self.dropout,
            training: self.state.is_training(),
        };
        let (out, weights) = F::multi_head_attention_forward(
            &seq_first(query)?,
            &seq_first(key)?,
            &seq_first(value)?,
            &p,
            key_padding_mask,
            need_weights,
            attn_mask,
            average_attn_weights,
        )?;
        Ok((seq_first(&out)?, weights))
    }
}

/// Options of the transformer layers, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct TransformerOptions {
    /// Width of the feed-forward block (default 2048).
    pub dim_feedforward: usize,
    /// Dropout (default 0.1).
    pub dropout: f64,
    /// `"relu"` (default) or `"gelu"`.
    pub activation: &'static str,
    /// LayerNorm epsilon (default 1e-5).
    pub layer_norm_eps: f64,
    /// Inputs are `[batch, seq, feature]` (default false).
    pub batch_first: bool,
    /// Pre-norm instead of post-norm (default false).
    pub norm_first: bool,
    /// Biases in the linear layers and norms (default true).
    pub bias: bool,
}

impl Default for TransformerOptions {
    fn default() -> Self {
        TransformerOptions {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: "relu",
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

fn activate(name: &str, x: &Tensor) -> Result<Tensor> {
    match name {
        "relu" => F::relu(x),
        "gelu" => F::gelu(x, "none"),
        other => ferrotorch_core::bail!(Runtime, "activation should be relu/gelu, not {other}"),
    }
}

/// The feed-forward block shared by encoder and decoder layers.
struct FeedForward<'a> {
    linear1: &'a Linear,
    dropout: &'a Dropout,
    linear2: &'a Linear,
    activation: &'a str,
}

impl FeedForward<'_> {
    fn run(&self, x: &Tensor) -> Result<Tensor> {
        self.linear2.call(
            &self
                .dropout
                .call(&activate(self.activation, &self.linear1.call(x)?)?)?,
        )
    }
}

/// `nn.TransformerEncoderLayer(d_model, nhead, ...)`: self-attention and a
/// feed-forward block, each with dropout, a residual and a LayerNorm.
#[derive(Module)]
#[module(crate = "crate")]
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub self_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
    dropout1: Dropout,
    dropout2: Dropout,
    #[module(skip)]
    options: TransformerOptions,
    state: ModuleState,
}

impl TransformerEncoderLayer {
    /// `nn.TransformerEncoderLayer(d_model, nhead, ...)`.
    pub fn new(d_model: usize, nhead: usize, o: TransformerOptions) -> Result<Self> {
        Ok(TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(d_model, nhead, o.dropout, o.bias, o.batch_first)?,
            linear1: Linear::new(d_model, o.dim_feedforward, o.bias)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::new(o.dim_feedforward, d_model, o.bias)?,
            norm1: LayerNorm::new(&[d_model], o.layer_norm_eps, true, o.bias)?,
            norm2: LayerNorm::new(&[d_model], o.layer_norm_eps, true, o.bias)?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            options: o,
            state: ModuleState::new(),
        })
    }

    /// `forward(src, src_mask, src_key_padding_mask)`.
    pub fn forward_masked(
        &self,
        src: &Tensor,
        src_mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) =
                self.self_attn
                    .forward(x, x, x, src_key_padding_mask, false, src_mask, true)?;
            self.dropout1.call(&y)
        };
        let ff = FeedForward {
            linear1: &self.linear1,
            dropout: &self.dropout,
            linear2: &self.linear2,
            activation: self.options.activation,
        };
        let ffb = |x: &Tensor| self.dropout2.call(&ff.run(x)?);
        if self.options.norm_first {
            let x = src.add(&sa(&self.norm1.call(src)?)?)?;
            x.add(&ffb(&self.norm2.call(&x)?)?)
        } else {
            let x = self.norm1.call(&src.add(&sa(src)?)?)?;
            self.norm2.call(&x.add(&ffb(&x)?)?)
        }
    }
}

impl Forward for TransformerEncoderLayer {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_masked(src, None, None)
    }
}

/// `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `layers`
/// start as copies of one layer, as PyTorch's deep copies do.
#[derive(Module)]
#[module(crate = "crate")]
pub struct TransformerEncoder {
    /// The stacked layers (`layers.0`, `layers.1`, ...).
    pub layers: Vec<TransformerEncoderLayer>,
    /// A final LayerNorm.
    pub norm: Option<LayerNorm>,
    state: ModuleState,
}

impl TransformerEncoder {
    /// Stack `num_layers` layers made by `make_layer`, all starting from
    /// the first one's weights.
    pub fn new(
        make_layer: impl Fn() -> Result<TransformerEncoderLayer>,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<TransformerEncoder> {
        let layers: Vec<TransformerEncoderLayer> = (0..num_layers)
            .map(|_| make_layer())
            .collect::<Result<_>>()?;
        if let Some(first) = layers.first() {
            let sd = first.state_dict();
            for l in &layers[1..] {
                l.load_state_dict(&sd, true)?;
            }
        }
        Ok(TransformerEncoder {
            layers,
            norm,
            state: ModuleState::new(),
        })
    }

    /// `forward(src, mask, src_key_padding_mask)`.
    pub fn forward_masked(
        &self,
        src: &Tensor,
        mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let mut x = src.clone();
        for l in &self.layers {
            x = l.forward_masked(&x, mask, src_key_padding_mask)?;
        }
        match &self.norm {
            Some(n) => n.call(&x),
            None => Ok(x),
        }
    }
}

impl Forward for TransformerEncoder {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_masked(src, None, None)
    }
}

/// `nn.TransformerDecoderLayer(d_model, nhead, ...)`: self-attention,
/// attention over the encoder's `memory`, and a feed-forward block.
#[derive(Module)]
#[module(crate = "crate")]
pub struct TransformerDecoderLayer {
    /// Self-attention over the target.
    pub self_attn: MultiheadAttention,
    /// Attention over the memory.
    pub multihead_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
    norm3: LayerNorm,
    dropout1: Dropout,
    dropout2: Dropout,
    dropout3: Dropout,
    #[module(skip)]
    options: TransformerOptions,
    state: ModuleState,
}

impl TransformerDecoderLayer {
    /// `nn.TransformerDecoderLayer(d_model, nhead, ...)`.
    pub fn new(d_model: usize, nhead: usize, o: TransformerOptions) -> Result<Self> {
        let mha = || MultiheadAttention::new(d_model, nhead, o.dropout, o.bias, o.batch_first);
        let norm = || LayerNorm::new(&[d_model], o.layer_norm_eps, true, o.bias);
        Ok(TransformerDecoderLayer {
            self_attn: mha()?,
            multihead_attn: mha()?,
            linear1: Linear::new(d_model, o.dim_feedforward, o.bias)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::new(o.dim_feedforward, d_model, o.bias)?,
            norm1: norm()?,
            norm2: norm()?,
            norm3: norm()?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            dropout3: Dropout::new(o.dropout)?,
            options: o,
            state: ModuleState::new(),
        })
    }

    /// `forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask)`.
    pub fn forward(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        tgt_mask: Option<&Tensor>,
        memory_mask: Option<&Tensor>,
        tgt_key_padding_mask: Option<&Tensor>,
        memory_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) =
                self.self_attn
                    .forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true)?;
            self.dropout1.call(&y)
        };
        let mha = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self.multihead_attn.forward(
                x,
                memory,
                memory,
                memory_key_padding_mask,
                false,
                memory_mask,
                true,
            )?;
            self.dropout2.call(&y)
        };
        let ff = FeedForward {
            linear1: &self.linear1,
            dropout: &self.dropout,
            linear2: &self.linear2,
            activation: self.options.activation,
        };
        let ffb = |x: &Tensor| self.dropout3.call(&ff.run(x)?);
        if self.options.norm_first {
            let x = tgt.add(&sa(&self.norm1.call(tgt)?)?)?;
            let x = x.add(&mha(&self.norm2.call(&x)?)?)?;
            x.add(&ffb(&self.norm3.call(&x)?)?)
        } else {
            let x = self.norm1.call(&tgt.add(&sa(tgt)?)?)?;
            let x = self.norm2.call(&x.add(&mha(&x)?)?)?;
            self.norm3.call(&x.add(&ffb(&x)?)?)
        }
    }
}
