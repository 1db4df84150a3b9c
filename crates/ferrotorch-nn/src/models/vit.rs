//! A small Vision Transformer (Dosovitskiy et al. 2020) with torchvision's
//! `VisionTransformer` module names (`encoder.layers.encoder_layer_0.mlp.3.weight`)
//! and initialisation.

use crate::{init, Conv2d, ConvOptions, Dropout, Entry, Forward, LayerNorm, Linear, Module};
use crate::{ModuleState, MultiheadAttention, Parameter, GELU};
use ferrotorch_core::native::cat;
use ferrotorch_core::{ensure, get_default_dtype, Result, Tensor};

/// torchvision's `MLPBlock`: Linear, GELU, Dropout, Linear, Dropout.
#[derive(Module)]
#[module(crate = "crate", type_name = "MLPBlock")]
struct MlpBlock {
    #[module(name = "0")]
    fc1: Linear,
    #[module(name = "1")]
    act: GELU,
    #[module(name = "2")]
    drop1: Dropout,
    #[module(name = "3")]
    fc2: Linear,
    #[module(name = "4")]
    drop2: Dropout,
    state: ModuleState,
}

/// torchvision's `EncoderBlock`: pre-norm self-attention and MLP.
#[derive(Module)]
#[module(crate = "crate")]
struct EncoderBlock {
    ln_1: LayerNorm,
    self_attention: MultiheadAttention,
    dropout: Dropout,
    ln_2: LayerNorm,
    mlp: MlpBlock,
    state: ModuleState,
}

impl Forward for EncoderBlock {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let x = self.ln_1.call(input)?;
        let (x, _) = self
            .self_attention
            .forward(&x, &x, &x, None, false, None, true)?;
        let x = self.dropout.call(&x)?.add(input)?;
        let m = &self.mlp;
        let y = m.fc1.call(&self.ln_2.call(&x)?)?;
        let y = m
            .drop2
            .call(&m.fc2.call(&m.drop1.call(&m.act.call(&y)?)?)?)?;
        x.add(&y)
    }
}

/// The encoder's blocks, named `encoder_layer_0`, ... as torchvision's
/// ordered `Sequential`.
struct EncoderLayers(Vec<EncoderBlock>, ModuleState);

impl Module for EncoderLayers {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor("", Entry::State(&self.1));
        for (i, b) in self.0.iter().enumerate() {
            visitor(&format!("encoder_layer_{i}"), Entry::Module(b));
        }
    }
    fn type_name(&self) -> &str {
        "Sequential"
    }
    fn as_module(&self) -> &dyn Module {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl crate::ModuleField for EncoderLayers {
    fn visit_field<'a>(&'a self, name: &str, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor(name, Entry::Module(self));
    }
}

#[derive(Module)]
#[module(crate = "crate")]
struct Encoder {
    pos_embedding: Parameter,
    dropout: Dropout,
    layers: EncoderLayers,
    ln: LayerNorm,
    state: ModuleState,
}

#[derive(Module)]
#[module(crate = "crate", type_name = "Sequential")]
struct Heads {
    head: Linear,
    state: ModuleState,
}

/// torchvision's `VisionTransformer` (no representation layer).
#[derive(Module)]
#[module(crate = "crate")]
pub struct VisionTransformer {
    class_token: Parameter,
    conv_proj: Conv2d,
    encoder: Encoder,
    heads: Heads,
    image_size: usize,
    patch_size: usize,
    hidden_dim: usize,
    state: ModuleState,
}

/// The sizes of a [`VisionTransformer`] (torchvision's constructor arguments).
#[derive(Clone, Copy, Debug)]
pub struct VitConfig {
    /// Input height and width.
    pub image_size: usize,
    /// Patch height and width.
    pub patch_size: usize,
    /// Encoder blocks.
    pub num_layers: usize,
    /// Attention heads.
    pub num_heads: usize,
    /// Token width.
    pub hidden_dim: usize,
    /// MLP width.
    pub mlp_dim: usize,
    /// Classifier outputs.
    pub num_classes: usize,
}

/// `VisionTransformer(image_size, patch_size, num_layers, num_heads,
/// hidden_dim, mlp_dim, num_classes=...)` with torchvision's
/// initialisation (truncated-normal patch projection, zero class token and
/// head, N(0, 0.02²) position embedding, Xavier MLP weights).
pub fn vision_transformer(c: VitConfig) -> Result<VisionTransformer> {
    ensure!(
        c.patch_size > 0 && c.image_size.is_multiple_of(c.patch_size),
        Value,
        "Input shape indivisible by patch size!"
    );
    let seq = (c.image_size / c.patch_size).pow(2) + 1;
    let d = c.hidden_dim;
    let conv_proj = Conv2d::new(
        3,
        d,
        c.patch_size,
        ConvOptions {
            stride: c.patch_size.into(),
            ..Default::default()
        },
    )?;
    let fan_in = (3 * c.patch_size * c.patch_size) as f64;
    init::trunc_normal_(
        &conv_proj.weight.tensor(),
        0.0,
        (1.0 / fan_in).sqrt(),
        -2.0,
        2.0,
        None,
    )?;
    if let Some(b) = &conv_proj.bias {
        init::zeros_(&b.tensor())?;
    }
    let pos_embedding = Parameter::new(&Tensor::zeros(&[1, seq, d], get_default_dtype())?);
    init::normal_(&pos_embedding.tensor(), 0.0, 0.02, None)?;
    let ln = || LayerNorm::new(&[d], 1e-6, true, true);
    let blocks = (0..c.num_layers)
        .map(|_| -> Result<EncoderBlock> {
            let mlp = MlpBlock {
                fc1: Linear::new(d, c.mlp_dim, true)?,
                act: GELU::default(),
                drop1: Dropout::new(0.0)?,
                fc2: Linear::new(c.mlp_dim, d, true)?,
                drop2: Dropout::new(0.0)?,
                state: ModuleState::new(),
            };
            for l in [&mlp.fc1, &mlp.fc2] {
                init::xavier_uniform_(&l.weight.tensor(), 1.0, None)?;
                init::normal_(&l.bias.as_ref().expect("bias").tensor(), 0.0, 1e-6, None)?;
            }
            Ok(EncoderBlock {
                ln_1: ln()?,
                self_attention: MultiheadAttention::new(d, c.num_heads, 0.0, true, true)?,
                dropout: Dropout::new(0.0)?,
                ln_2: ln()?,
                mlp,
                state: ModuleState::new(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let head = Linear::new(d, c.num_classes, true)?;
    init::zeros_(&head.weight.tensor())?;
    init::zeros_(&head.bias.as_ref().expect("bias").tensor())?;
    Ok(VisionTransformer {
        class_token: Parameter::new(&Tensor::zeros(&[1, 1, d], get_default_dtype())?),
        conv_proj,
        encoder: Encoder {
            pos_embedding,
            dropout: Dropout::new(0.0)?,
            layers: EncoderLayers(blocks, ModuleState::new()),
            ln: ln()?,
            state: ModuleState::new(),
        },
        heads: Heads {
            head,
            state: ModuleState::new(),
        },
        image_size: c.image_size,
        patch_size: c.patch_size,
        hidden_dim: d,
        state: ModuleState::new(),
    })
}

impl Forward for VisionTransformer {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ensure!(
            x.dim() == 4 && x.shape()[2] == self.image_size && x.shape()[3] == self.image_size,
            Runtime,
            "Wrong image size! Expected [N, 3, {0}, {0}], got {1:?}",
            self.image_size,
            x.shape()
        );
        let n = x.shape()[0] as i64;
        let p = (self.image_size / self.patch_size).pow(2) as i64;
        let d = self.hidden_dim as i64;
        let x = self
            .conv_proj
            .call(x)?
            .reshape(&[n, d, p])?
            .permute(&[0, 2, 1])?;
        let cls = self.class_token.tensor().expand(&[n, 1, d])?;
        let e = &self.encoder;
        let mut x = e
            .dropout
            .call(&cat(&[cls, x], 1)?.add(e.pos_embedding.tensor())?)?;
        for b in &e.layers.0 {
            x = b.call(&x)?;
        }
        let x = e.ln.call(&x)?.select(1, 0)?;
        self.heads.head.call(&x)
    }
}
