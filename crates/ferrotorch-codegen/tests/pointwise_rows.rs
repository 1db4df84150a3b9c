//! The pointwise rows (Note [Pointwise rows] in ferrotorch-core), read
//! the ways their consumers read them: each derivative recorded for the
//! code generator matches a central difference of the row's value
//! (gradcheck, in f64), the tensor form eager autograd evaluates gives
//! the recorded form's numbers, and the compiled backward of an
//! expression is the row's formula.

use ferrotorch_codegen::expr::{binary_ref, unary_ref, Binary, Unary};
use ferrotorch_codegen::{grad, Expr};
use ferrotorch_core::rows::{self, eval_ops, BinaryIn, Reads, TVal};
use ferrotorch_core::Tensor;

const POINTS: [f64; 6] = [-1.7, -0.6, -0.2, 0.3, 0.45, 1.3];

fn eval1(r: &rows::Recorded, inputs: &[f64]) -> Vec<Option<f64>> {
    let v = eval_ops(&r.ops, inputs, |c| c);
    r.outputs.iter().map(|o| o.map(|k| v[k])).collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Points where op `name` is smooth and defined.
fn domain(name: &str) -> Vec<f64> {
    let pos = ["log", "sqrt", "rsqrt", "log2", "log10"];
    let unit = ["asin", "acos", "atanh", "erfinv"];
    POINTS
        .iter()
        .map(|&x| match name {
            n if pos.contains(&n) => x.abs() + 0.1,
            n if unit.contains(&n) => x / 2.0,
            "acosh" => x.abs() + 1.2,
            "log1p" => x.abs(),
            "relu" | "abs" => x + 0.05,
            _ => x,
        })
        .collect()
}

#[test]
fn every_generator_primitive_but_the_gelus_has_a_unary_row() {
    for name in Unary::names() {
        let f = Unary::from_name(name).unwrap();
        let row = rows::unary(name).unwrap_or_else(|| panic!("{name} has no row"));
        assert!(row.is_prim(f), "{name}'s row value is not its primitive");
    }
}

#[test]
fn unary_row_derivatives_match_central_differences_of_their_values() {
    let mut checked = 0;
    for row in rows::unary_rows() {
        let (Some(value), Some(d)) = (row.value(), row.grad()) else {
            continue;
        };
        for x in domain(row.name) {
            let f = |x: f64| eval1(&value, &[x])[0].unwrap();
            let h = 1e-6;
            let numeric = (f(x + h) - f(x - h)) / (2.0 * h);
            let saved = match row.reads {
                Reads::Input => x,
                Reads::Result => f(x),
                Reads::Nothing => 1.0,
            };
            let analytic = eval1(&d, &[1.0, saved])[0].unwrap();
            assert!(
                close(analytic, numeric, 1e-5),
                "{}'({x}): row {analytic}, numerical {numeric}",
                row.name
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} rows checked");
}

#[test]
fn binary_row_derivatives_match_central_differences() {
    for row in rows::binary_rows() {
        let f = row.prim.unwrap();
        for &a in &POINTS {
            for &b in &[-0.7, 0.4, 1.6] {
                let a = if f == Binary::Pow { a.abs() + 0.2 } else { a };
                let y = binary_ref(f, a, b);
                let g = eval1(&row.grad(1.0, [true, true]), &[1.0, a, b, y]);
                let h = 1e-6;
                let da = (binary_ref(f, a + h, b) - binary_ref(f, a - h, b)) / (2.0 * h);
                let db = (binary_ref(f, a, b + h) - binary_ref(f, a, b - h)) / (2.0 * h);
                assert!(
                    close(g[0].unwrap(), da, 1e-5),
                    "{} d/da at ({a}, {b})",
                    row.name
                );
                assert!(
                    close(g[1].unwrap(), db, 1e-5),
                    "{} d/db at ({a}, {b})",
                    row.name
                );
            }
        }
    }
    // add/sub scale b's gradient by alpha (sub negates it)
    let sub = rows::binary("sub").unwrap();
    let g = eval1(&sub.grad(2.5, [true, true]), &[1.0, 3.0, 4.0, 0.0]);
    assert_eq!(g, vec![Some(1.0), Some(-2.5)]);
    // a gradient not wanted is not computed
    let mul = rows::binary("mul").unwrap();
    assert_eq!(mul.grad(1.0, [true, false]).outputs[1], None);
}

#[test]
fn eager_tensor_form_gives_the_recorded_numbers() {
    for row in rows::unary_rows() {
        let Some(d) = row.grad() else { continue };
        let xs = domain(row.name);
        let gs: Vec<f64> = xs.iter().map(|x| 0.5 - x).collect();
        let g = Tensor::from_vec(gs.clone(), &[xs.len()]).unwrap();
        let s = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap();
        let eager = row.grad_tensor(&g, &s).unwrap().to_vec_f64().unwrap();
        for (k, (&gk, &sk)) in gs.iter().zip(&xs).enumerate() {
            let rec = eval1(&d, &[gk, sk])[0].unwrap();
            assert!(
                close(eager[k], rec, 1e-12),
                "{} at {sk}: eager {}, recorded {rec}",
                row.name,
                eager[k]
            );
        }
    }
    let div = rows::binary("div").unwrap();
    let t = |v: f64| TVal::T(Tensor::from_vec(vec![v], &[1]).unwrap());
    let [ga, gb] = div.grad_tensor(BinaryIn {
        g: t(1.0),
        a: t(3.0),
        b: t(2.0),
        y: t(1.5),
        alpha: 1.0,
        need: [true, true],
    });
    let like = Tensor::from_vec(vec![0.0f64], &[1]).unwrap();
    let ga = ga.unwrap().tensor(&like).unwrap().to_vec_f64().unwrap();
    let gb = gb.unwrap().tensor(&like).unwrap().to_vec_f64().unwrap();
    assert_eq!((ga[0], gb[0]), (0.5, -0.75));
}

#[test]
fn compiled_backward_is_the_rows_formula() {
    // tanh(x): the backward of the expression is g · (1 - y²) with y
    // recomputed, evaluated at a point against the analytic value
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = e.unary(Unary::Tanh, x);
    e.outputs.push(y);
    let b = grad::backward(&e);
    let x0: f64 = 0.7;
    let out = b.eval(&[x0, 2.0]);
    let t = unary_ref(Unary::Tanh, x0);
    assert!(close(out[0], 2.0 * (1.0 - t * t), 1e-15));
    // silu, a row composed of primitives, lowers to them and its chain
    // rule gives the row's own derivative
    let silu = rows::unary("silu").unwrap();
    let v = silu.value().unwrap();
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = v.splice(&[x], |op| e.push(op))[0].unwrap();
    e.outputs.push(y);
    let b = grad::backward(&e);
    let d = silu.grad().unwrap();
    for x0 in POINTS {
        let compiled = b.eval(&[x0, 1.0])[0];
        let row = eval1(&d, &[1.0, x0])[0].unwrap();
        assert!(
            close(compiled, row, 1e-12),
            "silu'({x0}): {compiled} vs {row}"
        );
    }
}

/// Each activation row's parameter sets: its defaults and one other.
fn act_params(row: &rows::ActRow) -> Vec<Vec<f64>> {
    let other = match row.name {
        "leaky_relu" => vec![0.2],
        "hardtanh" => vec![-0.5, 2.0],
        "softplus" => vec![2.0, 3.0],
        "elu" => vec![0.7, 1.3, 0.6],
        "celu" => vec![0.5],
        "gelu" => vec![1.0],
        _ => return vec![row.with_defaults(&[])],
    };
    vec![row.with_defaults(&[]), other]
}

/// Points away from the activations' branch points.
const ACT_POINTS: [f64; 8] = [-4.1, -2.3, -0.7, -0.2, 0.3, 0.8, 1.7, 4.4];

#[test]
fn activation_row_derivatives_match_central_differences_of_their_values() {
    for row in rows::act_rows() {
        for p in act_params(row) {
            let (value, d) = (row.value(&p), row.grad(&p));
            for x in ACT_POINTS {
                let f = |x: f64| eval1(&value, &[x])[0].unwrap();
                let h = 1e-6;
                let numeric = (f(x + h) - f(x - h)) / (2.0 * h);
                let analytic = eval1(&d, &[1.0, x])[0].unwrap();
                assert!(
                    close(analytic, numeric, 1e-5),
                    "{}{p:?}'({x}): row {analytic}, numerical {numeric}",
                    row.name
                );
            }
        }
    }
    // the GELUs are primitives whose rows are activation rows
    for f in [Unary::Gelu, Unary::GeluTanh] {
        let (row, p) = rows::act_of_prim(f).unwrap();
        assert!(row
            .value(&p)
            .ops
            .contains(&ferrotorch_codegen::expr::Op::Unary(f, 0)));
    }
}

#[test]
fn activation_rows_read_eagerly_give_the_recorded_numbers() {
    let _g = ferrotorch_core::autograd::no_grad();
    for row in rows::act_rows() {
        for p in act_params(row) {
            let (value, d) = (row.value(&p), row.grad(&p));
            let xs: Vec<f64> = ACT_POINTS.to_vec();
            let gs: Vec<f64> = xs.iter().map(|x| 0.5 - x).collect();
            let x = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap();
            let g = Tensor::from_vec(gs.clone(), &[xs.len()]).unwrap();
            // float64: the fused loop (or tensor ops) against the record
            let y = row.forward(&x, &p).unwrap().to_vec_f64().unwrap();
            let dx = row.backward(&g, &x, &p).unwrap().to_vec_f64().unwrap();
            // float32 (a loop or tensor ops, as the row's Fuse says)
            let x32 = x.to_dtype(ferrotorch_core::DType::F32).unwrap();
            let g32 = g.to_dtype(ferrotorch_core::DType::F32).unwrap();
            let y32 = row.forward(&x32, &p).unwrap().to_vec_f64().unwrap();
            let dx32 = row.backward(&g32, &x32, &p).unwrap().to_vec_f64().unwrap();
            for k in 0..xs.len() {
                let rv = eval1(&value, &[xs[k]])[0].unwrap();
                let rd = eval1(&d, &[gs[k], xs[k]])[0].unwrap();
                let at = format!("{}{p:?} at {}", row.name, xs[k]);
                assert!(close(y[k], rv, 1e-12), "{at}: value {} vs {rv}", y[k]);
                assert!(close(dx[k], rd, 1e-12), "{at}: grad {} vs {rd}", dx[k]);
                assert!(
                    close(y32[k], rv, 1e-5),
                    "{at}: f32 value {} vs {rv}",
                    y32[k]
                );
                assert!(
                    close(dx32[k], rd, 1e-5),
                    "{at}: f32 grad {} vs {rd}",
                    dx32[k]
                );
            }
        }
    }
}

/// The branch points, infinities and NaN.
const ACT_EDGES: [f64; 15] = [
    f64::NAN,
    f64::NEG_INFINITY,
    -100.0,
    -6.0,
    -3.0,
    -1.0,
    -0.0,
    0.0,
    1.0,
    2.0,
    3.0,
    6.0,
    30.0,
    100.0,
    f64::INFINITY,
];

#[test]
fn compiled_backward_of_an_activation_is_its_rows_formula_at_the_edges() {
    // the chain rule over the row's value (what a compiled kernel
    // computes) gives the row's derivative (PyTorch's formula), at the
    // branch points, the infinities and NaN too (Note [Activation rows])
    for row in rows::act_rows() {
        for p in act_params(row) {
            let v = row.value(&p);
            let mut e = Expr::new(1);
            let x = e.input(0);
            let y = v.splice(&[x], |op| e.push(op))[0].unwrap();
            e.outputs.push(y);
            let b = grad::backward(&e);
            let d = row.grad(&p);
            for x0 in ACT_EDGES {
                let compiled = b.eval(&[x0, 1.0])[0];
                let formula = eval1(&d, &[1.0, x0])[0].unwrap();
                // relative only: a tiny gradient (elu's e^-100) must not
                // pass as 0
                let same = (compiled.is_nan() && formula.is_nan())
                    || compiled == formula
                    || (compiled - formula).abs() <= 1e-12 * formula.abs();
                assert!(
                    same,
                    "{}{p:?}'({x0}): compiled {compiled}, row {formula}",
                    row.name
                );
            }
        }
    }
}

#[test]
fn the_gelu_backward_kernels_compute_the_gelu_row() {
    // eager float32 GELU backward runs a vectorised kernel of its own
    // (Note [Kernels, not closures, for long formulas]); it is the row's
    use ferrotorch_kernels::math::{gelu_backward, gelu_tanh_backward};
    let row = rows::act("gelu").unwrap();
    for (p, kernel) in [
        (0.0, gelu_backward as fn(f32, f32) -> f32),
        (1.0, gelu_tanh_backward),
    ] {
        let d = row.grad(&[p]);
        for k in -80..=80 {
            let x = k as f64 / 10.0;
            let want = eval1(&d, &[0.75, x])[0].unwrap();
            let got = kernel(0.75, x as f32) as f64;
            // float32 against float64: `1 - t²` near |t| = 1 cancels to a
            // few float32 ulps of 1 in the tails
            assert!(
                (got - want).abs() <= 4e-6 + 1e-5 * want.abs(),
                "gelu{p}'({x}): kernel {got}, row {want}"
            );
        }
    }
}
