//! `torch.autocast("cpu")`: mixed precision on the CPU.
//!
//! # Note [Autocast at the dispatcher]
//! As PyTorch's `AutocastCPU` key, autocast is a mode key (above autograd,
//! below the tracer): while a region is open on a thread, every op call
//! enters the key's fallback. Ops of the lower-precision list (matmuls,
//! linear layers, convolutions, attention) get their float32 tensor inputs
//! cast to the region's dtype (bfloat16 unless asked for float16); ops of
//! the float32 list (losses, reductions and decompositions that lose
//! accuracy in 8 mantissa bits) get lower-precision inputs cast back to
//! float32; `cat`/`stack`/`index_copy` promote to their widest input. The
//! casts are ordinary `to` calls below the key, so autograd records them
//! and gradients come back to the float32 parameters in float32. Float64
//! tensors are never cast (PyTorch's eligibility rule). Other ops run as
//! called. The lists are PyTorch 2.15's CPU lists (the ops ferrotorch
//! has). Weight casts are not cached across calls (`cache_enabled` is
//! accepted): the values are the same, the cast is redone.

use crate::dispatch::keys::{
    self, DispatchKey, DispatchKeySet, ExcludeGuard, Fallback, IncludeGuard,
};
use crate::dispatch::{redispatch, Args, IValue, OpEntry};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::sync::{Arc, Once};

/// The ops autocast runs in the lower precision.
const LOWER_PRECISION: &[&str] = &[
    "conv1d",
    "conv2d",
    "conv3d",
    "bmm",
    "mm",
    "linalg_vecdot",
    "baddbmm",
    "addmm",
    "addbmm",
    "linear",
    "_convolution",
    "convolution",
    "matmul",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "prelu",
    "scaled_dot_product_attention",
    "_native_multi_head_attention",
];

/// The ops autocast runs in float32.
const FP32: &[&str] = &[
    "avg_pool3d",
    "binary_cross_entropy",
    "grid_sampler",
    "polar",
    "prod",
    "quantile",
    "nanquantile",
    "stft",
    "cdist",
    "trace",
    "view_as_complex",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "inverse",
    "lu_solve",
    "orgqr",
    "ormqr",
    "pinverse",
    "max_pool3d",
    "max_unpool2d",
    "max_unpool3d",
    "adaptive_avg_pool3d",
    "reflection_pad1d",
    "reflection_pad2d",
    "replication_pad1d",
    "replication_pad2d",
    "replication_pad3d",
    "mse_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "cross_entropy_loss",
    "l1_loss",
    "huber_loss",
    "margin_ranking_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "ctc_loss",
    "kl_div",
    "multilabel_margin_loss",
    "binary_cross_entropy_with_logits",
    "fft_fft",
    "fft_ifft",
    "fft_fft2",
    "fft_ifft2",
    "fft_fftn",
    "fft_ifftn",
    "fft_rfft",
    "fft_irfft",
    "fft_rfft2",
    "fft_irfft2",
    "fft_rfftn",
    "fft_irfftn",
    "fft_hfft",
    "fft_ihfft",
    "linalg_cond",
    "linalg_matrix_rank",
    "linalg_solve",
    "linalg_cholesky",
    "linalg_svdvals",
    "linalg_eigvals",
    "linalg_eigvalsh",
    "linalg_inv",
    "linalg_householder_product",
    "linalg_tensorinv",
    "linalg_tensorsolve",
    "fake_quantize_per_tensor_affine",
    "geqrf",
    "_lu_with_info",
    "qr",
    "svd",
    "triangular_solve",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "adaptive_max_pool3d",
    "multilabel_margin_loss_forward",
    "linalg_qr",
    "linalg_cholesky_ex",
    "linalg_svd",
    "linalg_eig",
    "linalg_eigh",
    "linalg_lstsq",
    "linalg_inv_ex",
];

/// The ops autocast runs in their widest input's dtype.
const PROMOTE: &[&str] = &["stack", "cat", "index_copy"];

/// What autocast does to an op's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastPolicy {
    /// Float32 inputs to the region's dtype.
    LowerPrecision,
    /// Lower-precision float inputs to float32.
    Fp32,
    /// Float inputs to the widest float dtype among them.
    Promote,
}

/// The policy autocast applies to op `name` (a base name), if any.
pub fn policy(name: &str) -> Option<CastPolicy> {
    if LOWER_PRECISION.contains(&name) {
        Some(CastPolicy::LowerPrecision)
    } else if FP32.contains(&name) {
        Some(CastPolicy::Fp32)
    } else if PROMOTE.contains(&name) {
        Some(CastPolicy::Promote)
    } else {
        None
    }
}

struct Region {
    dtype: DType,
    _key: Option<IncludeGuard>,
}

thread_local! {
    static REGIONS: RefCell<Vec<Region>> = const { RefCell::new(Vec::new()) };
    static CPU_DTYPE: std::cell::Cell<DType> = const { std::cell::Cell::new(DType::BF16) };
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let f: Fallback = Arc::new(autocast_op);
        keys::set_fallback(DispatchKey::AutocastCpu, Some(f));
    });
}

/// Open an autocast region on this thread (`torch.autocast("cpu", dtype,
/// enabled)`): until the matching [`exit`], listed ops run in `dtype`
/// (bfloat16 or float16; `None`: the thread's autocast dtype). A disabled
/// region turns autocast off inside it, as a nested `enabled=False` does.
pub fn enter(dtype: Option<DType>, enabled: bool) -> Result<()> {
    let dtype = dtype.unwrap_or_else(get_dtype);
    crate::ensure!(
        matches!(dtype, DType::BF16 | DType::F16),
        Runtime,
        "In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast only \
         supports dtype of torch.bfloat16, torch.float16 currently."
    );
    install();
    REGIONS.with(|r| {
        let mut r = r.borrow_mut();
        let key = enabled.then(|| IncludeGuard::new(DispatchKey::AutocastCpu));
        // a disabled region excludes the key for its extent
        let region = Region { dtype, _key: key };
        r.push(region);
        if !enabled {
            EXCLUDES.with(|e| {
                e.borrow_mut()
                    .push(ExcludeGuard::new(DispatchKey::AutocastCpu))
            });
        }
    });
    Ok(())
}

thread_local! {
    static EXCLUDES: RefCell<Vec<ExcludeGuard>> = const { RefCell::new(Vec::new()) };
}

/// Close the innermost region [`enter`] opened (an error when none is open).
pub fn exit() -> Result<()> {
    let region = REGIONS.with(|r| r.borrow_mut().pop());
    let Some(region) = region else {
        crate::bail!(Runtime, "autocast: exit without a matching enter");
    };
    if region._key.is_none() {
        EXCLUDES.with(|e| e.borrow_mut().pop());
    }
    drop(region);
    Ok(())
}

/// Whether autocast is on for this thread (`torch.is_autocast_enabled("cpu")`).
pub fn is_enabled() -> bool {
    let (inc, exc) = keys::local_keys();
    inc.has(DispatchKey::AutocastCpu) && !exc.has(DispatchKey::AutocastCpu)
}

/// The dtype listed ops run in: the innermost region's, else the thread's
/// setting (`torch.get_autocast_dtype("cpu")`, bfloat16 by default).
pub fn get_dtype() -> DType {
    REGIONS
        .with(|r| r.borrow().last().map(|g| g.dtype))
        .unwrap_or_else(|| CPU_DTYPE.with(|c| c.get()))
}

/// Set the thread's autocast dtype for regions that do not name one.
pub fn set_dtype(dtype: DType) -> Result<()> {
    crate::ensure!(
        matches!(dtype, DType::BF16 | DType::F16),
        Runtime,
        "Currently, AutocastCPU only support Bfloat16 or Float16 as the autocast_cpu_dtype"
    );
    CPU_DTYPE.with(|c| c.set(dtype));
    Ok(())
}

fn eligible(t: &Tensor) -> bool {
    matches!(t.dtype(), DType::F32 | DType::F16 | DType::BF16)
}

/// Which dtype (if any) autocast casts a tensor argument to.
type CastTo = dyn Fn(&Tensor) -> Option<DType>;

fn cast(v: &IValue, to: &CastTo) -> Result<IValue> {
    let one = |t: &Tensor| -> Result<Tensor> {
        match to(t) {
            Some(d) if d != t.dtype() => t.to_dtype(d),
            _ => Ok(t.clone()),
        }
    };
    Ok(match v {
        IValue::Tensor(t) => IValue::Tensor(one(t)?),
        IValue::TensorList(ts) => IValue::TensorList(ts.iter().map(one).collect::<Result<_>>()?),
        IValue::OptTensorList(ts) => IValue::OptTensorList(
            ts.iter()
                .map(|t| t.as_ref().map(one).transpose())
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

fn widest(vals: &[IValue]) -> Option<DType> {
    let mut best: Option<DType> = None;
    let mut see = |t: &Tensor| {
        if eligible(t) || t.dtype() == DType::F64 {
            best = Some(match best {
                None => t.dtype(),
                Some(b) => crate::dtype::promote_types(b, t.dtype()),
            });
        }
    };
    for v in vals {
        match v {
            IValue::Tensor(t) => see(t),
            IValue::TensorList(ts) => ts.iter().for_each(&mut see),
            _ => {}
        }
    }
    best
}

/// The key's fallback (Note [Autocast at the dispatcher]).
fn autocast_op(e: &Arc<OpEntry>, a: &Args, below: DispatchKeySet) -> Result<IValue> {
    let Some(p) = policy(&e.schema.name) else {
        return redispatch(e, a, below);
    };
    let vals = {
        // the casts themselves run below autocast
        let _off = ExcludeGuard::new(DispatchKey::AutocastCpu);
        let low = get_dtype();
        let to: Box<CastTo> = match p {
            CastPolicy::LowerPrecision => {
                Box::new(move |t: &Tensor| (t.dtype() == DType::F32).then_some(low))
            }
            CastPolicy::Fp32 => Box::new(|t: &Tensor| {
                matches!(t.dtype(), DType::F16 | DType::BF16).then_some(DType::F32)
            }),
            CastPolicy::Promote => {
                let w = widest(a.values());
                Box::new(move |t: &Tensor| if eligible(t) { w } else { None })
            }
        };
        a.values()
            .iter()
            .map(|v| cast(v, &*to))
            .collect::<Result<Vec<_>>>()?
    };
    redispatch(e, &a.with_values(vals), below)
}
