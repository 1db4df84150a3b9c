//! `torch.linalg`, `torch.special` and the composite ops from Rust:
//! values against hand-computed ones, identities (A·A⁻¹ = I, Q R = A,
//! V Λ Vᵀ = A, U S Vh = A) and gradcheck for every derivative.

use ferrotorch_core::autograd::{self, gradcheck, GradcheckOptions};
use ferrotorch_core::{Result, Tensor};

fn m64(rows: usize, cols: usize, v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[rows, cols]).unwrap()
}

fn close(a: &Tensor, b: &Tensor, tol: f64) {
    let (x, y) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    assert_eq!(a.shape(), b.shape());
    for (p, q) in x.iter().zip(&y) {
        assert!((p - q).abs() <= tol * (1.0 + q.abs()), "{x:?} != {y:?}");
    }
}

/// A well-conditioned 3×3 matrix and its pieces.
fn a3() -> Tensor {
    m64(3, 3, &[4.0, 1.0, 0.5, 1.0, 3.0, -1.0, 0.5, -1.0, 5.0])
}

#[track_caller]
fn check_grad(f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Result<()> {
    let at = std::panic::Location::caller();
    let x = x.detach().requires_grad_(true)?;
    gradcheck(
        |xs| Ok(vec![f(&xs[0])?]),
        std::slice::from_ref(&x),
        GradcheckOptions::default(),
    )
    .map_err(|e| {
        ferrotorch_core::Error::new(ferrotorch_core::ErrorKind::Runtime, format!("{at}: {e}"))
    })
}

#[test]
fn solve_inv_det_match_closed_forms() -> Result<()> {
    let a = m64(2, 2, &[2.0, 1.0, 1.0, 3.0]);
    // det = 5, inverse = [[3, -1], [-1, 2]] / 5
    close(&a.linalg_det()?, &Tensor::from_vec(vec![5.0], &[])?, 1e-12);
    close(&a.linalg_inv()?, &m64(2, 2, &[0.6, -0.2, -0.2, 0.4]), 1e-12);
    let b = m64(2, 1, &[1.0, 2.0]);
    close(&a.linalg_solve(&b, true)?, &m64(2, 1, &[0.2, 0.6]), 1e-12);
    let (sign, logabs) = m64(2, 2, &[0.0, 1.0, 1.0, 0.0]).linalg_slogdet()?;
    assert_eq!(sign.to_vec_f64()?, [-1.0]);
    assert!(logabs.to_vec_f64()?[0].abs() < 1e-15);
    // a singular matrix: solve refuses it with torch's message
    let err = m64(2, 2, &[1.0, 2.0, 2.0, 4.0])
        .linalg_solve(&b, true)
        .unwrap_err();
    assert!(err.to_string().contains("singular"), "{err}");
    Ok(())
}

#[test]
fn factorizations_reconstruct_their_input() -> Result<()> {
    let a = a3();
    let (q, r) = a.linalg_qr("reduced")?;
    close(&q.matmul(&r)?, &a, 1e-12);
    // LAPACK's sign convention: R[0,0] = -sign(a00) ‖a[:, 0]‖
    assert!((r.to_vec_f64()?[0] + (16.0f64 + 1.0 + 0.25).sqrt()).abs() < 1e-12);
    let (l, v) = a.linalg_eigh("L")?;
    let recon = v.mul(&l.unsqueeze(0)?)?.matmul(&v.t()?)?;
    close(&recon, &a, 1e-12);
    let (u, s, vh) = a.linalg_svd(false)?;
    close(&u.mul(&s.unsqueeze(0)?)?.matmul(&vh)?, &a, 1e-12);
    let lc = a.linalg_cholesky(false)?;
    close(&lc.matmul(&lc.t()?)?, &a, 1e-12);
    let (p, lo, up) = a.linalg_lu(true)?;
    close(&p.matmul(&lo)?.matmul(&up)?, &a, 1e-12);
    Ok(())
}

#[test]
fn linalg_derivatives_pass_gradcheck() -> Result<()> {
    let a = a3();
    let b = m64(3, 2, &[1.0, -1.4, 0.5, 2.0, -0.3, 0.7]);
    check_grad(|x| x.linalg_inv(), &a)?;
    check_grad(|x| x.linalg_det(), &a)?;
    check_grad(|x| Ok(x.linalg_slogdet()?.1), &a)?;
    check_grad(|x| x.linalg_solve(&b, true), &a)?;
    check_grad(|x| a.linalg_solve(x, true), &b)?;
    // symmetric uses of symmetric-input ops, as torch's gradcheck wraps them
    let sym = |x: &Tensor| x.add(&x.t()?)?.div(2.0);
    check_grad(|x| sym(x)?.linalg_cholesky(false), &a)?;
    check_grad(|x| Ok(sym(x)?.linalg_eigh("L")?.0), &a)?;
    check_grad(|x| sym(x)?.linalg_eigh("L")?.1.abs(), &a)?;
    check_grad(|x| Ok(x.linalg_svd(false)?.1), &b)?;
    check_grad(|x| Ok(x.linalg_qr("reduced")?.1), &b)?;
    check_grad(|x| Ok(x.t()?.linalg_qr("reduced")?.0), &b)?;
    check_grad(|x| Ok(x.linalg_lu_factor(true)?.0), &a)?;
    check_grad(|x| Ok(x.t()?.linalg_lu_factor(true)?.0), &b)?;
    check_grad(|x| x.linalg_pinv(None, None, false), &b)?;
    check_grad(|x| x.linalg_matrix_exp(), &a.div(4.0)?)?;
    check_grad(
        |x| x.linalg_solve_triangular(&b, true, true, false),
        &a.triu(0)?,
    )?;
    Ok(())
}

#[test]
fn norms_and_matrix_functions() -> Result<()> {
    let a = m64(2, 2, &[1.0, -2.0, 3.0, 4.0]);
    let col_max = a.linalg_matrix_norm(1.0, &[-2, -1], false)?.to_vec_f64()?[0];
    let row_max = a
        .linalg_matrix_norm(f64::INFINITY, &[-2, -1], false)?
        .to_vec_f64()?[0];
    assert_eq!((col_max, row_max), (6.0, 7.0));
    let fro = a
        .linalg_matrix_norm_str("fro", &[-2, -1], false)?
        .to_vec_f64()?[0];
    assert!((fro - 30f64.sqrt()).abs() < 1e-12);
    // exp of a nilpotent matrix: I + N
    let n = m64(2, 2, &[0.0, 1.0, 0.0, 0.0]);
    close(
        &n.linalg_matrix_exp()?,
        &m64(2, 2, &[1.0, 1.0, 0.0, 1.0]),
        1e-14,
    );
    // exp(diag(1, 2))
    let d = m64(2, 2, &[1.0, 0.0, 0.0, 2.0]);
    close(
        &d.linalg_matrix_exp()?,
        &m64(2, 2, &[1f64.exp(), 0.0, 0.0, 2f64.exp()]),
        1e-13,
    );
    close(
        &a.linalg_matrix_power(3)?,
        &a.matmul(&a)?.matmul(&a)?,
        1e-12,
    );
    close(&a.linalg_matrix_power(-1)?, &a.linalg_inv()?, 1e-12);
    // subgradient 0 of p-norms at zero (torch's), for p < 2 too
    let z = Tensor::zeros(&[3], ferrotorch_core::DType::F64)?.requires_grad_(true)?;
    z.norm(0.5, None, false)?.backward()?;
    assert_eq!(z.grad().unwrap().to_vec_f64()?, [0.0, 0.0, 0.0]);
    Ok(())
}

#[test]
fn special_functions_match_tables() -> Result<()> {
    let x = Tensor::from_vec(vec![0.0f64, 1.0, -2.0], &[3])?;
    // I0(1) = 1.2660658777520082, I1(-2) = -1.5906368546373291 (A&S 9.8)
    close(
        &x.i0()?,
        &Tensor::from_vec(
            vec![1.0, 1.266_065_877_752_008_2, 2.279_585_302_336_067],
            &[3],
        )?,
        1e-13,
    );
    close(
        &x.special_i1()?,
        &Tensor::from_vec(
            vec![0.0, 0.565_159_103_992_485, -1.590_636_854_637_329],
            &[3],
        )?,
        1e-13,
    );
    close(
        &x.special_ndtr()?,
        &Tensor::from_vec(
            vec![0.5, 0.841_344_746_068_542_9, 0.022_750_131_948_179_2],
            &[3],
        )?,
        1e-13,
    );
    close(&x.special_ndtr()?.special_ndtri()?, &x, 1e-12);
    // gradients
    let p = Tensor::from_vec(vec![0.3f64, 1.7, -2.5], &[3])?;
    check_grad(|t| t.i0(), &p)?;
    check_grad(|t| t.special_i0e(), &p)?;
    check_grad(|t| t.special_i1(), &p)?;
    check_grad(|t| t.special_i1e(), &p)?;
    check_grad(|t| t.special_ndtr(), &p)?;
    check_grad(|t| t.special_log_ndtr(), &p)?;
    check_grad(|t| t.special_erfcx(), &p)?;
    check_grad(|t| t.special_bessel_j1(), &p)?;
    check_grad(
        |t| t.special_ndtri(),
        &Tensor::from_vec(vec![0.1f64, 0.5, 0.93], &[3])?,
    )?;
    check_grad(
        |t| t.special_entr(),
        &Tensor::from_vec(vec![0.1f64, 0.5, 2.0], &[3])?,
    )?;
    check_grad(|t| t.abs()?.add(0.5)?.special_modified_bessel_k1(), &p)?;
    Ok(())
}

#[test]
fn composite_ops_values_and_gradients() -> Result<()> {
    let a = m64(2, 2, &[1.0, 2.0, 3.0, 4.0]);
    let b = m64(1, 2, &[0.0, 1.0]);
    // kron([[1,2],[3,4]], [[0,1]]) = [[0,1,0,2],[0,3,0,4]]
    close(
        &a.kron(&b)?,
        &m64(2, 4, &[0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0]),
        0.0,
    );
    close(
        &a.rot90(1, &[0, 1])?,
        &m64(2, 2, &[2.0, 4.0, 1.0, 3.0]),
        0.0,
    );
    close(&a.trace()?, &Tensor::from_vec(vec![5.0], &[])?, 0.0);
    let v = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
    close(
        &v.diag_embed(1, -2, -1)?,
        &m64(3, 3, &[0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]),
        0.0,
    );
    let x = Tensor::from_vec(vec![1.0f64, 4.0, 9.0, 16.0], &[4])?;
    close(
        &x.diff(1, -1, None, None)?,
        &Tensor::from_vec(vec![3.0, 5.0, 7.0], &[3])?,
        0.0,
    );
    close(
        &x.trapezoid(None, 1.0, -1)?,
        &Tensor::from_vec(vec![2.5 + 6.5 + 12.5], &[])?,
        1e-15,
    );
    close(
        &Tensor::from_vec(vec![0.0f64, 1.0], &[2])?
            .logaddexp(&Tensor::from_vec(vec![0.0f64, f64::NEG_INFINITY], &[2])?)?,
        &Tensor::from_vec(vec![2f64.ln(), 1.0], &[2])?,
        1e-15,
    );
    let c = m64(2, 3, &[1.0, 2.0, 3.0, 2.0, 4.0, 7.0]);
    // cov of rows: var(1,2,3) = 1, var(2,4,7) = 6.333..., cov = 2.5
    close(
        &c.cov(1, None, None)?,
        &m64(2, 2, &[1.0, 2.5, 2.5, 19.0 / 3.0]),
        1e-14,
    );
    let p = m64(2, 3, &[0.3, -1.2, 0.8, 1.1, 0.4, -0.6]);
    check_grad(|t| t.cdist(&p.flip(&[0])?, 2.0), &p)?;
    check_grad(|t| t.cross(&p.flip(&[1])?, Some(1)), &p)?;
    check_grad(
        |t| t.sinc(),
        &Tensor::from_vec(vec![0.0f64, 0.3, -1.5], &[3])?,
    )?;
    check_grad(|t| t.kron(&p), &a)?;
    check_grad(|t| t.cov(1, None, None), &p)?;
    check_grad(|t| t.renorm(2.0, 0, 1.0), &p)?;
    Ok(())
}

#[test]
fn sinc_gradient_is_pytorchs_one_formula() -> Result<()> {
    // values printed by PyTorch 2.15 (`torch.sinc`, float32): at 1e-30
    // x² underflows, where the composition's gradient was -inf and
    // PyTorch's is 0; an infinite output gradient stays infinite at ±1
    // (the composition gave NaN), and is 0 at 0
    let x = Tensor::from_vec(vec![0.0f32, 1.0, -1.0, 0.5, 1e-30], &[5])?.requires_grad_(true)?;
    let y = x.sinc()?;
    assert_eq!(y.grad_fn().unwrap().name(), "SincBackward0");
    let g = autograd::grad(
        std::slice::from_ref(&y),
        std::slice::from_ref(&x),
        Some(&[y.ones_like()?]),
        Some(true),
        false,
        false,
    )?;
    let g = g[0].clone().unwrap().to_vec::<f32>()?;
    assert_eq!(g[0], 0.0);
    assert_eq!(g[1], -1.0);
    assert_eq!(g[2], 1.0);
    assert!((g[3] + 1.273_239_5).abs() < 1e-6, "{}", g[3]);
    assert_eq!(g[4], 0.0);
    let inf = y.ones_like()?.mul(f64::INFINITY)?;
    let g = autograd::grad(&[y], &[x], Some(&[inf]), None, false, false)?;
    let g = g[0].clone().unwrap().to_vec::<f32>()?;
    assert_eq!(
        g[..4],
        [0.0, f32::NEG_INFINITY, f32::INFINITY, f32::NEG_INFINITY]
    );
    assert_eq!(g[4], 0.0);
    Ok(())
}
