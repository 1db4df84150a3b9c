//! aarch64 and riscv64 code for scalar expressions (Note [Cross
//! executables]), run under Debian's qemu-user where it is installed
//! (skipped, saying so, where not), against the f64 reference.

#![cfg(feature = "cross-isa")]

use ferrotorch_codegen::cross::{compile_scalar, Isa};
use ferrotorch_codegen::expr::{Binary, Cmp, Unary};
use ferrotorch_codegen::Expr;
use std::process::Command;

/// `(x*y + 2.5, |x - y| / sqrt(x*x + 1), max(x, y) if x > 0 else floor(y))`
fn sample() -> Expr {
    let mut e = Expr::new(2);
    let x = e.input(0);
    let y = e.input(1);
    let xy = e.binary(Binary::Mul, x, y);
    let c = e.constant(2.5);
    let o0 = e.binary(Binary::Add, xy, c);
    let d = e.binary(Binary::Sub, x, y);
    let ad = e.unary(Unary::Abs, d);
    let xx = e.binary(Binary::Mul, x, x);
    let one = e.constant(1.0);
    let s = e.binary(Binary::Add, xx, one);
    let r = e.unary(Unary::Sqrt, s);
    let o1 = e.binary(Binary::Div, ad, r);
    let m = e.binary(Binary::Max, x, y);
    let fy = e.unary(Unary::Floor, y);
    let zero = e.constant(0.0);
    let o2 = e.select(Cmp::Gt, x, zero, m, fy);
    e.outputs = vec![o0, o1, o2];
    e
}

#[test]
fn cross_compiled_code_runs_under_qemu() {
    let e = sample();
    for isa in [Isa::Aarch64, Isa::Riscv64] {
        let code = compile_scalar(&e, isa).unwrap();
        assert!(!code.code.is_empty());
        for args in [[1.5, -2.25], [-3.0, 0.5]] {
            let exe = code.executable(&args).unwrap();
            assert_eq!(&exe[..4], b"\x7fELF");
            assert_eq!(u16::from_le_bytes([exe[18], exe[19]]), isa.elf_machine());
            let probe = Command::new(isa.qemu()).arg("--version").output();
            if !probe.is_ok_and(|o| o.status.success()) {
                eprintln!(
                    "skipped running {isa:?} code: {} is not installed",
                    isa.qemu()
                );
                continue;
            }
            let dir = std::env::temp_dir().join(format!("ferrotorch-cross-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{isa:?}"));
            std::fs::write(&path, &exe).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            let out = Command::new(isa.qemu()).arg(&path).output().unwrap();
            assert!(
                out.status.success(),
                "{isa:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got: Vec<f64> = out
                .stdout
                .chunks(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let want = e.eval(&args);
            assert_eq!(got.len(), want.len(), "{isa:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-15 * (1.0 + w.abs()),
                    "{isa:?}: {g} vs {w}"
                );
            }
            std::fs::remove_dir_all(&dir).ok();
        }
    }
}

#[test]
fn host_functions_are_refused_for_other_isas() {
    let mut e = Expr::new(1);
    let x = e.input(0);
    let y = e.unary(Unary::Exp, x);
    e.outputs.push(y);
    let err = compile_scalar(&e, Isa::Aarch64).unwrap_err();
    assert!(err.contains("arithmetic only"), "{err}");
    assert!(compile_scalar(&sample(), Isa::Riscv64)
        .unwrap()
        .executable(&[1.0])
        .is_err());
}
