//! `FtModule`: torch.nn layers built, run, inspected and saved from C.

use crate::handle::{free, get, handle_kind, new_handle};
use crate::state::FtStateDict;
use crate::status::{entry, put, Fail, FtStatus, Res};
use crate::tensor::{out_tensor, slice, tensor, FtTensor};
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn as nn;
use ferrotorch_nn::{Entry, Forward, Module, ModuleState};
use std::any::Any;
use std::ffi::{c_char, CString};
use std::sync::Arc;

/// A reference to an `nn.Module` (Note [C handles]). A module placed in
/// a `Sequential` is shared with it, not copied.
pub struct FtModule {
    _opaque: [u8; 0],
}

handle_kind!(FtModule, Arc<dyn Forward>, 0x7E02);

/// A module shared between a C handle and a container: every question is
/// the inner module's, so names and state dicts are unchanged.
struct Shared(Arc<dyn Forward>);

impl Module for Shared {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        self.0.visit(visitor)
    }
    fn type_name(&self) -> &str {
        self.0.type_name()
    }
    fn as_module(&self) -> &dyn Module {
        self.0.as_module()
    }
    fn as_any(&self) -> &dyn Any {
        self.0.as_any()
    }
    fn extra_repr(&self) -> String {
        self.0.extra_repr()
    }
    fn module_state(&self) -> Option<&ModuleState> {
        self.0.module_state()
    }
}

impl Forward for Shared {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.0.call(input)
    }
}

fn out_module(what: &str, out: *mut *mut FtModule, m: Arc<dyn Forward>) -> Res<()> {
    if out.is_null() {
        return put(what, out, std::ptr::null_mut());
    }
    put(what, out, new_handle::<FtModule>(m))
}

fn module<'a>(what: &str, m: *const FtModule) -> Res<&'a Arc<dyn Forward>> {
    get::<FtModule>(what, m)
}

fn usize_of(what: &str, name: &str, v: i64) -> Res<usize> {
    usize::try_from(v).map_err(|_| {
        Fail::new(
            FtStatus::FtErrorValue,
            format!("{what}: {name} must be non-negative, got {v}"),
        )
    })
}

/// `nn.Linear(in_features, out_features, bias)`.
#[no_mangle]
pub extern "C" fn ft_nn_linear(
    in_features: i64,
    out_features: i64,
    bias: bool,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_linear";
    entry(what, || {
        let (i, o) = (
            usize_of(what, "in_features", in_features)?,
            usize_of(what, "out_features", out_features)?,
        );
        out_module(what, out, Arc::new(nn::Linear::new(i, o, bias)?))
    })
}

/// `nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
/// dilation, groups, bias)` with square kernels, strides and padding.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ft_nn_conv2d(
    in_channels: i64,
    out_channels: i64,
    kernel_size: i64,
    stride: i64,
    padding: i64,
    dilation: i64,
    groups: i64,
    bias: bool,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_conv2d";
    entry(what, || {
        let o = nn::ConvOptions {
            stride: usize_of(what, "stride", stride)?.into(),
            padding: usize_of(what, "padding", padding)?.into(),
            dilation: usize_of(what, "dilation", dilation)?.into(),
            groups: usize_of(what, "groups", groups)?,
            bias,
            ..Default::default()
        };
        let m = nn::Conv2d::new(
            usize_of(what, "in_channels", in_channels)?,
            usize_of(what, "out_channels", out_channels)?,
            usize_of(what, "kernel_size", kernel_size)?,
            o,
        )?;
        out_module(what, out, Arc::new(m))
    })
}

/// `nn.BatchNorm2d(num_features, eps, momentum)` (affine, tracking
/// running statistics).
#[no_mangle]
pub extern "C" fn ft_nn_batchnorm2d(
    num_features: i64,
    eps: f64,
    momentum: f64,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_batchnorm2d";
    entry(what, || {
        let o = nn::BatchNormOptions {
            eps,
            momentum: Some(momentum),
            ..Default::default()
        };
        let m = nn::BatchNorm2d::new(usize_of(what, "num_features", num_features)?, o)?;
        out_module(what, out, Arc::new(m))
    })
}

/// `nn.Embedding(num_embeddings, embedding_dim)`.
#[no_mangle]
pub extern "C" fn ft_nn_embedding(
    num_embeddings: i64,
    embedding_dim: i64,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_embedding";
    entry(what, || {
        let m = nn::Embedding::new(
            usize_of(what, "num_embeddings", num_embeddings)?,
            usize_of(what, "embedding_dim", embedding_dim)?,
            None,
        )?;
        out_module(what, out, Arc::new(m))
    })
}

/// `nn.MaxPool2d(kernel_size, stride, padding)` (square windows; `stride`
/// 0 means `kernel_size`, torch's default).
#[no_mangle]
pub extern "C" fn ft_nn_maxpool2d(
    kernel_size: i64,
    stride: i64,
    padding: i64,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_maxpool2d";
    entry(what, || {
        let m = nn::MaxPool2d::new(
            usize_of(what, "kernel_size", kernel_size)?,
            (stride != 0)
                .then(|| usize_of(what, "stride", stride))
                .transpose()?
                .map(Into::into),
            usize_of(what, "padding", padding)?,
        );
        out_module(what, out, Arc::new(m))
    })
}

/// `nn.Dropout(p)`.
#[no_mangle]
pub extern "C" fn ft_nn_dropout(p: f64, out: *mut *mut FtModule) -> FtStatus {
    let what = "ft_nn_dropout";
    entry(what, || {
        out_module(what, out, Arc::new(nn::Dropout::new(p)?))
    })
}

/// `nn.Flatten(start_dim, end_dim)`.
#[no_mangle]
pub extern "C" fn ft_nn_flatten(start_dim: i64, end_dim: i64, out: *mut *mut FtModule) -> FtStatus {
    let what = "ft_nn_flatten";
    entry(what, || {
        out_module(what, out, Arc::new(nn::Flatten::new(start_dim, end_dim)))
    })
}

/// `nn.ReLU()`.
#[no_mangle]
pub extern "C" fn ft_nn_relu(out: *mut *mut FtModule) -> FtStatus {
    let what = "ft_nn_relu";
    entry(what, || out_module(what, out, Arc::new(nn::ReLU::new())))
}

/// `nn.Tanh()`.
#[no_mangle]
pub extern "C" fn ft_nn_tanh(out: *mut *mut FtModule) -> FtStatus {
    let what = "ft_nn_tanh";
    entry(what, || out_module(what, out, Arc::new(nn::Tanh::new())))
}

/// `nn.Sigmoid()`.
#[no_mangle]
pub extern "C" fn ft_nn_sigmoid(out: *mut *mut FtModule) -> FtStatus {
    let what = "ft_nn_sigmoid";
    entry(what, || out_module(what, out, Arc::new(nn::Sigmoid::new())))
}

/// `nn.Sequential(*modules)`: children named `0`, `1`, ...; the modules
/// are shared with the caller's handles (which stay the caller's to free).
#[no_mangle]
pub extern "C" fn ft_nn_sequential(
    modules: *const *const FtModule,
    n: usize,
    out: *mut *mut FtModule,
) -> FtStatus {
    let what = "ft_nn_sequential";
    entry(what, || {
        let mut seq = nn::Sequential::new();
        for &m in slice(what, modules, n)? {
            seq.push(Box::new(Shared(module(what, m)?.clone())));
        }
        out_module(what, out, Arc::new(seq))
    })
}

/// `module(input)`: hooks and `forward`.
#[no_mangle]
pub extern "C" fn ft_module_forward(
    m: *const FtModule,
    input: *const FtTensor,
    out: *mut *mut FtTensor,
) -> FtStatus {
    let what = "ft_module_forward";
    entry(what, || {
        let y = module(what, m)?.call(tensor(what, input)?)?;
        out_tensor(what, out, y)
    })
}

/// Release this module reference (null is a no-op).
#[no_mangle]
pub extern "C" fn ft_module_free(m: *mut FtModule) -> FtStatus {
    entry("ft_module_free", || free("ft_module_free", m))
}

/// `module.train(mode)` (`mode` false is `eval()`).
#[no_mangle]
pub extern "C" fn ft_module_train(m: *const FtModule, mode: bool) -> FtStatus {
    let what = "ft_module_train";
    entry(what, || {
        module(what, m)?.train(mode);
        Ok(())
    })
}

/// `module.zero_grad()` (gradients set to none).
#[no_mangle]
pub extern "C" fn ft_module_zero_grad(m: *const FtModule) -> FtStatus {
    let what = "ft_module_zero_grad";
    entry(what, || {
        module(what, m)?.zero_grad();
        Ok(())
    })
}

/// `module.parameters()`: new handles written to `params[0..capacity]`
/// (the caller frees them); their number goes to `n`. When `capacity` is
/// too small nothing is written but `n` (call again with room).
#[no_mangle]
pub extern "C" fn ft_module_parameters(
    m: *const FtModule,
    params: *mut *mut FtTensor,
    capacity: usize,
    n: *mut usize,
) -> FtStatus {
    let what = "ft_module_parameters";
    entry(what, || {
        let ps = module(what, m)?.parameters();
        put(what, n, ps.len())?;
        if ps.len() > capacity {
            return Ok(());
        }
        for (i, p) in ps.iter().enumerate() {
            // SAFETY: i < capacity; the caller promises that many slots.
            out_tensor(what, unsafe { params.add(i) }, p.tensor())?;
        }
        Ok(())
    })
}

/// `module.state_dict()`: parameters and buffers by dotted name.
#[no_mangle]
pub extern "C" fn ft_module_state_dict(m: *const FtModule, out: *mut *mut FtStateDict) -> FtStatus {
    let what = "ft_module_state_dict";
    entry(what, || {
        let sd = module(what, m)?.state_dict();
        crate::state::out_state_dict(what, out, sd)
    })
}

/// `module.load_state_dict(state_dict, strict)`: copies the values in
/// place; with `strict`, missing or unexpected keys fail with torch's
/// message listing them.
#[no_mangle]
pub extern "C" fn ft_module_load_state_dict(
    m: *const FtModule,
    state_dict: *const FtStateDict,
    strict: bool,
) -> FtStatus {
    let what = "ft_module_load_state_dict";
    entry(what, || {
        let sd = crate::state::state_dict(what, state_dict)?;
        module(what, m)?.load_state_dict(&sd, strict)?;
        Ok(())
    })
}

/// The module tree as torch prints it, freed with `ft_string_free`.
#[no_mangle]
pub extern "C" fn ft_module_to_string(m: *const FtModule, out: *mut *mut c_char) -> FtStatus {
    let what = "ft_module_to_string";
    entry(what, || {
        let s = CString::new(module(what, m)?.repr()).unwrap_or_default();
        if out.is_null() {
            return put(what, out, std::ptr::null_mut());
        }
        put(what, out, s.into_raw())
    })
}
