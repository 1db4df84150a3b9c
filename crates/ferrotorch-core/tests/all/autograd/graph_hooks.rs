//! `autograd::graph_hooks` (Note [Graph hooks]) from Rust: saved-tensor
//! hooks, node pre/post hooks, final callbacks and node-creation hooks,
//! against values worked out by hand.

use super::v;
use ferrotorch_core::autograd::{self, graph_hooks};
use ferrotorch_core::Tensor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn times(t: &Tensor, k: f32) -> ferrotorch_core::Result<Tensor> {
    t.mul(&Tensor::scalar_tensor(k))
}

fn leaf(values: &[f32]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

#[test]
fn saved_tensor_hooks_decide_what_backward_sees() {
    let packs = Arc::new(AtomicUsize::new(0));
    let p = packs.clone();
    graph_hooks::push_saved_tensors_hooks(graph_hooks::SavedTensorHooks {
        pack: Box::new(move |t| {
            p.fetch_add(1, Ordering::Relaxed);
            Ok(Arc::new(times(t, 3.0)?) as graph_hooks::Packed)
        }),
        unpack: Box::new(|p| times(p.downcast_ref::<Tensor>().unwrap(), 1.0 / 3.0)),
    });
    let x = leaf(&[0.5, 1.0, 2.0]);
    let y = x.mul(&x).unwrap().sum().unwrap();
    assert!(graph_hooks::pop_saved_tensors_hooks());
    assert!(!graph_hooks::pop_saved_tensors_hooks());
    assert_eq!(packs.load(Ordering::Relaxed), 2); // both operands of mul
    let g = autograd::grad(&[y], &[x], None, None, false, false).unwrap();
    assert_eq!(v(g[0].as_ref().unwrap()), vec![1.0, 2.0, 4.0]);
}

#[test]
fn node_hooks_replace_gradients_and_callbacks_run_after_backward() {
    let x = leaf(&[1.0, 2.0]);
    let y = times(&x, 2.0).unwrap();
    let node = y.grad_fn().unwrap();
    let pre = node.register_prehook(Arc::new(|gs| {
        Ok(Some(vec![Some(times(gs[0].as_ref().unwrap(), 10.0)?)]))
    }));
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    let post = node.register_hook(Arc::new(move |ins, _outs| {
        let o2 = o.clone();
        graph_hooks::queue_callback(move || {
            o2.lock().unwrap().push("callback");
            Ok(())
        })?;
        o.lock().unwrap().push("post");
        let mut new = ins.to_vec();
        new[0] = Some(
            ins[0]
                .as_ref()
                .unwrap()
                .add(&Tensor::scalar_tensor(1.0f32))?,
        );
        Ok(Some(new))
    }));
    y.sum().unwrap().backward().unwrap();
    // dL/dy = 1 → 10 (prehook) → 20 (formula) → 21 (post hook)
    assert_eq!(v(&x.grad().unwrap()), vec![21.0, 21.0]);
    assert_eq!(*order.lock().unwrap(), vec!["post", "callback"]);
    pre.remove();
    post.remove();
    assert!(graph_hooks::queue_callback(|| Ok(())).is_err()); // outside backward
}

#[test]
fn node_creation_hooks_see_accumulators_then_nodes() {
    let names = Arc::new(Mutex::new(Vec::new()));
    let n = names.clone();
    graph_hooks::push_node_creation_hook(Arc::new(move |node| {
        n.lock().unwrap().push(node.name().to_string());
        Ok(())
    }));
    let x = leaf(&[1.0]);
    let _y = x.sin().unwrap().exp().unwrap();
    graph_hooks::pop_node_creation_hook();
    let _z = x.cos().unwrap();
    assert_eq!(
        *names.lock().unwrap(),
        vec!["AccumulateGrad", "SinBackward0", "ExpBackward0"]
    );
}
