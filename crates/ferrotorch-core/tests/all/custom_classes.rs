//! Custom classes (Note [Custom classes]): seeds/004's TensorQueue and a
//! class defined here, their methods as ops with schemas written from
//! the Rust signatures, pickling, and the registration errors.

use ferrotorch_core::dispatch::{call, find_schema, IValue};
use ferrotorch_core::library::{construct, find_class, from_state, tensor_queue, Kind, Library};
use ferrotorch_core::{DType, ErrorKind, Result, Tensor};
use parking_lot::Mutex;
use std::sync::OnceLock;

fn queue(init: f32) -> ferrotorch_core::library::ScriptObject {
    tensor_queue::register().unwrap();
    construct(
        "MyCustomClass::TensorQueue",
        &[Tensor::from_slice(&[init]).into()],
        &[],
    )
    .unwrap()
}

fn vals(v: IValue) -> Vec<f32> {
    v.into_tensor().unwrap().to_vec::<f32>().unwrap()
}

#[test]
fn the_seeds_tensor_queue() -> Result<()> {
    let tq = queue(-1.0);
    let x = Tensor::from_slice(&[0.5f32, 1.0, 2.0]);
    tq.call_method("push", &[x.sin()?.into()], &[])?;
    tq.call_method("push", &[x.cos()?.into()], &[])?;
    assert!(matches!(tq.call_method("size", &[], &[])?, IValue::Int(2)));
    assert_eq!(
        vals(tq.call_method("top", &[], &[])?),
        x.sin()?.to_vec::<f32>()?
    );
    assert_eq!(
        vals(tq.call_method("pop", &[], &[])?),
        x.sin()?.to_vec::<f32>()?
    );
    let raw = tq
        .call_method("get_raw_queue", &[], &[])?
        .into_tensor_list()?;
    assert_eq!(raw.len(), 1);
    assert_eq!(raw[0].to_vec::<f32>()?, x.cos()?.to_vec::<f32>()?);
    // empty: pop gives the initial tensor
    tq.call_method("pop", &[], &[])?;
    assert_eq!(vals(tq.call_method("pop", &[], &[])?), vec![-1.0]);
    assert!(matches!(tq.call_method("size", &[], &[])?, IValue::Int(0)));
    Ok(())
}

#[test]
fn a_queue_holds_the_tensor_itself() -> Result<()> {
    let tq = queue(0.0);
    let a = Tensor::from_slice(&[1.0f32, 2.0]);
    tq.call_method("push", &[a.clone().into()], &[])?;
    // `tq.pop() is a` in eager PyTorch: the same tensor object comes back
    let back = tq.call_method("pop", &[], &[])?.into_tensor()?;
    assert!(back.is_same(&a));
    // and a write after push is seen through the queue
    tq.call_method("push", &[a.clone().into()], &[])?;
    a.sin_()?;
    let b = tq.call_method("pop", &[], &[])?.into_tensor()?;
    assert_eq!(b.to_vec::<f32>()?, vec![1f32.sin(), 2f32.sin()]);
    Ok(())
}

#[test]
fn for_each_add_as_an_op_and_as_a_method() -> Result<()> {
    let tq = queue(0.0);
    for _ in 0..3 {
        tq.call_method("push", &[Tensor::zeros(&[1], DType::F32)?.into()], &[])?;
    }
    let out = call(
        "MyCustomClass::for_each_add_",
        &[tq.clone().into(), Tensor::from_slice(&[1.0f32]).into()],
        &[],
    )?;
    assert!(matches!(out, IValue::None));
    tq.call_method(
        "for_each_add_",
        &[Tensor::from_slice(&[1.0f32]).into()],
        &[],
    )?;
    for t in tq
        .call_method("get_raw_queue", &[], &[])?
        .into_tensor_list()?
    {
        assert_eq!(t.to_vec::<f32>()?, vec![2.0]);
    }
    let s = find_schema("MyCustomClass::for_each_add_").unwrap();
    assert_eq!(
        s.args[0].ty.class_name(),
        Some("__torch__.torch.classes.MyCustomClass.TensorQueue")
    );
    Ok(())
}

#[test]
fn method_schemas_come_from_the_rust_signatures() {
    tensor_queue::register().unwrap();
    let s = |m: &str| {
        find_schema(&format!("MyCustomClass::TensorQueue::{m}"))
            .unwrap()
            .to_string()
    };
    let q = "__torch__.torch.classes.MyCustomClass.TensorQueue";
    assert_eq!(
        s("push"),
        format!("MyCustomClass::TensorQueue::push({q} _0, Tensor _1) -> ()")
    );
    assert_eq!(
        s("size"),
        format!("MyCustomClass::TensorQueue::size({q} _0) -> int")
    );
    assert_eq!(
        s("get_raw_queue"),
        format!("MyCustomClass::TensorQueue::get_raw_queue({q} _0) -> Tensor[]")
    );
    assert_eq!(
        s("__init__"),
        format!("MyCustomClass::TensorQueue::__init__(Tensor _1) -> {q}")
    );
    let c = find_class(q).unwrap();
    assert_eq!(c.name(), "MyCustomClass::TensorQueue");
    assert!(c.has_pickle());
    assert!(c.method_names().contains(&"for_each_add_".to_string()));
}

#[test]
fn pickling_and_deep_copies() -> Result<()> {
    let tq = queue(-1.0);
    let a = Tensor::from_slice(&[3.0f32]);
    tq.call_method("push", &[a.clone().into()], &[])?;
    let state = tq.getstate()?;
    let again = from_state("MyCustomClass::TensorQueue", state)?;
    assert!(!again.is_same(&tq));
    assert!(matches!(
        again.call_method("size", &[], &[])?,
        IValue::Int(1)
    ));
    // a deep copy holds copies: writing the original leaves it alone
    let copy = tq.deep_copy()?;
    a.add_(Tensor::from_slice(&[1.0f32]))?;
    assert_eq!(vals(copy.call_method("top", &[], &[])?), vec![3.0]);
    assert_eq!(vals(tq.call_method("top", &[], &[])?), vec![4.0]);
    let flat = tq.call_method("__obj_flatten__", &[], &[])?;
    let IValue::Tuple(parts) = flat else {
        panic!("a tuple")
    };
    assert!(
        matches!(&parts[0], IValue::Tuple(p) if matches!(&p[0], IValue::Str(s) if s == "queue"))
    );
    Ok(())
}

/// A class with plain-number state, defined here.
struct Counter {
    step: i64,
    total: Mutex<i64>,
}

fn counter_lib() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let mut m = Library::new("ft_classes", Kind::Def).unwrap();
        m.class_::<Counter>("Counter")
            .unwrap()
            .def_init(|step: i64| -> Result<Counter> {
                ferrotorch_core::ensure!(step > 0, Value, "Counter: step must be positive");
                Ok(Counter {
                    step,
                    total: Mutex::new(0),
                })
            })
            .unwrap()
            .def("tick", |c: &Counter, times: i64| {
                let mut t = c.total.lock();
                *t += c.step * times;
                *t
            })
            .unwrap()
            .def("scaled", |c: &Counter, x: Tensor| {
                x.mul(*c.total.lock() as f64)
            })
            .unwrap();
        m.def("total_of(__torch__.torch.classes.ft_classes.Counter c) -> int")
            .unwrap();
        m.impl_(
            "total_of",
            ferrotorch_core::dispatch::DispatchKey::Cpu,
            |a| {
                let c = a.object(0)?;
                let total = *c.downcast_ref::<Counter>().unwrap().total.lock();
                Ok(IValue::Int(total))
            },
        )
        .unwrap();
    });
}

#[test]
fn a_class_of_our_own() -> Result<()> {
    counter_lib();
    let c = construct("ft_classes::Counter", &[IValue::Int(2)], &[])?;
    assert!(matches!(
        c.call_method("tick", &[IValue::Int(3)], &[])?,
        IValue::Int(6)
    ));
    assert!(matches!(
        call("ft_classes::total_of", &[c.clone().into()], &[])?,
        IValue::Int(6)
    ));
    let y = c
        .call_method("scaled", &[Tensor::from_slice(&[1.0f32, 2.0]).into()], &[])?
        .into_tensor()?;
    assert_eq!(y.to_vec::<f32>()?, vec![6.0, 12.0]);
    // the constructor's own error
    let e = construct("ft_classes::Counter", &[IValue::Int(0)], &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    assert!(e.message().contains("step must be positive"));
    // no pickle: no deep copy, saying why
    let e = c.deep_copy().unwrap_err();
    assert!(e.message().contains("def_pickle"), "{}", e.message());
    Ok(())
}

#[test]
fn wrong_objects_and_names_are_clear_errors() -> Result<()> {
    counter_lib();
    let tq = queue(0.0);
    let c = construct("ft_classes::Counter", &[IValue::Int(1)], &[])?;
    // a Counter where the op takes a TensorQueue
    let e = call(
        "MyCustomClass::for_each_add_",
        &[c.clone().into(), Tensor::from_slice(&[1.0f32]).into()],
        &[],
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Type);
    assert!(
        e.message()
            .contains("must be __torch__.torch.classes.MyCustomClass.TensorQueue"),
        "{}",
        e.message()
    );
    // a method argument of the wrong type
    let e = tq.call_method("push", &[IValue::Int(3)], &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Type);
    let e = tq.call_method("nope", &[], &[]).unwrap_err();
    assert!(
        e.message().contains("has no method 'nope'"),
        "{}",
        e.message()
    );
    let e = construct("ft_classes::Missing", &[], &[]).unwrap_err();
    assert!(e.message().contains("does not exist"), "{}", e.message());
    // registration errors, as PyTorch's
    let mut f = Library::new("ft_classes", Kind::Fragment)?;
    assert!(f.class_::<String>("Counter").is_err());
    assert!(f
        .def("uses_missing(__torch__.torch.classes.ft_classes.Nope x) -> ()")
        .is_err());
    let mut i = Library::new("ft_classes", Kind::Impl)?;
    assert!(i.class_::<Counter>("Other").is_err());
    let e = f
        .class_::<Counter>("Counter")?
        .def("__secret", |_: &Counter| 1i64)
        .err()
        .unwrap();
    assert!(e.message().contains("reserved"));
    Ok(())
}

#[test]
fn methods_pass_gradients_through() -> Result<()> {
    let tq = queue(0.0);
    let x = Tensor::from_slice(&[0.3f32, 0.7]).requires_grad_(true)?;
    tq.call_method("push", &[x.sin()?.into()], &[])?;
    let y = tq.call_method("pop", &[], &[])?.into_tensor()?;
    y.sum()?.backward()?;
    let g = x.grad().unwrap().to_vec::<f32>()?;
    assert!((g[0] - 0.3f32.cos()).abs() < 1e-6 && (g[1] - 0.7f32.cos()).abs() < 1e-6);
    Ok(())
}
