//! `nn.MaxPool1d`, `nn.MaxPool2d`, `nn.AvgPool2d`, `nn.AdaptiveAvgPool2d`,
//! `nn.AdaptiveMaxPool2d`.

use super::fmt::{py_bool, Size2};
use crate::{Forward, Module, ModuleState};
use ferrotorch_core::{Result, Tensor};

/// `nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
/// ceil_mode=False)`; `stride` defaults to the kernel size.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct MaxPool2d {
    #[module(skip)]
    kernel: Size2,
    #[module(skip)]
    stride: Size2,
    #[module(skip)]
    padding: Size2,
    #[module(skip)]
    dilation: Size2,
    ceil_mode: bool,
    state: ModuleState,
}

impl MaxPool2d {
    /// `nn.MaxPool2d(kernel_size, stride, padding)` with dilation 1, floor mode.
    pub fn new(
        kernel_size: impl Into<Size2>,
        stride: Option<Size2>,
        padding: impl Into<Size2>,
    ) -> MaxPool2d {
        let kernel = kernel_size.into();
        MaxPool2d {
            kernel,
            stride: stride.unwrap_or(kernel),
            padding: padding.into(),
            dilation: 1.into(),
            ceil_mode: false,
            state: ModuleState::new(),
        }
    }

    /// Set `dilation` and `ceil_mode`.
    pub fn with(mut self, dilation: impl Into<Size2>, ceil_mode: bool) -> MaxPool2d {
        self.dilation = dilation.into();
        self.ceil_mode = ceil_mode;
        self
    }

    /// `forward` with `return_indices=True`: values and flat indices.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        x.max_pool2d_with_indices(
            self.kernel.as_slice(),
            self.stride.as_slice(),
            self.padding.as_slice(),
            self.dilation.as_slice(),
            self.ceil_mode,
        )
    }

    fn describe(&self) -> String {
        format!(
            "kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
            self.kernel.py(),
            self.stride.py(),
            self.padding.py(),
            self.dilation.py(),
            py_bool(self.ceil_mode)
        )
    }
}

impl Forward for MaxPool2d {
    /// Values only: without gradients to track, no indices are computed.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool2d(
            self.kernel.as_slice(),
            self.stride.as_slice(),
            self.padding.as_slice(),
            self.dilation.as_slice(),
            self.ceil_mode,
        )
    }
}

/// `nn.MaxPool1d(kernel_size, stride=None, padding=0, dilation=1,
/// ceil_mode=False)` on `[N, C, L]` or `[C, L]`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct MaxPool1d {
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
    state: ModuleState,
}

impl MaxPool1d {
    /// `nn.MaxPool1d(kernel_size, stride, padding, dilation, ceil_mode)`.
    pub fn new(
        kernel_size: usize,
        stride: Option<usize>,
        padding: usize,
        dilation: usize,
        ceil_mode: bool,
    ) -> MaxPool1d {
        MaxPool1d {
            kernel: kernel_size,
            stride: stride.unwrap_or(kernel_size),
            padding,
            dilation,
            ceil_mode,
            state: ModuleState::new(),
        }
    }

    /// `forward` with `return_indices=True`.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        x.max_pool1d_with_indices(
            self.kernel,
            Some(self.stride),
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }

    fn describe(&self) -> String {
        format!(
            "kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            py_bool(self.ceil_mode)
        )
    }
}

impl Forward for MaxPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.forward_with_indices(x)?.0)
    }
}

/// `nn.AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
/// count_include_pad=True, divisor_override=None)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct AvgPool2d {
    #[module(skip)]
    kernel: Size2,
    #[module(skip)]
    stride: Size2,
    #[module(skip)]
    padding: Size2,
    ceil_mode: bool,
    count_include_pad: bool,
    #[module(skip)]
    divisor_override: Option<usize>,
    state: ModuleState,
}

impl AvgPool2d {
    /// `nn.AvgPool2d(kernel_size, stride, padding)` with PyTorch's other defaults.
    pub fn new(
        kernel_size: impl Into<Size2>,
        stride: Option<Size2>,
        padding: impl Into<Size2>,
    ) -> AvgPool2d {
        let kernel = kernel_size.into();
        AvgPool2d {
            kernel,
            stride: stride.unwrap_or(kernel),
            padding: padding.into(),
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
            state: ModuleState::new(),
        }
    }

    /// Set `ceil_mode`, `count_include_pad` and `divisor_override`.
    pub fn with(
        mut self,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> AvgPool2d {
        self.ceil_mode = ceil_mode;
        self.count_include_pad = count_include_pad;
        self.divisor_override = divisor_override;
        self
    }

    fn describe(&self) -> String {
        format!(
            "kernel_size={}, stride={}, padding={}",
            self.kernel.py(),
            self.stride.py(),
            self.padding.py()
        )
    }
}

impl Forward for AvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool2d(
            self.kernel.as_slice(),
            self.stride.as_slice(),
            self.padding.as_slice(),
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )
    }
}

/// `nn.AdaptiveAvgPool2d(output_size)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct AdaptiveAvgPool2d {
    #[module(skip)]
    output_size: Size2,
    state: ModuleState,
}

impl AdaptiveAvgPool2d {
    /// `nn.AdaptiveAvgPool2d(output_size)`.
    pub fn new(output_size: impl Into<Size2>) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d {
            output_size: output_size.into(),
            state: ModuleState::new(),
        }
    }

    fn describe(&self) -> String {
        format!("output_size={}", self.output_size.py())
    }
}

impl Forward for AdaptiveAvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_avg_pool2d(self.output_size.as_slice())
    }
}

/// `nn.AdaptiveMaxPool2d(output_size)`.
#[derive(Module)]
#[module(crate = "crate", extra_repr = "describe")]
pub struct AdaptiveMaxPool2d {
    #[module(skip)]
    output_size: Size2,
    state: ModuleState,
}

impl AdaptiveMaxPool2d {
    /// `nn.AdaptiveMaxPool2d(output_size)`.
    pub fn new(output_size: impl Into<Size2>) -> AdaptiveMaxPool2d {
        AdaptiveMaxPool2d {
            output_size: output_size.into(),
            state: ModuleState::new(),
        }
    }

    /// `forward` with `return_indices=True`.
    pub fn forward_with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        x.adaptive_max_pool2d(self.output_size.as_slice())
    }

    fn describe(&self) -> String {
        format!("output_size={}", self.output_size.py())
    }
}

impl Forward for AdaptiveMaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.forward_with_indices(x)?.0)
    }
}
