//! Custom class objects in graphs (Note [Objects in graphs]): seeds/004's
//! `Mod` and `ForEachAdd` traced, run, optimized and saved; and the
//! seed's three PyTorch limitations, each giving eager's answer here.

use ferrotorch_core::dispatch::{call, IValue};
use ferrotorch_core::library::{construct, tensor_queue, ScriptObject};
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::{load_bytes, passes, trace_values, ScriptModule};

mod common;
use common::with;

fn queue(init: f32) -> ScriptObject {
    tensor_queue::register().unwrap();
    construct(
        "MyCustomClass::TensorQueue",
        &[Tensor::from_slice(&[init]).into()],
        &[],
    )
    .unwrap()
}

fn method(o: &IValue, name: &str, args: &[IValue]) -> Result<IValue> {
    match o {
        IValue::Object(o) => o.call_method(name, args, &[]),
        _ => panic!("an object"),
    }
}

fn size(o: &ScriptObject) -> i64 {
    match o.call_method("size", &[], &[]).unwrap() {
        IValue::Int(n) => n,
        v => panic!("{v:?}"),
    }
}

fn f32s(v: &IValue) -> Vec<f32> {
    match v {
        IValue::Tensor(t) => t.to_vec::<f32>().unwrap(),
        v => panic!("{v:?}"),
    }
}

/// The seed's `Mod.forward(tq, x)`.
fn mod_forward(v: &[IValue]) -> Result<Vec<IValue>> {
    let (tq, x) = (&v[0], v[1].clone().into_tensor()?);
    method(tq, "push", &[x.sin()?.into()])?;
    method(tq, "push", &[x.cos()?.into()])?;
    let popped = method(tq, "pop", &[])?;
    Ok(vec![tq.clone(), popped])
}

fn randn() -> Tensor {
    Tensor::randn(&[2, 3], DType::F32).unwrap()
}

#[test]
fn the_seeds_mod_traces_runs_and_keeps_its_effects() -> Result<()> {
    let tq = queue(-1.0);
    let m = trace_values(mod_forward, &[tq.clone().into(), randn().into()])?;
    assert_eq!(size(&tq), 1); // tracing ran it once, as eager does
    let text = m.graph().to_string();
    // three calls on the object, threaded by one token chain, in order
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("prim::with_effects"))
        .collect();
    assert_eq!(calls.len(), 3, "{text}");
    assert!(calls[0].contains("TensorQueue::push") && calls[2].contains("TensorQueue::pop"));
    assert!(text.contains("Token = prim::Constant()"), "{text}");
    // run on another queue and input: eager's answer
    let (tq2, x) = (queue(-1.0), randn());
    let out = m.forward_values(&[tq2.clone().into(), x.clone().into()])?;
    assert!(matches!(&out[0], IValue::Object(o) if o.is_same(&tq2)));
    assert_eq!(f32s(&out[1]), x.sin()?.to_vec::<f32>()?);
    assert_eq!(size(&tq2), 1);
    // passes never drop or merge the calls
    let mut g = m.graph().clone();
    passes::optimize(&mut g)?;
    let after = g.to_string();
    assert_eq!(after.matches("prim::with_effects").count(), 3, "{after}");
    Ok(())
}

#[test]
fn for_each_add_is_a_node_even_with_no_result() -> Result<()> {
    let tq = queue(0.0);
    for _ in 0..10 {
        tq.call_method("push", &[Tensor::zeros(&[1], DType::F32)?.into()], &[])?;
    }
    // ForEachAdd.forward(tq, a): the op's result is unused
    let f = |v: &[IValue]| -> Result<Vec<IValue>> {
        call(
            "MyCustomClass::for_each_add_",
            &[v[0].clone(), v[1].clone()],
            &[],
        )?;
        Ok(vec![v[0].clone()])
    };
    let ones = Tensor::from_slice(&[1.0f32]);
    let m = trace_values(f, &[tq.clone().into(), ones.clone().into()])?;
    assert!(
        m.graph()
            .to_string()
            .contains("MyCustomClass::for_each_add_"),
        "{}",
        m.graph()
    );
    let out = m.forward_values(&[tq.clone().into(), ones.into()])?;
    let IValue::Object(out) = &out[0] else {
        panic!("an object")
    };
    assert_eq!(size(out), 10);
    assert_eq!(f32s(&out.call_method("top", &[], &[])?), vec![2.0]);
    Ok(())
}

/// Limitation 1: `tq.push(a); a.sin_(); b = tq.pop(); return a + b`.
/// PyTorch's captured graph pushes a copy and computes `sin(a) + a`;
/// eager (and our graph) give `2 sin(a)`.
#[test]
fn a_tensor_written_after_push_keeps_eager_semantics() -> Result<()> {
    let f = |v: &[IValue]| -> Result<Vec<IValue>> {
        let a = v[1].clone().into_tensor()?;
        method(&v[0], "push", &[a.clone().into()])?;
        a.sin_()?;
        let b = method(&v[0], "pop", &[])?.into_tensor()?;
        Ok(vec![a.add(&b)?.into()])
    };
    let m = trace_values(f, &[queue(0.0).into(), randn().into()])?;
    let x = randn();
    let want: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| 2.0 * v.sin()).collect();
    let got = m.forward_values(&[queue(0.0).into(), x.deep_clone()?.into()])?;
    let got = f32s(&got[0]);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }
    Ok(())
}

/// Limitation 2: `tq.push(a); if tq.pop() is a: a + 1 else a - 1`. The
/// popped tensor is `a` itself, in eager and in the trace.
#[test]
fn popped_is_the_pushed_tensor() -> Result<()> {
    let f = |v: &[IValue]| -> Result<Vec<IValue>> {
        let a = v[1].clone().into_tensor()?;
        method(&v[0], "push", &[a.clone().into()])?;
        let b = method(&v[0], "pop", &[])?.into_tensor()?;
        Ok(vec![if b.is_same(&a) {
            a.add(1.0)?
        } else {
            a.sub(1.0)?
        }
        .into()])
    };
    let x = randn();
    let m = trace_values(f, &[queue(0.0).into(), x.clone().into()])?;
    let got = m.forward_values(&[queue(0.0).into(), x.clone().into()])?;
    assert_eq!(f32s(&got[0]), x.add(1.0)?.to_vec::<f32>()?);
    Ok(())
}

/// Limitation 3: `x + tq.size()` is recorded as a value: the graph run on
/// a queue of another size gives eager's answer, not the traced size.
#[test]
fn an_int_result_is_a_value_not_a_constant() -> Result<()> {
    let f = |v: &[IValue]| -> Result<Vec<IValue>> {
        let n = method(&v[0], "size", &[])?;
        Ok(vec![call("add", &[v[1].clone(), n], &[])?])
    };
    let two = queue(0.0);
    for _ in 0..2 {
        two.call_method("push", &[randn().into()], &[])?;
    }
    let x = Tensor::from_slice(&[1.0f32, 2.0]);
    let m = trace_values(f, &[two.clone().into(), x.clone().into()])?;
    assert!(
        m.graph().to_string().contains("prim::NumToTensor"),
        "{}",
        m.graph()
    );
    let five = queue(0.0);
    for _ in 0..5 {
        five.call_method("push", &[randn().into()], &[])?;
    }
    let got = m.forward_values(&[five.into(), x.into()])?;
    assert_eq!(f32s(&got[0]), vec![6.0, 7.0]);
    Ok(())
}

fn saved_mod() -> Result<(ScriptModule, Vec<u8>)> {
    let m = trace_values(mod_forward, &[queue(-1.0).into(), randn().into()])?;
    let bytes = m.save_to_bytes()?;
    Ok((m, bytes))
}

#[test]
fn saved_programs_take_objects_and_check_their_class() -> Result<()> {
    let (_, bytes) = saved_mod()?;
    let loaded = load_bytes(&bytes)?;
    let (tq, x) = (queue(-1.0), randn());
    let out = loaded.forward_values(&[tq.clone().into(), x.clone().into()])?;
    assert_eq!(f32s(&out[1]), x.sin()?.to_vec::<f32>()?);
    assert_eq!(size(&tq), 1);
    // a wrong input is refused before anything runs
    let e = loaded
        .forward_values(&[x.clone().into(), x.clone().into()])
        .unwrap_err();
    assert!(
        e.message().contains("expected an object of"),
        "{}",
        e.message()
    );
    // a class this process does not have is refused, naming it
    let renamed = with(&bytes, |_, g| {
        let text = g.to_string().replace("MyCustomClass", "GoneClass");
        *g = serde_json::from_str(&text).unwrap();
    });
    let e = load_bytes(&renamed).err().unwrap().to_string();
    assert!(e.contains("GoneClass"), "{e}");
    // an op on objects must be threaded by a token
    let untokened = with(&bytes, |_, g| {
        for n in g["nodes"].as_array_mut().unwrap() {
            if let Some(op) = n.get("with_effects").cloned() {
                n["op"] = op;
                n.as_object_mut().unwrap().remove("with_effects");
            }
        }
    });
    assert!(load_bytes(&untokened).is_err());
    Ok(())
}

#[test]
fn an_object_the_function_holds_is_saved_by_its_state() -> Result<()> {
    let held = queue(-1.0);
    held.call_method("push", &[Tensor::from_slice(&[5.0f32]).into()], &[])?;
    let h = held.clone();
    let f = move |v: &[IValue]| -> Result<Vec<IValue>> {
        let top = h.call_method("top", &[], &[])?.into_tensor()?;
        Ok(vec![v[0].clone().into_tensor()?.mul(&top)?.into()])
    };
    let m = trace_values(f, &[Tensor::from_slice(&[2.0f32]).into()])?;
    let loaded = load_bytes(&m.save_to_bytes()?)?;
    let out = loaded.forward_values(&[Tensor::from_slice(&[3.0f32]).into()])?;
    assert_eq!(f32s(&out[0]), vec![15.0]);
    Ok(())
}
