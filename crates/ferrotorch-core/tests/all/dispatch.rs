//! The dispatcher: alias annotations read from schemas, op handles, the
//! dispatch key stack and its thread-local modes.

use ferrotorch_core::dispatch::{self, find_schema, Schema};

#[test]
fn schemas_carry_alias_annotations() {
    let t = find_schema("transpose.int").unwrap();
    assert!(t.is_view(0) && !t.is_inplace());
    assert_eq!(t.aliased_input(0), Some(0));
    let a = find_schema("add_.Tensor").unwrap();
    assert!(a.is_inplace() && !a.is_view(0));
    assert_eq!(a.mutated_args().collect::<Vec<_>>(), vec![0]);
    let s = find_schema("split.Tensor").unwrap();
    assert!(s.is_view(0));
    assert!(s.args[0].alias.as_ref().unwrap().wildcard_after);
    let plain = find_schema("add.Tensor").unwrap();
    assert!(!plain.is_view(0) && !plain.is_inplace() && plain.aliased_input(0).is_none());
    // an out-variant style schema: the written argument is not `self`
    let o = Schema::parse("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)").unwrap();
    assert_eq!(o.aliased_input(0), Some(1));
    assert!(o.is_inplace());
    for bad in [
        "f(Tensor(!) x) -> Tensor",
        "f(Tensor(a -> b) x) -> Tensor",
        "f(Tensor(a x) -> Tensor",
    ] {
        assert!(Schema::parse(bad).is_err(), "{bad}");
    }
}

/// Every registered in-place op (`name_`) says so in its schema, and
/// every op that says it writes an argument returns it: the facts the
/// tracer and the bindings read agree with the names.
#[test]
fn inplace_names_and_schemas_agree() {
    for full in dispatch::op_names() {
        let s = find_schema(&full).unwrap();
        if s.name.ends_with('_')
            && !s.name.starts_with('_')
            && s.args.first().is_some_and(|a| a.name == "self")
        {
            assert!(
                s.is_inplace(),
                "{full}: named in place but its schema does not write self: {s}"
            );
        }
        if s.mutated_args().next().is_some() && !s.returns.is_empty() {
            assert!(
                s.is_inplace(),
                "{full}: writes an argument but does not return it: {s}"
            );
        }
    }
}

use ferrotorch_core::dispatch::keys::{call_keys, interposed, set_fallback, Fallback};
use ferrotorch_core::dispatch::{
    redispatch, register_kernel, DispatchKey, DispatchKeySet, ExcludeGuard, IValue, IncludeGuard,
    OpHandle,
};
use ferrotorch_core::{DType, Result, Tensor};
use std::sync::{Arc, Mutex};

/// Serialises the tests that install a Tracer fallback (process-wide).
fn fallback_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A Tracer-key fallback that logs each op it sees and passes the call on.
fn logging_tracer() -> (Arc<Mutex<Vec<String>>>, Fallback) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let f: Fallback = Arc::new(move |e, a, below| {
        l.lock().unwrap().push(e.schema.full_name());
        redispatch(e, a, below)
    });
    (log, f)
}

#[test]
fn key_sets_order_and_thread_local_guards() {
    let ks = DispatchKeySet::of(&[DispatchKey::Cpu, DispatchKey::Tracer, DispatchKey::Autograd]);
    assert_eq!(
        ks.iter().collect::<Vec<_>>(),
        vec![DispatchKey::Tracer, DispatchKey::Autograd, DispatchKey::Cpu]
    );
    assert_eq!(
        ks.below(DispatchKey::Autograd).iter().collect::<Vec<_>>(),
        vec![DispatchKey::Cpu]
    );
    assert!(!interposed() && !call_keys().has(DispatchKey::Tracer));
    {
        let _t = IncludeGuard::new(DispatchKey::Tracer);
        assert!(interposed() && call_keys().has(DispatchKey::Tracer));
        {
            let _x = ExcludeGuard::new(DispatchKey::Tracer);
            assert!(!interposed() && !call_keys().has(DispatchKey::Tracer));
        }
        assert!(interposed());
        // another thread has its own key sets
        std::thread::spawn(|| assert!(!interposed()))
            .join()
            .unwrap();
    }
    assert!(!interposed());
}

/// With the Tracer key included, typed methods, boxed calls by name and
/// calls through handles all pass the Tracer layer once each (a composite's
/// inner calls do not: they run below the modes), and give the same values
/// as the fast path.
#[test]
fn a_mode_sees_every_call_once() -> Result<()> {
    let _l = fallback_lock();
    let (log, f) = logging_tracer();
    set_fallback(DispatchKey::Tracer, Some(f));
    let a = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3])?;
    let b = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    let fast = a.exp()?.add(&b)?.mul(2.0)?;
    let traced = {
        let _t = IncludeGuard::new(DispatchKey::Tracer);
        let y = a.exp()?.add(&b)?.mul(2.0)?;
        y.add_(1.0)?;
        let z = ferrotorch_core::dispatch::call("sin", &[IValue::from(&y)], &[])?.into_tensor()?;
        static LINEAR: OpHandle = OpHandle::new("linear");
        let w = Tensor::from_vec(vec![1.0f32; 6], &[2, 3])?;
        LINEAR.call(&[(&z).into(), (&w).into()], &[])?;
        y
    };
    set_fallback(DispatchKey::Tracer, None);
    assert_eq!(traced.to_vec::<f32>()?, fast.add(1.0)?.to_vec::<f32>()?);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "exp",
            "add.Tensor",
            "mul.Scalar",
            "add_.Scalar",
            "sin",
            "linear"
        ]
    );
    // outside the mode nothing is logged
    a.exp()?;
    assert_eq!(log.lock().unwrap().len(), 6);
    Ok(())
}

/// Methods declared with `ops!` (Note [Ops declared once]) enter their
/// handle under a mode whatever their shape: one method for an op's
/// Scalar and Tensor overloads (bound by the arguments), an in-place
/// method, a free function, tuple and list results, `usize` arguments,
/// methods that did not enter before (`outer`) — each logged once under
/// its schema's name, with the fast path's values.
#[test]
fn declared_ops_enter_their_handles_under_a_mode() -> Result<()> {
    let _l = fallback_lock();
    let (log, f) = logging_tracer();
    let x = Tensor::from_vec(vec![0.25f32, -1.0, 2.0, 3.5, -0.5, 1.0], &[2, 3])?;
    let lo = Tensor::from_vec(vec![0.0f32, 0.5, 0.0], &[3])?;
    let mask = x.lt(0.0)?;
    let run = || -> Result<Vec<Vec<f32>>> {
        let m = x.deep_clone()?;
        m.masked_fill_(&mask, 9.0)?;
        let (v, mean) = x.var_mean(Some(&[1]), None, false)?;
        let parts = x.split(2, 1)?;
        Ok(vec![
            x.clamp_min(0.5)?.to_vec()?,
            x.clamp_min(&lo)?.to_vec()?,
            m.to_vec()?,
            ferrotorch_core::native::where_(&mask, &x, 0.0)?.to_vec()?,
            v.to_vec()?,
            mean.to_vec()?,
            parts[1].contiguous()?.to_vec()?,
            x.narrow(1, 1, 2)?.contiguous()?.to_vec()?,
            lo.outer(&lo)?.to_vec()?,
            // overloads registered in another order than their methods'
            // (`sum(self, dtype)` after `sum.dim_IntList`): each method
            // still names its own
            x.sum()?.to_vec()?,
            x.mean()?.to_vec()?,
        ])
    };
    let fast = run()?;
    set_fallback(DispatchKey::Tracer, Some(f));
    let traced = {
        let _t = IncludeGuard::new(DispatchKey::Tracer);
        run()
    };
    set_fallback(DispatchKey::Tracer, None);
    assert_eq!(traced?, fast);
    let log = log.lock().unwrap().clone();
    let declared: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|n| !n.starts_with("clone") && !n.starts_with("contiguous"))
        .collect();
    assert_eq!(
        declared,
        vec![
            "masked_fill_.Scalar",
            "var_mean.correction",
            "split.Tensor",
            "clamp_min",
            "clamp_min.Tensor",
            "where.ScalarOther",
            "narrow",
            "outer",
            "sum",
            "mean",
        ]
    );
    // the in-place kernel hands back its `self`, as `Tensor(a!)` says
    let y = x.deep_clone()?;
    let r = dispatch::call("clamp_", &[(&y).into(), IValue::from(0.0)], &[])?.into_tensor()?;
    assert!(r.is_same(&y));
    assert_eq!(y.to_vec::<f32>()?, x.clamp_min(0.0)?.to_vec::<f32>()?);
    Ok(())
}

/// A mode key with no fallback falls through to the backend (no
/// recursion), and a kernel registered under a key runs ahead of the lower
/// ones while that key is in the call's set.
#[test]
fn fallthrough_and_per_key_kernels() -> Result<()> {
    let _l = fallback_lock();
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    {
        let _t = IncludeGuard::new(DispatchKey::Tracer);
        assert_eq!(a.exp()?.to_vec::<f32>()?, a.exp()?.to_vec::<f32>()?);
    }
    register_kernel("atan2", DispatchKey::PrivateUse1, |args| {
        Ok(IValue::from(args.tensor(0)?.mul(100.0)?))
    })?;
    assert!(register_kernel("atan2", DispatchKey::PrivateUse1, |_| Ok(IValue::None)).is_err());
    let call = || ferrotorch_core::dispatch::call("atan2", &[(&a).into(), (&a).into()], &[]);
    assert_eq!(
        call()?.into_tensor()?.to_vec::<f32>()?,
        a.atan2(&a)?.to_vec::<f32>()?
    );
    let _p = IncludeGuard::new(DispatchKey::PrivateUse1);
    assert_eq!(call()?.into_tensor()?.to_vec::<f32>()?, vec![100.0, 200.0]);
    Ok(())
}

/// Typed kernels (Note [Typed kernels]) unbox by schema: conv1d boxed with
/// keyword arguments equals the typed call, and a `SymInt[1]` given an
/// empty list is an error naming the argument (it used to index past the
/// end of the list).
#[test]
fn typed_kernels_unbox_by_schema() -> Result<()> {
    let x = Tensor::from_vec((0..12).map(|i| i as f32).collect(), &[1, 2, 6])?;
    let w = Tensor::from_vec(vec![1.0f32, -1.0, 0.5, 2.0, 0.0, 1.0], &[1, 2, 3])?;
    let boxed = dispatch::call(
        "conv1d",
        &[(&x).into(), (&w).into()],
        &[
            ("padding", IValue::IntList(vec![1])),
            ("stride", IValue::Int(2)),
        ],
    )?
    .into_tensor()?;
    assert_eq!(
        boxed.to_vec::<f32>()?,
        x.conv1d(&w, None, 2, 1, 1, 1)?.to_vec::<f32>()?
    );
    let e = dispatch::call(
        "conv1d",
        &[(&x).into(), (&w).into()],
        &[("stride", IValue::IntList(vec![]))],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("argument 'stride' must be one int"), "{e}");
    let e = dispatch::call(
        "max_pool1d_with_indices",
        &[(&x).into(), IValue::IntList(vec![])],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("argument 'kernel_size' must be one int"), "{e}");
    // a negative repeat count is an error, as in torch (it was taken as 0)
    let e = dispatch::call(
        "repeat",
        &[(&x).into(), IValue::IntList(vec![1, -1, 1])],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("argument 'repeats' must not be negative"), "{e}");
    let e = dispatch::call("elu", &[(&x).into(), IValue::Str("a".into())], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("alpha"), "{e}");
    // a negative layer count is an error (it was taken as 0 layers)
    let seq = Tensor::zeros(&[3, 1, 2], DType::F32)?;
    let h = Tensor::zeros(&[1, 1, 2], DType::F32)?;
    let e = dispatch::call(
        "rnn_tanh",
        &[
            seq.into(),
            h.into(),
            IValue::TensorList(vec![]),
            true.into(),
            IValue::Int(-1),
            0.0.into(),
            false.into(),
            false.into(),
            false.into(),
        ],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("argument 'num_layers' must not be negative"),
        "{e}"
    );
    // creation ops take their options by keyword, devices parsed
    let z = dispatch::call(
        "zeros",
        &[IValue::IntList(vec![2, 3])],
        &[("dtype", DType::F64.into()), ("device", "cpu".into())],
    )?
    .into_tensor()?;
    assert_eq!((z.shape(), z.dtype()), (&[2usize, 3][..], DType::F64));
    let e = dispatch::call(
        "ones",
        &[IValue::IntList(vec![2])],
        &[("device", "tpu".into())],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("Expected one of cpu, cuda device type"), "{e}");
    Ok(())
}
