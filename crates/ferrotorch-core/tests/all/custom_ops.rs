//! Custom ops (Note [Custom ops], Note [Custom op autograd]): defined from
//! schema strings, called by name and through handles, differentiated by
//! registered formulas (gradchecked), shape functions, multi-output and
//! in-place ops, and the registration errors PyTorch gives.

use ferrotorch_core::autograd::{gradcheck, GradcheckOptions};
use ferrotorch_core::dispatch::{call, DispatchKey, IValue, OpHandle};
use ferrotorch_core::library::{call_fake, Kind, Library};
use ferrotorch_core::{DType, Result, Tensor};
use std::sync::OnceLock;

/// The test namespace, defined once for the whole binary.
fn lib() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let mut m = Library::new("ft_test", Kind::Def).unwrap();
        // cube(x) = x^3, derivative 3x^2
        m.def_impl("cube(Tensor x) -> Tensor", |a| {
            let x = a.tensor(0)?;
            Ok(x.mul(&x)?.mul(&x)?.into())
        })
        .unwrap();
        m.impl_autograd("cube", |ctx, g| {
            let x = ctx.args().tensor(0)?;
            Ok(vec![Some(g[0].mul(&x.mul(&x)?.mul(3.0)?)?)])
        })
        .unwrap();
        m.impl_fake("cube", |a| Ok(a.tensor(0)?.zeros_like()?.into()))
            .unwrap();
        // a product and a difference: two outputs, two inputs and a float
        m.def("prod_diff(Tensor a, Tensor b, float s=1.0) -> (Tensor, Tensor)")
            .unwrap();
        m.impl_("prod_diff", DispatchKey::Cpu, |a| {
            let (x, y, s) = (a.tensor(0)?, a.tensor(1)?, a.float(2)?);
            Ok(IValue::Tuple(vec![
                x.mul(&y)?.mul(s)?.into(),
                x.sub(&y)?.into(),
            ]))
        })
        .unwrap();
        m.impl_autograd("prod_diff", |ctx, g| {
            let (x, y, s) = (
                ctx.args().tensor(0)?,
                ctx.args().tensor(1)?,
                ctx.args().float(2)?,
            );
            let gx = g[0].mul(&y)?.mul(s)?.add(&g[1])?;
            let gy = g[0].mul(&x)?.mul(s)?.sub(&g[1])?;
            Ok(vec![Some(gx), Some(gy)])
        })
        .unwrap();
        // no formula: not differentiable, and says so
        m.def_impl("opaque(Tensor x) -> Tensor", |a| {
            Ok(a.tensor(0)?.exp()?.into())
        })
        .unwrap();
        // writes its input
        m.def_impl("add_one_(Tensor(a!) x) -> Tensor(a!)", |a| {
            let x = a.tensor(0)?;
            x.add_(1.0)?;
            Ok(x.into())
        })
        .unwrap();
    });
}

fn t64(v: &[f64]) -> Tensor {
    Tensor::from_slice(v)
}

#[test]
fn a_custom_op_is_called_by_name_and_through_a_handle() -> Result<()> {
    lib();
    let x = Tensor::from_slice(&[1.0f32, 2.0, -3.0]);
    let y = call("ft_test::cube", &[x.clone().into()], &[])?.into_tensor()?;
    assert_eq!(y.to_vec::<f32>()?, [1.0, 8.0, -27.0]);
    let h = OpHandle::new("ft_test::cube");
    let y2 = h.call(&[x.into()], &[])?.into_tensor()?;
    assert_eq!(y2.to_vec::<f32>()?, [1.0, 8.0, -27.0]);
    // keyword and default arguments bind by the schema
    let out = call(
        "ft_test::prod_diff",
        &[t64(&[2.0]).into(), t64(&[5.0]).into()],
        &[("s", IValue::Float(10.0))],
    )?;
    let IValue::Tuple(v) = out else {
        panic!("a tuple")
    };
    assert_eq!(v[0].clone().into_tensor()?.to_vec::<f64>()?, [100.0]);
    assert_eq!(v[1].clone().into_tensor()?.to_vec::<f64>()?, [-3.0]);
    Ok(())
}

#[test]
fn registered_formulas_pass_gradcheck() -> Result<()> {
    lib();
    let x = t64(&[0.5, -1.5, 2.0]).requires_grad_(true)?;
    gradcheck(
        |xs| {
            Ok(vec![
                call("ft_test::cube", &[xs[0].clone().into()], &[])?.into_tensor()?
            ])
        },
        std::slice::from_ref(&x),
        GradcheckOptions::default(),
    )?;
    let y = call("ft_test::cube", &[x.clone().into()], &[])?.into_tensor()?;
    assert_eq!(y.grad_fn().unwrap().name(), "ft_test_cubeBackward");
    let a = t64(&[1.0, 2.0]).requires_grad_(true)?;
    let b = t64(&[-0.5, 3.0]).requires_grad_(true)?;
    gradcheck(
        |xs| {
            let out = call(
                "ft_test::prod_diff",
                &[
                    xs[0].clone().into(),
                    xs[1].clone().into(),
                    IValue::Float(0.7),
                ],
                &[],
            )?;
            let IValue::Tuple(vs) = out else {
                panic!("two outputs")
            };
            vs.into_iter().map(IValue::into_tensor).collect()
        },
        &[a, b],
        GradcheckOptions::default(),
    )
}

#[test]
fn an_op_without_a_formula_says_so_at_backward() -> Result<()> {
    lib();
    let x = t64(&[1.0]).requires_grad_(true)?;
    let y = call("ft_test::opaque", &[x.clone().into()], &[])?.into_tensor()?;
    assert!(y.requires_grad());
    let e = y.sum()?.backward().unwrap_err().to_string();
    assert!(
        e.contains("backward through ft_test::opaque") && e.contains("register_autograd"),
        "{e}"
    );
    // without grad, the op simply runs
    let z = call("ft_test::opaque", &[t64(&[0.0]).into()], &[])?.into_tensor()?;
    assert_eq!(z.to_vec::<f64>()?, [1.0]);
    Ok(())
}

#[test]
fn an_in_place_custom_op_bumps_the_version_and_refuses_a_grad_leaf() -> Result<()> {
    lib();
    let x = t64(&[1.0, 2.0]);
    let v = x.version();
    let y = call("ft_test::add_one_", &[x.clone().into()], &[])?.into_tensor()?;
    assert_eq!(x.to_vec::<f64>()?, [2.0, 3.0]);
    assert!(y.storage().is_same(x.storage()) && x.version() > v);
    let leaf = t64(&[1.0]).requires_grad_(true)?;
    let e = call("ft_test::add_one_", &[leaf.into()], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("written in place by a custom op"), "{e}");
    Ok(())
}

#[test]
fn fake_functions_give_shapes_without_the_kernel() -> Result<()> {
    lib();
    let x = Tensor::zeros(&[2, 5], DType::F32)?;
    let out = call_fake("ft_test::cube", &[x.into()])?.into_tensor()?;
    assert_eq!(out.shape(), [2, 5]);
    let e = call_fake("ft_test::opaque", &[t64(&[1.0]).into()]).unwrap_err();
    assert!(e.to_string().contains("no fake"), "{e}");
    Ok(())
}

#[test]
fn registration_errors_are_pytorchs() {
    lib();
    let e = Library::new("ft_test", Kind::Def)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Only a single TORCH_LIBRARY"), "{e}");
    assert!(Library::new("aten", Kind::Fragment).is_err());
    assert!(Library::new("not a name", Kind::Fragment).is_err());
    let mut frag = Library::new("ft_test", Kind::Fragment).unwrap();
    frag.def("ft_test::frag_id(Tensor x) -> Tensor").unwrap();
    // defined, but no kernel: calling it is an error naming the op
    let e = call("ft_test::frag_id", &[t64(&[1.0]).into()], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("ft_test::frag_id"), "{e}");
    assert!(
        frag.def("cube(Tensor x) -> Tensor").is_err(),
        "a second def"
    );
    assert!(frag.def("other_ns::f(Tensor x) -> Tensor").is_err());
    let mut imp = Library::new("ft_test", Kind::Impl).unwrap();
    assert!(imp.def("nope(Tensor x) -> Tensor").is_err());
    assert!(imp
        .impl_("missing", DispatchKey::Cpu, |a| Ok(a.tensor(0)?.into()))
        .is_err());
    imp.impl_("frag_id", DispatchKey::Cpu, |a| Ok(a.tensor(0)?.into()))
        .unwrap();
    let e = imp
        .impl_("frag_id", DispatchKey::Cpu, |a| Ok(a.tensor(0)?.into()))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("already has a Cpu kernel"), "{e}");
    assert!(imp.impl_autograd("cube", |_, _| Ok(vec![])).is_err());
}
