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
