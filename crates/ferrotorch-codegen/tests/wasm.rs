//! Scalar expressions as WebAssembly, run by Node's `WebAssembly` (the
//! test is skipped, saying so, where `node` is not installed), against
//! the f64 reference and the native scalar function.

use ferrotorch_codegen::expr::{Binary, Cmp, Unary};
use ferrotorch_codegen::wasm::to_wasm;
use ferrotorch_codegen::{Expr, ScalarFn};
use std::process::Command;

/// `f(x, y) = (x*sin(y) + exp(-x)/2 if x > y else relu(x - y)**2, tanh(x)*sigmoid(y) - sqrt(|y|))`
fn sample() -> Expr {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let s = e.unary(Unary::Sin, y);
    let a = e.binary(Binary::Mul, x, s);
    let nx = e.unary(Unary::Neg, x);
    let ex = e.unary(Unary::Exp, nx);
    let two = e.constant(2.0);
    let h = e.binary(Binary::Div, ex, two);
    let p = e.binary(Binary::Add, a, h);
    let d = e.binary(Binary::Sub, x, y);
    let r = e.unary(Unary::Relu, d);
    let q = e.binary(Binary::Pow, r, two);
    let o0 = e.select(Cmp::Gt, x, y, p, q);
    let t = e.unary(Unary::Tanh, x);
    let sg = e.unary(Unary::Sigmoid, y);
    let m = e.binary(Binary::Mul, t, sg);
    let ay = e.unary(Unary::Abs, y);
    let sq = e.unary(Unary::Sqrt, ay);
    let o1 = e.binary(Binary::Sub, m, sq);
    e.outputs = vec![o0, o1];
    e
}

#[test]
fn wasm_runs_in_node_and_agrees_with_native_code() {
    let e = sample();
    let bytes = to_wasm(&e).unwrap();
    assert_eq!(&bytes[..4], b"\0asm");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: node is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ferrotorch-wasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.wasm");
    std::fs::write(&path, &bytes).unwrap();
    let points = [
        (0.5, -1.25),
        (-2.0, 3.0),
        (3.0, 0.0),
        (1e-3, 1e-3),
        (-0.0, 7.5),
    ];
    let script = format!(
        "const fs = require('fs');\
         const env = {{exp: Math.exp, expm1: Math.expm1, log: Math.log, log1p: Math.log1p,\
                      tanh: Math.tanh, sin: Math.sin, cos: Math.cos, pow: Math.pow}};\
         const m = new WebAssembly.Module(fs.readFileSync({:?}));\
         const f = new WebAssembly.Instance(m, {{env}}).exports.forward;\
         const pts = {};\
         console.log(JSON.stringify(pts.map(([x, y]) => f(x, y))));",
        path.to_str().unwrap(),
        serde_like(&points)
    );
    let out = Command::new("node").arg("-e").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let got: Vec<f64> = text
        .trim()
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|s| s.trim_matches(|c| c == '[' || c == ']').parse().unwrap())
        .collect();
    let native = ScalarFn::compile(&e).unwrap();
    for (k, &(x, y)) in points.iter().enumerate() {
        let want = e.eval(&[x, y]);
        let fast = native.call(&[x, y]).unwrap();
        for j in 0..2 {
            let w = got[2 * k + j];
            assert!(
                (w - want[j]).abs() <= 1e-12 * (1.0 + want[j].abs()),
                "wasm {w} vs {}",
                want[j]
            );
            assert!((fast[j] - want[j]).abs() <= 1e-12 * (1.0 + want[j].abs()));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn serde_like(points: &[(f64, f64)]) -> String {
    let items: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("[{x:?}, {y:?}]"))
        .collect();
    format!("[{}]", items.join(", "))
}

#[test]
fn functions_without_a_wasm_form_are_errors() {
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = e.unary(Unary::Erf, x);
    e.outputs.push(y);
    assert!(to_wasm(&e).unwrap_err().contains("Erf"));
}
