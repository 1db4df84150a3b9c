//! Complex tensors from Rust: values against hand-computed complex
//! arithmetic, the real/complex views sharing storage, torch's printing,
//! gradients in torch's convention (∂L/∂x + i ∂L/∂y) and gradcheck of each
//! complex op through its real view.

use ferrotorch_core::autograd::{gradcheck, GradcheckOptions};
use ferrotorch_core::{DType, Result, Scalar, Tensor};

/// A complex128 tensor from `(re, im)` pairs.
fn c(v: &[(f64, f64)], shape: &[usize]) -> Tensor {
    let flat: Vec<f64> = v.iter().flat_map(|&(a, b)| [a, b]).collect();
    let mut s = shape.to_vec();
    s.push(2);
    Tensor::from_vec(flat, &s)
        .unwrap()
        .view_as_complex()
        .unwrap()
}

/// `(re, im)` pairs of a complex tensor.
fn pairs(z: &Tensor) -> Vec<(f64, f64)> {
    let v = z
        .view_as_real()
        .unwrap()
        .contiguous()
        .unwrap()
        .to_vec_f64()
        .unwrap();
    v.chunks(2).map(|p| (p[0], p[1])).collect()
}

#[track_caller]
fn close(z: &Tensor, want: &[(f64, f64)]) {
    let got = pairs(z);
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.0 - w.0).abs() < 1e-9 * (1.0 + w.0.abs())
                && (g.1 - w.1).abs() < 1e-9 * (1.0 + w.1.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

fn cm(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

#[test]
fn arithmetic_matches_complex_formulas() {
    let (p, q) = ((1.0, 2.0), (-3.0, 0.5));
    let a = c(&[p, q], &[2]);
    let b = c(&[(0.5, -1.0), (2.0, 2.0)], &[2]);
    close(&a.add(&b).unwrap(), &[(1.5, 1.0), (-1.0, 2.5)]);
    close(&a.sub(&b).unwrap(), &[(0.5, 3.0), (-5.0, -1.5)]);
    close(
        &a.mul(&b).unwrap(),
        &[cm(p, (0.5, -1.0)), cm(q, (2.0, 2.0))],
    );
    // (a / b) * b == a
    close(&a.div(&b).unwrap().mul(&b).unwrap(), &[p, q]);
    // a real tensor promotes; a complex scalar too
    let r = Tensor::from_vec(vec![2.0f64, 3.0], &[2]).unwrap();
    close(&a.mul(&r).unwrap(), &[(2.0, 4.0), (-9.0, 1.5)]);
    close(
        &r.add(Scalar::Complex(0.0, 1.0)).unwrap(),
        &[(2.0, 1.0), (3.0, 1.0)],
    );
    // float32 + complex scalar -> complex64
    let r32 = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert_eq!(
        r32.mul(Scalar::Complex(0.0, 1.0)).unwrap().dtype(),
        DType::C64
    );
    // float64 tensor with a complex64 tensor -> complex128, as torch
    let z64 = c(&[(1.0, 1.0)], &[1]).to_dtype(DType::C64).unwrap();
    assert_eq!(
        r.mul(z64.expand(&[2]).unwrap()).unwrap().dtype(),
        DType::C128
    );
    // exp(iπ) = -1, |3+4i| = 5, angle(i) = π/2
    let e = c(&[(0.0, std::f64::consts::PI)], &[1]).exp().unwrap();
    close(&e, &[(-1.0, 0.0)]);
    let z = c(&[(3.0, 4.0), (0.0, 1.0)], &[2]);
    assert_eq!(z.abs().unwrap().to_vec_f64().unwrap(), vec![5.0, 1.0]);
    assert_eq!(z.abs().unwrap().dtype(), DType::F64);
    assert!(
        (z.angle().unwrap().to_vec_f64().unwrap()[1] - std::f64::consts::FRAC_PI_2).abs() < 1e-15
    );
    // sqrt(-4) = 2i, log(-1) = iπ, z**2 by multiplication
    close(&c(&[(-4.0, 0.0)], &[1]).sqrt().unwrap(), &[(0.0, 2.0)]);
    close(
        &c(&[(-1.0, 0.0)], &[1]).log().unwrap(),
        &[(0.0, std::f64::consts::PI)],
    );
    close(
        &z.pow(2).unwrap(),
        &[cm((3.0, 4.0), (3.0, 4.0)), (-1.0, 0.0)],
    );
    close(&z.conj().unwrap(), &[(3.0, -4.0), (0.0, -1.0)]);
    close(&z.reciprocal().unwrap(), &[(0.12, -0.16), (0.0, -1.0)]);
    close(&z.sgn().unwrap(), &[(0.6, 0.8), (0.0, 1.0)]);
}

#[test]
fn reductions_and_products() {
    let a = c(&[(1.0, 2.0), (3.0, -1.0), (0.0, 1.0), (2.0, 2.0)], &[2, 2]);
    close(&a.sum().unwrap(), &[(6.0, 4.0)]);
    close(
        &a.sum_dim(Some(&[0]), false, None).unwrap(),
        &[(1.0, 3.0), (5.0, 1.0)],
    );
    close(
        &a.mean_dim(Some(&[-1]), true, None).unwrap(),
        &[(2.0, 0.5), (1.0, 1.5)],
    );
    let b = c(&[(1.0, 0.0), (0.0, 1.0), (2.0, -1.0), (1.0, 1.0)], &[2, 2]);
    let m = a.matmul(&b).unwrap();
    let (av, bv) = (pairs(&a), pairs(&b));
    let add = |x: (f64, f64), y: (f64, f64)| (x.0 + y.0, x.1 + y.1);
    let want: Vec<(f64, f64)> = (0..2)
        .flat_map(|i| (0..2).map(move |j| (i, j)))
        .map(|(i, j)| add(cm(av[2 * i], bv[j]), cm(av[2 * i + 1], bv[2 + j])))
        .collect();
    close(&m, &want);
    // vdot conjugates its first argument: vdot(z, z) = |z|²
    let v = c(&[(1.0, 2.0), (3.0, -1.0)], &[2]);
    close(&v.vdot(&v).unwrap(), &[(15.0, 0.0)]);
}

#[test]
fn views_share_storage_and_check_layout() {
    let z = c(&[(1.0, 2.0), (3.0, 4.0)], &[2]);
    let r = z.real().unwrap();
    r.mul_(10.0).unwrap();
    close(&z, &[(10.0, 2.0), (30.0, 4.0)]);
    z.imag().unwrap().fill_(Scalar::Float(-1.0)).unwrap();
    close(&z, &[(10.0, -1.0), (30.0, -1.0)]);
    assert_eq!(z.view_as_real().unwrap().shape(), &[2, 2]);
    // a real tensor whose last dim is not (re, im) pairs
    let bad = Tensor::from_vec(vec![1.0f64; 6], &[2, 3]).unwrap();
    let e = bad.view_as_complex().unwrap_err().to_string();
    assert!(e.contains("last dimension of size 2"), "{e}");
    let e = bad
        .t()
        .unwrap()
        .contiguous()
        .unwrap()
        .reshape(&[3, 2])
        .unwrap()
        .t()
        .unwrap();
    assert!(e.view_as_complex().is_err());
    let e = Tensor::from_vec(vec![1i64, 2], &[1, 2])
        .unwrap()
        .view_as_complex()
        .unwrap_err();
    assert!(e.to_string().contains("float and double"), "{e}");
    assert!(Tensor::from_vec(vec![1.0f64], &[1])
        .unwrap()
        .imag()
        .is_err());
    // transposed complex views stay views
    let m = c(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)], &[2, 2]);
    close(
        &m.t().unwrap().contiguous().unwrap(),
        &[(1.0, 1.0), (3.0, 3.0), (2.0, 2.0), (4.0, 4.0)],
    );
    assert!(m.item().is_err());
    assert_eq!(
        c(&[(1.5, -2.0)], &[]).item().unwrap(),
        Scalar::Complex(1.5, -2.0)
    );
}

#[test]
fn ops_without_complex_meaning_refuse_complex_tensors() {
    let z = c(&[(1.0, 2.0)], &[1]);
    use ferrotorch_core::dispatch::{call, IValue};
    let one = |t: &Tensor| -> Vec<IValue> { vec![t.clone().into()] };
    let two = |t: &Tensor| -> Vec<IValue> { vec![t.clone().into(), 0.into()] };
    for (op, args) in [
        ("max", one(&z)),
        ("sort", one(&z)),
        ("floor", one(&z)),
        ("clamp", two(&z)),
        ("lt", two(&z)),
    ] {
        let e = call(op, &args, &[]).unwrap_err().to_string();
        assert!(
            e.contains("not implemented for 'ComplexDouble'"),
            "{op}: {e}"
        );
    }
    assert!(z.floor().is_err());
}

#[test]
fn prints_as_torch() {
    let z = c(&[(1.0, 2.0), (-3.5, -1.0)], &[2])
        .to_dtype(DType::C64)
        .unwrap();
    assert_eq!(format!("{z}"), "tensor([ 1.0000+2.j, -3.5000-1.j])");
    let z = c(&[(1.0, 0.0)], &[1]);
    assert_eq!(format!("{z}"), "tensor([1.+0.j], dtype=torch.complex128)");
}

#[test]
fn gradients_follow_torchs_convention() -> Result<()> {
    // L = |z|² gives dL/dz = 2z in torch's convention
    let z = c(&[(1.0, 2.0), (-0.5, 3.0)], &[2]).requires_grad_(true)?;
    z.abs()?.pow(2)?.sum()?.backward()?;
    close(&z.grad().unwrap(), &[(2.0, 4.0), (-1.0, 6.0)]);
    // L = Re(w·z) gives conj(w)
    let z = c(&[(1.0, 2.0)], &[1]).requires_grad_(true)?;
    let w = c(&[(3.0, -1.0)], &[1]);
    z.mul(&w)?.real()?.sum()?.backward()?;
    close(&z.grad().unwrap(), &[(3.0, 1.0)]);
    Ok(())
}

#[test]
fn gradcheck_each_op_through_the_real_view() -> Result<()> {
    let x = Tensor::from_vec(vec![0.7f64, -0.4, 1.3, 0.9, -1.1, 0.2], &[3, 2])?;
    let y = Tensor::from_vec(vec![0.3f64, 0.8, -0.6, 0.5, 1.2, -0.7], &[3, 2])?;
    type Op = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let ops: Vec<(&str, Op)> = vec![
        ("add", |a, b| a.add(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("pow", |a, b| a.pow(b)),
        ("exp", |a, _| a.exp()),
        ("log", |a, _| a.log()),
        ("sqrt", |a, _| a.sqrt()),
        ("sin", |a, _| a.sin()),
        ("tanh", |a, _| a.tanh()),
        ("sigmoid", |a, _| a.sigmoid()),
        ("reciprocal", |a, _| a.reciprocal()),
        ("abs", |a, _| a.abs()),
        ("angle", |a, _| a.angle()),
        ("sgn", |a, _| a.sgn()),
        ("conj", |a, _| a.conj()),
        ("matmul", |a, b| a.unsqueeze(1)?.matmul(&b.unsqueeze(0)?)),
        ("sum", |a, _| a.sum()),
        ("mean", |a, _| a.mean()),
        ("polar", |a, _| {
            ferrotorch_core::native::complex::polar(&a.abs()?, &a.angle()?)
        }),
    ];
    for (name, op) in ops {
        let r = gradcheck(
            |xs| {
                let (a, b) = (xs[0].view_as_complex()?, xs[1].view_as_complex()?);
                let out = op(&a, &b)?;
                Ok(vec![if out.is_complex() {
                    out.view_as_real()?
                } else {
                    out
                }])
            },
            &[x.requires_grad_(true)?, y.requires_grad_(true)?],
            GradcheckOptions::default(),
        );
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    Ok(())
}

#[test]
fn copies_of_transposed_complex_tensors_are_whole_elements() {
    // the tiled copy gathers transposed operands a tile at a time; a
    // complex128 element is 16 bytes (this copied 8 and read past the
    // scratch tile)
    for n in [7usize, 22, 40, 70] {
        let v: Vec<(f64, f64)> = (0..3 * 16 * n)
            .map(|i| (i as f64, -(i as f64) - 0.5))
            .collect();
        let z = c(&v, &[3, 16, n]);
        for dt in [DType::C128, DType::C64] {
            let t = z.to_dtype(dt).unwrap().transpose(1, 2).unwrap();
            let got = pairs(&t.contiguous().unwrap().to_dtype(DType::C128).unwrap());
            let want: Vec<(f64, f64)> = (0..3)
                .flat_map(|b| (0..n).flat_map(move |j| (0..16).map(move |i| (b, i, j))))
                .map(|(b, i, j)| v[(b * 16 + i) * n + j])
                .collect();
            assert_eq!(got, want, "n={n} {dt}");
        }
    }
}

/// The DFT by its definition, `Σ x_k e^{∓2πi jk/n}`.
fn dft(x: &[(f64, f64)], forward: bool) -> Vec<(f64, f64)> {
    let n = x.len();
    let s = if forward { -1.0 } else { 1.0 };
    (0..n)
        .map(|j| {
            x.iter().enumerate().fold((0.0, 0.0), |acc, (k, &v)| {
                let a = s * 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                let w = (a.cos(), a.sin());
                let p = cm(v, w);
                (acc.0 + p.0, acc.1 + p.1)
            })
        })
        .collect()
}

#[test]
fn fft_matches_the_definition() -> Result<()> {
    let v: Vec<(f64, f64)> = (0..7)
        .map(|i| ((i as f64).sin(), (i as f64 * 0.3).cos()))
        .collect();
    let z = c(&v, &[7]);
    close(&z.fft_fft(None, -1, None)?, &dft(&v, true));
    let inv: Vec<(f64, f64)> = dft(&v, false)
        .iter()
        .map(|p| (p.0 / 7.0, p.1 / 7.0))
        .collect();
    close(&z.fft_ifft(None, -1, None)?, &inv);
    let s = 1.0 / 7f64.sqrt();
    let ortho: Vec<(f64, f64)> = dft(&v, true).iter().map(|p| (p.0 * s, p.1 * s)).collect();
    close(&z.fft_fft(None, 0, Some("ortho"))?, &ortho);
    // rfft keeps the n/2 + 1 non-negative frequencies of a real signal
    let r: Vec<f64> = (0..8).map(|i| (i as f64 * 0.7).cos() + i as f64).collect();
    let rt = Tensor::from_vec(r.clone(), &[8])?;
    let full = dft(&r.iter().map(|&x| (x, 0.0)).collect::<Vec<_>>(), true);
    close(&rt.fft_rfft(None, -1, None)?, &full[..5]);
    // irfft inverts it, for even and odd lengths
    let back = rt.fft_rfft(None, -1, None)?.fft_irfft(Some(8), -1, None)?;
    assert!(back
        .to_vec_f64()?
        .iter()
        .zip(&r)
        .all(|(a, b)| (a - b).abs() < 1e-12));
    let r7 = Tensor::from_vec(r[..7].to_vec(), &[7])?;
    let back7 = r7.fft_rfft(None, -1, None)?.fft_irfft(Some(7), -1, None)?;
    assert!(back7
        .to_vec_f64()?
        .iter()
        .zip(&r)
        .all(|(a, b)| (a - b).abs() < 1e-12));
    // errors name the problem
    assert!(z
        .fft_rfft(None, -1, None)
        .unwrap_err()
        .to_string()
        .contains("real input"));
    assert!(rt
        .fft_fft(Some(0), -1, None)
        .unwrap_err()
        .to_string()
        .contains("data points"));
    assert!(rt
        .fft_fft(None, -1, Some("bad"))
        .unwrap_err()
        .to_string()
        .contains("normalization"));
    Ok(())
}

#[test]
fn gradcheck_the_fft_primitives() -> Result<()> {
    let pairs = Tensor::from_vec(
        (0..12).map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.3).collect(),
        &[6, 2],
    )?;
    let real = Tensor::from_vec(
        (0..7)
            .map(|i| ((i * 3 % 4) as f64 - 1.5) * 0.4)
            .collect::<Vec<f64>>(),
        &[7],
    )?;
    type F = fn(&Tensor) -> Result<Tensor>;
    let complex_in: Vec<(&str, F)> = vec![
        ("fft", |z| z.fft_fft(None, -1, Some("ortho"))),
        ("ifft_n", |z| z.fft_ifft(Some(8), -1, None)),
        ("irfft", |z| z.fft_irfft(Some(10), -1, None)),
        ("irfft_odd", |z| z.fft_irfft(Some(9), -1, Some("forward"))),
        ("hfft", |z| z.fft_hfft(None, -1, None)),
    ];
    for (name, f) in complex_in {
        let r = gradcheck(
            |xs| {
                let out = f(&xs[0].view_as_complex()?)?;
                Ok(vec![if out.is_complex() {
                    out.view_as_real()?
                } else {
                    out
                }])
            },
            &[pairs.requires_grad_(true)?],
            GradcheckOptions::default(),
        );
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    let real_in: Vec<(&str, F)> = vec![
        ("rfft", |x| x.fft_rfft(None, -1, None)),
        ("rfft_n", |x| x.fft_rfft(Some(10), -1, Some("ortho"))),
        ("ihfft", |x| x.fft_ihfft(None, -1, None)),
    ];
    for (name, f) in real_in {
        let r = gradcheck(
            |xs| Ok(vec![f(&xs[0])?.view_as_real()?]),
            &[real.requires_grad_(true)?],
            GradcheckOptions::default(),
        );
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    Ok(())
}

/// Note [The conjugate bit]: the `conj` op makes a marked view; typed
/// methods called on it see the conjugated values, views keep the mark,
/// in-place ops write the conjugate back, and the typed `Tensor::conj`
/// stays eager.
#[test]
fn lazy_conjugate_views() -> Result<()> {
    use ferrotorch_core::dispatch::{call, IValue};
    let x = c(&[(1.0, 2.0), (3.0, -1.0)], &[2]);
    let z = call("conj", &[x.clone().into()], &[])?.into_tensor()?;
    assert!(z.is_conj() && !x.is_conj());
    assert_eq!(z.data_ptr(), x.data_ptr());
    // arithmetic through typed methods, outside any kernel
    assert_eq!(pairs(&z.add(&z)?), vec![(2.0, -4.0), (6.0, 2.0)]);
    assert_eq!(pairs(&z.mul(&x)?), vec![(5.0, 0.0), (10.0, 0.0)]);
    let t = z.unsqueeze(0)?;
    assert!(t.is_conj() && t.data_ptr() == x.data_ptr());
    assert_eq!(pairs(&z.resolve_conj()?), vec![(1.0, -2.0), (3.0, 1.0)]);
    assert!(!z.resolve_conj()?.is_conj());
    // in place through the view: x receives the conjugate
    call("mul_", &[z.clone().into(), IValue::Float(2.0)], &[])?;
    assert_eq!(pairs(&x), vec![(2.0, 4.0), (6.0, -2.0)]);
    // the typed method is eager
    assert!(!x.conj()?.is_conj());
    Ok(())
}

/// Note [complex32]: arithmetic computes in complex64 and rounds once, so
/// a product is the exact product rounded to float16 parts.
#[test]
fn complex32_arithmetic_rounds_the_complex64_result_once() {
    use half::f16;
    let a = c(&[(1.0, 2.0), (0.1, -3.0)], &[2])
        .to_dtype(DType::C32)
        .unwrap();
    let b = c(&[(0.5, -1.0), (2.0, 0.3)], &[2])
        .to_dtype(DType::C32)
        .unwrap();
    assert_eq!(a.dtype(), DType::C32);
    assert_eq!(a.element_size(), 4);
    let r16 = |x: f64| f16::from_f64(x).to_f64();
    // the inputs as stored
    let (ar, br) = (pairs(&a), pairs(&b));
    let want: Vec<(f64, f64)> = ar
        .iter()
        .zip(&br)
        .map(|(&x, &y)| {
            let p = cm(x, y);
            // the complex64 result, then each part to float16
            (r16(p.0 as f32 as f64), r16(p.1 as f32 as f64))
        })
        .collect();
    let got = a.mul(&b).unwrap();
    assert_eq!(got.dtype(), DType::C32);
    assert_eq!(pairs(&got), want);
    // abs is float16; real parts are float16 views
    assert_eq!(a.abs().unwrap().dtype(), DType::F16);
    assert_eq!(a.real().unwrap().dtype(), DType::F16);
    assert_eq!(
        a.to_string(),
        "tensor([1.0000+2.j, 0.1000-3.j], dtype=torch.complex32)"
    );
}
