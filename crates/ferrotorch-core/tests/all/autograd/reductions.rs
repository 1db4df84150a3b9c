//! Gradchecks for reductions, scans, sorting and the special functions
//! added with them; values of polygamma against closed forms.

use super::{check, input, F};
use ferrotorch_core::Tensor;

#[test]
fn statistics_and_norms() {
    let x = || vec![input(&[3, 4], -1.0, 1.0, 11)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        ("var", |x| Ok(vec![x[0].var(Some(&[1]), None, false)?]), x()),
        (
            "var_all_c0",
            |x| Ok(vec![x[0].var(None, Some(0.0), false)?]),
            x(),
        ),
        ("std", |x| Ok(vec![x[0].std(Some(&[0]), None, true)?]), x()),
        (
            "var_mean",
            |x| {
                let (v, m) = x[0].var_mean(Some(&[1]), Some(1.0), false)?;
                Ok(vec![v, m])
            },
            x(),
        ),
        (
            "std_mean",
            |x| {
                let (s, m) = x[0].std_mean(None, None, false)?;
                Ok(vec![s, m])
            },
            x(),
        ),
        ("logsumexp", |x| Ok(vec![x[0].logsumexp(&[1], false)?]), x()),
        (
            "logsumexp_keep",
            |x| Ok(vec![x[0].logsumexp(&[0, 1], true)?]),
            x(),
        ),
        (
            "norm2",
            |x| Ok(vec![x[0].norm(2.0, Some(&[1]), false)?]),
            x(),
        ),
        ("norm1", |x| Ok(vec![x[0].norm(1.0, None, false)?]), x()),
        (
            "norm3",
            |x| Ok(vec![x[0].norm(3.0, Some(&[0]), true)?]),
            x(),
        ),
        (
            "norm_inf",
            |x| Ok(vec![x[0].norm(f64::INFINITY, Some(&[1]), false)?]),
            x(),
        ),
        ("prod", |x| Ok(vec![x[0].prod()?]), x()),
        (
            "prod_dim",
            |x| Ok(vec![x[0].prod_dim(Some(&[1]), false, None)?]),
            x(),
        ),
        (
            "prod_with_zero",
            |x| {
                Ok(vec![x[0].mul(&zero_at(&x[0], 5)?)?.prod_dim(
                    Some(&[1]),
                    true,
                    None,
                )?])
            },
            x(),
        ),
        (
            "prod_two_zeros",
            |x| {
                Ok(vec![x[0]
                    .mul(&zero_at(&x[0], 5)?)?
                    .mul(&zero_at(&x[0], 6)?)?
                    .prod()?])
            },
            x(),
        ),
        (
            "median_dim",
            |x| Ok(vec![x[0].median_dim(1, false)?.0]),
            x(),
        ),
        ("median", |x| Ok(vec![x[0].median()?]), x()),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

/// A tensor of ones shaped like `x` with a zero at flat position `i`.
fn zero_at(x: &Tensor, i: usize) -> ferrotorch_core::Result<Tensor> {
    let mut v = vec![1.0f64; x.numel()];
    v[i] = 0.0;
    Tensor::from_vec(v, x.shape())
}

#[test]
fn scans_and_sorting() {
    let x = || vec![input(&[3, 4], -1.0, 1.0, 12)];
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        ("cumsum", |x| Ok(vec![x[0].cumsum(1, None)?]), x()),
        ("cumprod", |x| Ok(vec![x[0].cumprod(0, None)?]), x()),
        (
            "cumprod_with_zero",
            |x| Ok(vec![x[0].mul(&zero_at(&x[0], 5)?)?.cumprod(1, None)?]),
            x(),
        ),
        ("logcumsumexp", |x| Ok(vec![x[0].logcumsumexp(1)?]), x()),
        ("cummax", |x| Ok(vec![x[0].cummax(1)?.0]), x()),
        ("cummin", |x| Ok(vec![x[0].cummin(0)?.0]), x()),
        ("sort", |x| Ok(vec![x[0].sort(1, true)?.0]), x()),
        ("topk", |x| Ok(vec![x[0].topk(2, 0, true, true)?.0]), x()),
        ("max_dim", |x| Ok(vec![x[0].max_dim(1, true)?.0]), x()),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn special_and_pointwise_extras() {
    let x = || vec![input(&[2, 3], 0.3, 2.5, 13)];
    let unit = || vec![input(&[2, 3], 0.05, 0.95, 14)];
    let three = || {
        vec![
            input(&[2, 3], -1.0, 1.0, 15),
            input(&[3], -1.0, 1.0, 16),
            input(&[2, 1], 0.1, 0.9, 17),
        ]
    };
    let cases: Vec<(&str, F, Vec<Tensor>)> = vec![
        ("digamma", |x| Ok(vec![x[0].digamma()?]), x()),
        ("polygamma1", |x| Ok(vec![x[0].polygamma(1)?]), x()),
        ("polygamma2", |x| Ok(vec![x[0].polygamma(2)?]), x()),
        ("logit", |x| Ok(vec![x[0].logit(None)?]), unit()),
        ("logit_eps", |x| Ok(vec![x[0].logit(Some(0.2))?]), unit()),
        (
            "nan_to_num",
            |x| Ok(vec![x[0].nan_to_num(None, None, None)?]),
            x(),
        ),
        ("lerp", |x| Ok(vec![x[0].lerp(&x[1], &x[2])?]), three()),
        ("lerp_scalar", |x| Ok(vec![x[0].lerp(&x[1], 0.3)?]), three()),
        (
            "addcmul",
            |x| Ok(vec![x[0].addcmul(&x[1], &x[2], 0.5)?]),
            three(),
        ),
        (
            "addcdiv",
            |x| Ok(vec![x[0].addcdiv(&x[1], &x[2], 2.0)?]),
            three(),
        ),
    ];
    for (name, f, inputs) in cases {
        check(name, f, &inputs, true);
    }
}

#[test]
fn polygamma_matches_closed_forms() {
    use std::f64::consts::PI;
    let zeta3 = 1.202_056_903_159_594_2;
    let x = Tensor::from_slice(&[1.0f64, 0.5, 1.0, 1.0, -0.5]);
    let n = [1u32, 1, 2, 3, 1];
    let want = [
        PI * PI / 6.0,
        PI * PI / 2.0,
        -2.0 * zeta3,
        PI.powi(4) / 15.0,
        PI * PI / 2.0 + 4.0,
    ];
    for (k, (&n, &w)) in n.iter().zip(&want).enumerate() {
        let got = x
            .narrow(0, k as i64, 1)
            .unwrap()
            .polygamma(n)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()[0];
        assert!(
            (got - w).abs() < 1e-12 * w.abs().max(1.0),
            "polygamma({n}, ·)[{k}] = {got}, want {w}"
        );
    }
}
