//! Functions generated code calls where it has no inline form: `extern
//! "C"` wrappers over the eager kernels' own scalar functions, so a
//! compiled op rounds as the eager one does (f64 transcendentals; f32
//! `sin`, `cos`, `log1p`, `pow`).

pub use ferrotorch_core::native::special::{erf, erfc};

/// A callable's address and arity, for the code generator.
#[derive(Clone, Copy, Debug)]
pub struct Libcall {
    /// Its address.
    pub addr: usize,
    /// How many arguments it takes (1 or 2).
    pub arity: usize,
}

macro_rules! libcalls {
    ($($name:ident($($a:ident),+): $t:ty => $body:expr;)*) => {
        $(
            extern "C" fn $name($($a: $t),+) -> $t {
                $body
            }
        )*
    };
}

libcalls! {
    f32_sin(x): f32 => x.sin();
    f32_cos(x): f32 => x.cos();
    f32_log1p(x): f32 => x.ln_1p();
    f32_pow(a, b): f32 => a.powf(b);
    f64_exp(x): f64 => x.exp();
    f64_expm1(x): f64 => x.exp_m1();
    f64_log(x): f64 => x.ln();
    f64_log1p(x): f64 => x.ln_1p();
    f64_tanh(x): f64 => x.tanh();
    f64_sin(x): f64 => x.sin();
    f64_cos(x): f64 => x.cos();
    f64_erf(x): f64 => erf(x);
    f64_gelu(x): f64 => 0.5 * x * erfc(-x / std::f64::consts::SQRT_2);
    f64_pow(a, b): f64 => a.powf(b);
}

/// The f32 function for `name` (`sin`, `cos`, `log1p`, `pow`).
pub fn f32_fn(name: &str) -> Option<Libcall> {
    let (addr, arity) = match name {
        "sin" => (f32_sin as extern "C" fn(f32) -> f32 as usize, 1),
        "cos" => (f32_cos as extern "C" fn(f32) -> f32 as usize, 1),
        "log1p" => (f32_log1p as extern "C" fn(f32) -> f32 as usize, 1),
        "pow" => (f32_pow as extern "C" fn(f32, f32) -> f32 as usize, 2),
        _ => return None,
    };
    Some(Libcall { addr, arity })
}

/// The f64 function for `name`.
pub fn f64_fn(name: &str) -> Option<Libcall> {
    type F1 = extern "C" fn(f64) -> f64;
    let one = |f: F1| {
        Some(Libcall {
            addr: f as usize,
            arity: 1,
        })
    };
    match name {
        "exp" => one(f64_exp),
        "expm1" => one(f64_expm1),
        "log" => one(f64_log),
        "log1p" => one(f64_log1p),
        "tanh" => one(f64_tanh),
        "sin" => one(f64_sin),
        "cos" => one(f64_cos),
        "erf" => one(f64_erf),
        "gelu" => one(f64_gelu),
        "pow" => Some(Libcall {
            addr: f64_pow as extern "C" fn(f64, f64) -> f64 as usize,
            arity: 2,
        }),
        _ => None,
    }
}

/// `dst[i] = f(src[i])` over a contiguous block: the
/// eager kernels' multiversioned loops (AVX-512 where the CPU has it),
/// for blocked kernels (Note [Blocked kernels] in `blocked.rs`). In place
/// is correct but slow: the vectoriser's overlap check then takes the
/// scalar loop, so callers pass distinct buffers.
type SliceFn<T> = extern "C" fn(*const T, *mut T, usize);

macro_rules! slice_fns {
    ($($name:ident: $t:ty => $f:expr;)*) => {
        $(
            extern "C" fn $name(src: *const $t, dst: *mut $t, n: usize) {
                // SAFETY: the caller passes `n` valid elements at both
                // (the same buffer or disjoint ones).
                unsafe { ferrotorch_kernels::simd::map1(n, src, 1, dst, 1, $f) }
            }
        )*
    };
}

use ferrotorch_kernels::math as km;

slice_fns! {
    slice_f32_exp: f32 => km::exp;
    slice_f32_expm1: f32 => km::expm1;
    slice_f32_tanh: f32 => km::tanh;
    slice_f32_sigmoid: f32 => km::sigmoid;
    slice_f32_log: f32 => km::ln;
    slice_f32_erf: f32 => km::erf;
    slice_f32_gelu_tanh: f32 => km::gelu_tanh;
    slice_f32_log1p: f32 => |x: f32| x.ln_1p();
    slice_f32_sin: f32 => |x: f32| x.sin();
    slice_f32_cos: f32 => |x: f32| x.cos();
    slice_f64_exp: f64 => |x: f64| x.exp();
    slice_f64_expm1: f64 => |x: f64| x.exp_m1();
    slice_f64_tanh: f64 => |x: f64| x.tanh();
    slice_f64_sigmoid: f64 => |x: f64| 1.0 / (1.0 + (-x).exp());
    slice_f64_log: f64 => |x: f64| x.ln();
    slice_f64_erf: f64 => erf;
    slice_f64_gelu: f64 => |x: f64| 0.5 * x * erfc(-x / std::f64::consts::SQRT_2);
    slice_f64_log1p: f64 => |x: f64| x.ln_1p();
    slice_f64_sin: f64 => |x: f64| x.sin();
    slice_f64_cos: f64 => |x: f64| x.cos();
}

/// Exact GELU as the eager kernel computes it: the cheap rational form,
/// blocks with inputs outside its range by the accurate one.
extern "C" fn slice_f32_gelu(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: as the other slice functions.
    unsafe {
        ferrotorch_kernels::simd::map1_tiered(
            n,
            src,
            1,
            dst,
            1,
            km::gelu_fast,
            km::gelu,
            |x: f32| !km::gelu_fast_ok(x),
        )
    }
}

/// `sig[i], tanh[i] = sigmoid(src[i]), tanh(src[i])` from one exponential
/// (`math::sigmoid_tanh`; Note [Paired transcendentals] in `blocked.rs`).
extern "C" fn slice_f32_sigmoid_tanh(src: *const f32, sig: *mut f32, tanh: *mut f32, n: usize) {
    // SAFETY: the caller passes `n` valid elements at each pointer, the
    // two outputs distinct block buffers.
    unsafe { km::sigmoid_tanh_slice(n, src, sig, tanh) }
}

/// A two-result block function `(src, dst0, dst1, n)`.
type PairFn = extern "C" fn(*const f32, *mut f32, *mut f32, usize);

/// The block function computing sigmoid and tanh of one argument
/// together, in that order: f32 only.
pub(crate) fn sigmoid_tanh_fn(single: bool) -> Option<usize> {
    single.then_some(slice_f32_sigmoid_tanh as PairFn as usize)
}

/// The block function of `f` for f32 (`single`) or f64, if it has one.
pub(crate) fn slice_fn(f: crate::expr::Unary, single: bool) -> Option<usize> {
    use crate::expr::Unary as U;
    let a32 = |g: SliceFn<f32>| Some(g as usize);
    let a64 = |g: SliceFn<f64>| Some(g as usize);
    if single {
        match f {
            U::Exp => a32(slice_f32_exp),
            U::Expm1 => a32(slice_f32_expm1),
            U::Tanh => a32(slice_f32_tanh),
            U::Sigmoid => a32(slice_f32_sigmoid),
            U::Log => a32(slice_f32_log),
            U::Erf => a32(slice_f32_erf),
            U::Gelu => a32(slice_f32_gelu),
            U::GeluTanh => a32(slice_f32_gelu_tanh),
            U::Log1p => a32(slice_f32_log1p),
            U::Sin => a32(slice_f32_sin),
            U::Cos => a32(slice_f32_cos),
            _ => None,
        }
    } else {
        match f {
            U::Exp => a64(slice_f64_exp),
            U::Expm1 => a64(slice_f64_expm1),
            U::Tanh => a64(slice_f64_tanh),
            U::Sigmoid => a64(slice_f64_sigmoid),
            U::Log => a64(slice_f64_log),
            U::Erf => a64(slice_f64_erf),
            U::Gelu => a64(slice_f64_gelu),
            U::Log1p => a64(slice_f64_log1p),
            U::Sin => a64(slice_f64_sin),
            U::Cos => a64(slice_f64_cos),
            _ => None,
        }
    }
}
