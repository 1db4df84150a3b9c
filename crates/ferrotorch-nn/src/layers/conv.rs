//! `nn.Conv1d`, `nn.Conv2d`, `nn.ConvTranspose2d`, with PyTorch's default
//! initialisation and repr.

use super::fmt::{py_tuple, Size2};
use super::linear::{empty_param, reset_linear_like};
use crate::{Forward, Module, ModuleState, Parameter};
use ferrotorch_core::{ensure, Result, Tensor};

/// Options shared by the convolutions, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct ConvOptions {
    /// Step of the window (default 1).
    pub stride: Size2,
    /// Zero padding on each side (default 0).
    pub padding: Size2,
    /// Extra size added to one side of a transposed output (default 0).
    pub output_padding: Size2,
    /// Spacing of the kernel's taps (default 1).
    pub dilation: Size2,
    /// Blocked connections from input to output channels (default 1).
    pub groups: usize,
    /// Learn an additive bias (default true).
    pub bias: bool,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: 1.into(),
            padding: 0.into(),
            output_padding: 0.into(),
            dilation: 1.into(),
            groups: 1,
            bias: true,
        }
    }
}

fn check_channels(op: &str, cin: usize, cout: usize, groups: usize) -> Result<()> {
    ensure!(groups > 0, Value, "{op}: groups must be a positive integer");
    ensure!(
        cin.is_multiple_of(groups),
        Value,
        "in_channels must be divisible by groups"
    );
    ensure!(
        cout.is_multiple_of(groups),
        Value,
        "out_channels must be divisible by groups"
    );
    Ok(())
}

/// PyTorch's `_ConvNd.extra_repr`, for `dims` spatial dims.
fn conv_repr(
    cin: usize,
    cout: usize,
    k: &[usize],
    o: &ConvOptions,
    dims: usize,
    transposed: bool,
) -> String {
    let t = |s: &Size2| py_tuple(&s.hw[2 - dims..]);
    let mut s = format!(
        "{cin}, {cout}, kernel_size={}, stride={}",
        py_tuple(k),
        t(&o.stride)
    );
    if o.padding.hw != [0, 0] {
        s += &format!(", padding={}", t(&o.padding));
    }
    if o.dilation.hw != [1, 1] {
        s += &format!(", dilation={}", t(&o.dilation));
    }
    if transposed && o.output_padding.hw != [0, 0] {
        s += &format!(", output_padding={}", t(&o.output_padding));
    }
    if o.groups != 1 {
        s += &format!(", groups={}", o.groups);
    }
    if !o.bias {
        s += ", bias=False";
    }
    s
}

macro_rules! conv_module {
    ($(#[$doc:meta])* $name:ident, dims = $dims:expr, transposed = $tr:expr) => {
        $(#[$doc])*
        #[derive(Module)]
        #[module(crate = "crate", extra_repr = "describe")]
        pub struct $name {
            /// The kernel.
            pub weight: Parameter,
            /// `[out_channels]`, unless made with `bias: false`.
            pub bias: Option<Parameter>,
            #[module(skip)]
            options: ConvOptions,
            #[module(skip)]
            channels: (usize, usize),
            kernel: Vec<usize>,
            state: ModuleState,
        }

        impl $name {
            fn describe(&self) -> String {
                conv_repr(self.channels.0, self.channels.1, &self.kernel, &self.options, $dims, $tr)
            }

            fn build(cin: usize, cout: usize, kernel: Vec<usize>, options: ConvOptions) -> Result<$name> {
                check_channels(stringify!($name), cin, cout, options.groups)?;
                let g = options.groups;
                let mut shape = if $tr { vec![cin, cout / g] } else { vec![cout, cin / g] };
                shape.extend(&kernel);
                let weight = empty_param(&shape)?;
                let bias = options.bias.then(|| empty_param(&[cout])).transpose()?;
                reset_linear_like(&weight, bias.as_ref())?;
                Ok($name { weight, bias, options, channels: (cin, cout), kernel, state: ModuleState::new() })
            }
        }
    };
}

conv_module!(
    /// `nn.Conv1d(in_channels, out_channels, kernel_size, ...)` on
    /// `[N, C, L]` or `[C, L]` inputs.
    Conv1d, dims = 1, transposed = false
);
conv_module!(
    /// `nn.Conv2d(in_channels, out_channels, kernel_size, ...)` on
    /// `[N, C, H, W]` or `[C, H, W]` inputs.
    Conv2d, dims = 2, transposed = false
);
conv_module!(
    /// `nn.ConvTranspose2d(in_channels, out_channels, kernel_size, ...)`.
    ConvTranspose2d, dims = 2, transposed = true
);

impl Conv1d {
    /// A 1-D convolution; 1-D options use the width of each [`Size2`].
    pub fn new(
        cin: usize,
        cout: usize,
        kernel_size: usize,
        options: ConvOptions,
    ) -> Result<Conv1d> {
        Conv1d::build(cin, cout, vec![kernel_size], options)
    }
}

impl Forward for Conv1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let o = &self.options;
        let b = self.bias.as_ref().map(Parameter::tensor);
        x.conv1d(
            &self.weight.tensor(),
            b.as_ref(),
            o.stride.hw[1],
            o.padding.hw[1],
            o.dilation.hw[1],
            o.groups,
        )
    }
}

impl Conv2d {
    /// A 2-D convolution with PyTorch's default initialisation.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel_size: impl Into<Size2>,
        options: ConvOptions,
    ) -> Result<Conv2d> {
        Conv2d::build(cin, cout, kernel_size.into().hw.to_vec(), options)
    }
}

impl Conv2d {
    /// Stride, padding, dilation and groups.
    pub(crate) fn options(&self) -> &ConvOptions {
        &self.options
    }
}

impl Forward for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let o = &self.options;
        let b = self.bias.as_ref().map(Parameter::tensor);
        x.conv2d(
            &self.weight.tensor(),
            b.as_ref(),
            o.stride.as_slice(),
            o.padding.as_slice(),
            o.dilation.as_slice(),
            o.groups,
        )
    }
}

impl ConvTranspose2d {
    /// A transposed 2-D convolution with PyTorch's default initialisation.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel_size: impl Into<Size2>,
        options: ConvOptions,
    ) -> Result<ConvTranspose2d> {
        ConvTranspose2d::build(cin, cout, kernel_size.into().hw.to_vec(), options)
    }
}

impl Forward for ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let o = &self.options;
        let b = self.bias.as_ref().map(Parameter::tensor);
        x.conv_transpose2d(
            &self.weight.tensor(),
            b.as_ref(),
            o.stride.as_slice(),
            o.padding.as_slice(),
            o.output_padding.as_slice(),
            o.groups,
            o.dilation.as_slice(),
        )
    }
}
