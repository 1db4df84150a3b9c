//! ResNet-18 (He et al. 2015) with torchvision's module names, so its
//! `state_dict` keys (`layer1.0.conv1.weight`, `layer2.0.downsample.1.running_mean`)
//! and initialisation are torchvision's `resnet18()`.

use crate::layers::{conv_bn, sequential_conv_bn};
use crate::{init, BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module};
use crate::{AdaptiveAvgPool2d, ModuleState, ReLU, Sequential};
use ferrotorch_core::{Result, Tensor};

fn conv(cin: usize, cout: usize, k: usize, stride: usize, padding: usize) -> Result<Conv2d> {
    let o = ConvOptions {
        stride: stride.into(),
        padding: padding.into(),
        bias: false,
        ..Default::default()
    };
    Conv2d::new(cin, cout, k, o)
}

fn bn(c: usize) -> Result<BatchNorm2d> {
    BatchNorm2d::new(c, Default::default())
}

/// torchvision's `BasicBlock`: two 3×3 convolutions with batch norm and a
/// residual connection (through a 1×1 `downsample` when the shape changes).
#[derive(Module)]
#[module(crate = "crate")]
pub struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    relu: ReLU,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    downsample: Option<Sequential>,
    state: ModuleState,
}

impl BasicBlock {
    /// A block from `cin` to `cout` channels with the given stride.
    pub fn new(cin: usize, cout: usize, stride: usize) -> Result<BasicBlock> {
        let downsample = if stride != 1 || cin != cout {
            Some(
                Sequential::new()
                    .append(conv(cin, cout, 1, stride, 0)?)
                    .append(bn(cout)?),
            )
        } else {
            None
        };
        Ok(BasicBlock {
            conv1: conv(cin, cout, 3, stride, 1)?,
            bn1: bn(cout)?,
            relu: ReLU::inplace(),
            conv2: conv(cout, cout, 3, 1, 1)?,
            bn2: bn(cout)?,
            downsample,
            state: ModuleState::new(),
        })
    }
}

impl Forward for BasicBlock {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // In eval mode each conv → bn (→ + identity) → relu runs as one
        // fused convolution (Note [Fused eval convolutions]).
        let out = conv_bn(&self.conv1, &self.bn1, x, None, Some(&self.relu))?;
        let identity = match &self.downsample {
            Some(d) => sequential_conv_bn(d, x)?,
            None => x.clone(),
        };
        conv_bn(
            &self.conv2,
            &self.bn2,
            &out,
            Some(&identity),
            Some(&self.relu),
        )
    }
}

/// ResNet-18 as torchvision builds it (`torchvision.models.resnet18`).
#[derive(Module)]
#[module(crate = "crate")]
pub struct ResNet {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    relu: ReLU,
    maxpool: MaxPool2d,
    layer1: Sequential,
    layer2: Sequential,
    layer3: Sequential,
    layer4: Sequential,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
    state: ModuleState,
}

/// `torchvision.models.resnet18(num_classes=...)`, with torchvision's
/// initialisation: Kaiming-normal (fan_out, relu) convolutions, batch norms
/// at weight 1 and bias 0, and the default `Linear` init for `fc`.
pub fn resnet18(num_classes: usize) -> Result<ResNet> {
    let mut cin = 64;
    let mut layers = Vec::new();
    for (cout, stride) in [(64, 1), (128, 2), (256, 2), (512, 2)] {
        layers.push(
            Sequential::new()
                .append(BasicBlock::new(cin, cout, stride)?)
                .append(BasicBlock::new(cout, cout, 1)?),
        );
        cin = cout;
    }
    let mut layers = layers.into_iter();
    let mut next = || layers.next().expect("four stages");
    let net = ResNet {
        conv1: conv(3, 64, 7, 2, 3)?,
        bn1: bn(64)?,
        relu: ReLU::inplace(),
        maxpool: MaxPool2d::new(3, Some(2.into()), 1),
        layer1: next(),
        layer2: next(),
        layer3: next(),
        layer4: next(),
        avgpool: AdaptiveAvgPool2d::new((1, 1)),
        fc: Linear::new(512, num_classes, true)?,
        state: ModuleState::new(),
    };
    net.apply(&mut |m| {
        if let Some(c) = m.as_any().downcast_ref::<Conv2d>() {
            init::kaiming_normal_(&c.weight.tensor(), 0.0, "fan_out", "relu", None)?;
        }
        Ok(())
    })?;
    Ok(net)
}

impl Forward for ResNet {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = conv_bn(&self.conv1, &self.bn1, x, None, Some(&self.relu))?;
        let mut x = self.maxpool.call(&x)?;
        for layer in [&self.layer1, &self.layer2, &self.layer3, &self.layer4] {
            x = layer.call(&x)?;
        }
        let x = self.avgpool.call(&x)?.flatten(1, -1)?;
        self.fc.call(&x)
    }
}
