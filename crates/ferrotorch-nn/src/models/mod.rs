//! Reference models built from the layers, with torchvision's parameter
//! names: ResNet-18 and a (small) Vision Transformer.

mod resnet;
mod vit;

pub use resnet::{resnet18, BasicBlock, ResNet};
pub use vit::{vision_transformer, VisionTransformer, VitConfig};
