//! Reference models built from the layers, with torchvision's parameter
//! names: ResNet-18.

mod resnet;

pub use resnet::{resnet18, BasicBlock, ResNet};
