//! TorchScript's operator upgraders: where an op's behaviour changed
//! after an archive was written, the call is redirected to an op that
//! keeps the old behaviour, chosen by the archive's version as PyTorch's
//! `operator_upgraders` table does:
//!
//! | op | versions | old behaviour |
//! |---|---|---|
//! | `div`, `div_` (Tensor, Scalar) | 0–3 | integer ÷ integer truncates |
//! | `full` | 0–4 | an integer fill without a dtype makes a float tensor |
//!
//! `gelu` (0–9, before its `approximate` argument) and `linspace` /
//! `logspace` (0–7 / 0–8, before `steps` was required) bind to today's
//! schemas with today's defaults, which give the old results, so they
//! need no upgrader here.

use super::lower::Sym;
use ferrotorch_core::dispatch::{call, register_op, IValue};
use ferrotorch_core::{DType, Result};
use std::sync::Once;

fn integral(v: &IValue) -> bool {
    match v {
        IValue::Tensor(t) => !t.is_floating_point() && !t.dtype().is_complex(),
        IValue::Int(_) | IValue::Bool(_) => true,
        _ => false,
    }
}

/// `div` as before version 4: truncating when both sides are integers.
fn old_div(name: &str, a: &IValue, b: &IValue) -> Result<IValue> {
    if integral(a) && integral(b) {
        call(
            name,
            &[a.clone(), b.clone()],
            &[("rounding_mode", IValue::Str("trunc".into()))],
        )
    } else {
        call(name, &[a.clone(), b.clone()], &[])
    }
}

fn register() -> Result<()> {
    for (schema, op) in [
        (
            "upgraders::div_0_3.Tensor(Tensor self, Tensor other) -> Tensor",
            "div",
        ),
        (
            "upgraders::div_0_3.Scalar(Tensor self, Scalar other) -> Tensor",
            "div",
        ),
        (
            "upgraders::div__0_3.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
            "div_",
        ),
        (
            "upgraders::div__0_3.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
            "div_",
        ),
    ] {
        register_op(schema, move |a| {
            let v = a.values();
            old_div(op, &v[0], &v[1])
        })?;
    }
    register_op(
        "upgraders::full_0_4(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        |a| {
            let v = a.values();
            let dtype = match &v[2] {
                IValue::None => IValue::DType(DType::F32),
                d => d.clone(),
            };
            call("full", &[v[0].clone(), v[1].clone()], &[("dtype", dtype)])
        },
    )?;
    Ok(())
}

/// The op a call of `op` in an archive of `version` runs: its upgrader
/// where it has one (registered on first use), else `op` itself.
pub(super) fn name_for(op: &str, version: u64, kwargs: &[(&str, Sym<'_>)]) -> String {
    let has = |k: &str| kwargs.iter().any(|(n, _)| *n == k);
    let up = match op {
        "div" | "div_" if version <= 3 && !has("rounding_mode") => {
            // its Tensor and Scalar overloads, as div's
            Some(if op == "div" {
                "upgraders::div_0_3"
            } else {
                "upgraders::div__0_3"
            })
        }
        // tracing writes `dtype=None` out: the upgrader applies to it too
        "full"
            if version <= 4
                && kwargs
                    .iter()
                    .all(|(n, v)| *n != "dtype" || matches!(v, Sym::C(IValue::None))) =>
        {
            Some("upgraders::full_0_4")
        }
        _ => None,
    };
    match up {
        Some(u) => {
            static ONCE: Once = Once::new();
            ONCE.call_once(|| {
                // registering can only fail if the names were taken
                let _ = register();
            });
            u.to_string()
        }
        None => op.to_string(),
    }
}
