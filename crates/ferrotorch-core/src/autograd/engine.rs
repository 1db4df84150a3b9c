//! The backward engine: runs a graph's nodes in dependency order on the
//! calling thread (so independent graphs run on separate threads at once),
//! passing each node the summed gradients of its outputs.

use super::meta::gradient_edge;
use super::node::{Ctx, Edge, Kind, Node, PreHook};
use crate::error::Result;
use crate::tensor::Tensor;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

static ANOMALY: AtomicBool = AtomicBool::new(false);

/// Anomaly mode (`torch.autograd.set_detect_anomaly`): record where each
/// node's forward op ran, and fail a backward whose formula produces NaN,
/// naming that op.
pub fn set_detect_anomaly(on: bool) {
    ANOMALY.store(on, Ordering::Relaxed);
}

/// Whether anomaly mode is on (`torch.is_anomaly_enabled()`).
pub fn is_anomaly_enabled() -> bool {
    ANOMALY.load(Ordering::Relaxed)
}

type Key = *const Node;

fn key(n: &Arc<Node>) -> Key {
    Arc::as_ptr(n)
}

/// Ready nodes run highest sequence number first (the most recently
/// recorded op first, as PyTorch's engine does), ties broken by address.
struct Ready(u64, usize, Arc<Node>);
impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// `grad` summed down to `shape` (undo broadcasting) and cast to `dtype`.
fn conform(grad: Tensor, shape: &[usize], dtype: crate::DType) -> Result<Tensor> {
    let mut g = grad;
    if g.shape() != shape {
        g = sum_to(&g, shape)?;
    }
    if g.dtype() != dtype {
        g = g.to_dtype(dtype)?;
    }
    Ok(g)
}

/// [`conform`] a node's returned gradient `i` to its input, with PyTorch's
/// error for a gradient of the wrong shape.
pub(crate) fn reduce_to(
    node: &Node,
    i: usize,
    grad: Tensor,
    meta: &super::node::TensorMeta,
) -> Result<Tensor> {
    if grad.shape() == meta.shape.as_slice() && grad.dtype() == meta.dtype {
        return Ok(grad);
    }
    let got = grad.shape().to_vec();
    conform(grad, &meta.shape, meta.dtype).map_err(|_| {
        crate::Error::new(
            crate::ErrorKind::Runtime,
            format!(
                "Function {} returned an invalid gradient at index {i} - got {got:?} but expected shape compatible with {:?}",
                node.name, meta.shape
            ),
        )
    })
}

/// `grad` summed over the dims that broadcasting added or expanded, so it
/// has `shape` (PyTorch's `sum_to`).
pub fn sum_to(grad: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let gs = grad.shape();
    crate::ensure!(
        gs.len() >= shape.len(),
        Runtime,
        "sum_to: shape {shape:?} is not expandable to {gs:?}"
    );
    let lead = gs.len() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        let g = gs[lead + i];
        if s == 1 && g != 1 {
            dims.push((lead + i) as i64);
        } else {
            crate::ensure!(
                s == g,
                Runtime,
                "sum_to: shape {shape:?} is not expandable to {gs:?}"
            );
        }
    }
    let mut r = if dims.is_empty() {
        grad.clone()
    } else {
        grad.sum_dim(Some(&dims), true, None)?
    };
    if lead > 0 {
        r = r.reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
    }
    Ok(r)
}

/// Run backward from `roots` (each an edge and the gradient entering it).
/// With `capture`, return the gradients reaching those edges instead of
/// accumulating into leaves (`autograd.grad`), and run only the part of the
/// graph that leads to them.
pub(crate) fn execute(
    roots: Vec<(Edge, Tensor)>,
    keep_graph: bool,
    create_graph: bool,
    capture: Option<&[Edge]>,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = super::mode::set_grad_enabled(create_graph);
    // Note [Graph hooks]: callbacks queued during this backward run after it
    super::graph_hooks::with_final_callbacks(|| {
        let mut scratch = Scratch::take();
        let r = run_graph(&mut scratch, roots, keep_graph, create_graph, capture);
        scratch.give_back();
        r
    })
}

/// # Note [Engine scratch reuse]
/// A backward's node table and work stack are kept per thread and reused
/// by the next backward on that thread (cleared, capacity kept): growing a
/// fresh hash table node by node was a tenth of a small graph's backward.
/// A backward started from inside another (a hook calling `backward`)
/// finds the slot empty and builds its own. Tables past `SCRATCH_MAX`
/// entries are dropped rather than kept.
struct Scratch {
    slots: Slots,
    stack: Vec<Arc<Node>>,
}

const SCRATCH_MAX: usize = 1 << 16;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

impl Scratch {
    fn take() -> Box<Scratch> {
        SCRATCH
            .try_with(|c| c.take())
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                Box::new(Scratch {
                    slots: HashMap::default(),
                    stack: Vec::new(),
                })
            })
    }

    fn give_back(mut self: Box<Self>) {
        self.slots.clear();
        self.stack.clear();
        if self.slots.capacity() <= SCRATCH_MAX {
            let _ = SCRATCH.try_with(|c| c.set(Some(self)));
        }
    }
}

fn run_graph(
    scratch: &mut Scratch,
    roots: Vec<(Edge, Tensor)>,
    keep_graph: bool,
    create_graph: bool,
    capture: Option<&[Edge]>,
) -> Result<Vec<Option<Tensor>>> {
    // 1. Discover the graph and count each node's incoming edges.
    let Scratch { slots, stack } = scratch;
    for (e, _) in &roots {
        if let Entry::Vacant(v) = slots.entry(key(&e.node)) {
            v.insert(Slot::new(&e.node));
            stack.push(e.node.clone());
        }
    }
    let mut order: Vec<Arc<Node>> = Vec::new();
    while let Some(n) = stack.pop() {
        for e in n.next.iter().flatten() {
            match slots.entry(key(&e.node)) {
                Entry::Occupied(mut o) => o.get_mut().deps += 1,
                Entry::Vacant(v) => {
                    v.insert(Slot::new(&e.node)).deps = 1;
                    stack.push(e.node.clone());
                }
            }
        }
        if capture.is_some() {
            order.push(n);
        }
    }
    // 2. With capture targets, a node is needed when it leads to one:
    //    decided children-first over a topological order (Kahn's, on a copy
    //    of the edge counts).
    let needed: Option<HashSet<Key, PtrHash>> = capture.map(|targets| {
        let mut indeg: HashMap<Key, usize, PtrHash> =
            slots.iter().map(|(k, s)| (*k, s.deps)).collect();
        let mut topo: Vec<Arc<Node>> = order
            .iter()
            .filter(|n| indeg[&key(n)] == 0)
            .cloned()
            .collect();
        let mut i = 0;
        while i < topo.len() {
            let n = topo[i].clone();
            for e in n.next.iter().flatten() {
                let d = indeg.get_mut(&key(&e.node)).expect("counted in discovery");
                *d -= 1;
                if *d == 0 {
                    topo.push(e.node.clone());
                }
            }
            i += 1;
        }
        let mut needed: HashSet<Key, PtrHash> = targets.iter().map(|e| key(&e.node)).collect();
        for n in topo.iter().rev() {
            if n.next
                .iter()
                .flatten()
                .any(|e| needed.contains(&key(&e.node)))
            {
                needed.insert(key(n));
            }
        }
        needed
    });
    let mut captured: Vec<Option<Tensor>> = vec![None; capture.map_or(0, |c| c.len())];
    // 3. Input buffers, seeded with the root gradients.
    let mut ready = BinaryHeap::new();
    for (e, g) in roots {
        accumulate(slots, &e, g)?;
    }
    for s in slots.values() {
        if s.deps == 0 {
            ready.push(Ready(s.node.seq, key(&s.node) as usize, s.node.clone()));
        }
    }
    // 4. Run.
    while let Some(Ready(_, _, node)) = ready.pop() {
        let k = key(&node);
        let buf = slots.get_mut(&k).and_then(|s| s.buf.take());
        let run = needed.as_ref().is_none_or(|s| s.contains(&k));
        if let (true, Some(buf)) = (run, buf) {
            // Note [Profiling at the dispatcher]: a range per node
            let _range = crate::profiler::is_enabled().then(|| {
                crate::profiler::range(crate::profiler::EventKind::Backward, || {
                    format!("autograd::engine::evaluate_function: {}", node.name())
                })
            });
            let mut grads = run_pre_hooks(&node, buf)?;
            let mut for_post = None;
            if node
                .has_node_hooks
                .load(std::sync::atomic::Ordering::Acquire)
            {
                grads = run_node_pre_hooks(&node, grads)?;
                if !node.node_hooks.lock().post.is_empty() {
                    for_post = Some(grads.clone());
                }
            }
            if let Some(targets) = capture {
                for (ti, t) in targets.iter().enumerate() {
                    if Arc::ptr_eq(&t.node, &node) {
                        if let Some(g) = &grads[t.input_nr] {
                            captured[ti] = Some(match captured[ti].take() {
                                Some(prev) => prev.add(g)?,
                                None => g.clone(),
                            });
                        }
                    }
                }
            }
            let outs = match &node.kind {
                Kind::Accumulate(leaf) => {
                    if capture.is_none() {
                        if let Some(g) = grads.into_iter().next().flatten() {
                            accumulate_grad(leaf, g, create_graph)?;
                        }
                    }
                    super::node::GradVec::new()
                }
                Kind::Formula(f) => call_formula(&node, f, grads, !keep_graph)?,
            };
            let outs = match for_post {
                Some(out_grads) => super::graph_hooks::run_post_hooks(&node, outs, &out_grads)?,
                None => outs,
            };
            for (i, g) in outs.into_iter().enumerate() {
                if let (Some(g), Some(Some(e))) = (g, node.next.get(i)) {
                    let g = reduce_to(&node, i, g, &node.inputs[i])?;
                    accumulate(slots, e, g)?;
                }
            }
        }
        for e in node.next.iter().flatten() {
            let s = slots.get_mut(&key(&e.node)).expect("counted in discovery");
            s.deps -= 1;
            if s.deps == 0 {
                ready.push(Ready(e.node.seq, key(&e.node) as usize, e.node.clone()));
            }
        }
    }
    Ok(captured)
}

/// The gradients gathered for a node's outputs (most nodes have one or two
/// outputs: kept inline, no allocation per node).
type Grads = smallvec::SmallVec<[Option<Tensor>; 2]>;

/// Per-node state of one backward run: the node, its incoming edges not yet
/// run, and the gradients gathered for its outputs.
struct Slot {
    node: Arc<Node>,
    deps: usize,
    buf: Option<Grads>,
}

impl Slot {
    fn new(node: &Arc<Node>) -> Slot {
        Slot {
            node: node.clone(),
            deps: 0,
            buf: None,
        }
    }
}

type PtrHash = crate::hash::MulHash;
type Slots = HashMap<Key, Slot, PtrHash>;

fn accumulate(slots: &mut Slots, e: &Edge, g: Tensor) -> Result<()> {
    let buf = slots
        .entry(key(&e.node))
        .or_insert_with(|| Slot::new(&e.node))
        .buf
        .get_or_insert_with(|| smallvec::smallvec![None; e.node.outputs.len().max(1)]);
    let slot = &mut buf[e.input_nr];
    *slot = Some(match slot.take() {
        Some(prev) => prev.add(&g)?,
        None => g,
    });
    Ok(())
}

/// PyTorch's check on a tensor hook's replacement gradient: same shape and
/// dtype as the one it replaces (else the wrong shape would reach `.grad`
/// or the next formula).
fn check_hook_result(old: &Tensor, new: &Tensor) -> Result<()> {
    crate::ensure!(
        new.dtype() == old.dtype(),
        Runtime,
        "hook has changed the type of value (was torch.{}Tensor got torch.{}Tensor)",
        old.dtype().name_title(),
        new.dtype().name_title()
    );
    crate::ensure!(
        new.shape() == old.shape(),
        Runtime,
        "hook has changed the size of value (was {:?} got {:?})",
        old.shape(),
        new.shape()
    );
    Ok(())
}

fn run_pre_hooks(node: &Arc<Node>, mut grads: Grads) -> Result<Grads> {
    // Leaf hooks live on the tensor and run before accumulation.
    if let Kind::Accumulate(leaf) = &node.kind {
        let hooks = leaf
            .0
            .autograd
            .read(|m| m.hooks.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>())
            .unwrap_or_default();
        for h in hooks {
            if let Some(g) = &grads[0] {
                if let Some(new) = h(g)? {
                    check_hook_result(g, &new)?;
                    grads[0] = Some(new);
                }
            }
        }
        return Ok(grads);
    }
    let pre = node.pre_hooks.lock();
    if pre.is_empty() {
        return Ok(grads);
    }
    let mut hooks: Vec<_> = pre
        .iter()
        .map(|h| match h {
            PreHook::User {
                output_nr, hook, ..
            } => (Some(hook.clone()), None, *output_nr),
            PreHook::Retain { output_nr, tensor } => (None, Some(tensor.clone()), *output_nr),
        })
        .collect();
    drop(pre);
    // retain_grad sees the gradient after the tensor's other hooks, as in PyTorch.
    hooks.sort_by_key(|h| h.1.is_some());
    for (hook, retain, nr) in hooks {
        let Some(g) = grads.get(nr).cloned().flatten() else {
            continue;
        };
        if let Some(h) = hook {
            if let Some(new) = h(&g)? {
                check_hook_result(&g, &new)?;
                grads[nr] = Some(new);
            }
        } else if let Some(t) = retain.and_then(|w| w.upgrade()) {
            let t = Tensor(t);
            let g = if super::mode::is_grad_enabled() {
                g
            } else {
                g.detach()
            };
            t.0.autograd.with(|m| {
                m.grad = Some(match m.grad.take() {
                    Some(prev) => prev.add(&g),
                    None => g.deep_clone(),
                }?);
                Ok::<(), crate::Error>(())
            })?;
        }
    }
    Ok(grads)
}

/// The node's own pre-hooks over all its output gradients (Note [Graph
/// hooks]), after the tensors' hooks.
fn run_node_pre_hooks(node: &Arc<Node>, mut grads: Grads) -> Result<Grads> {
    let hooks: Vec<super::graph_hooks::NodePreHook> = {
        let h = node.node_hooks.lock();
        if h.pre.is_empty() {
            return Ok(grads);
        }
        h.pre.iter().map(|(_, h)| h.clone()).collect()
    };
    for h in hooks {
        if let Some(new) = h(&grads)? {
            super::graph_hooks::replace_grads("register_prehook", &mut grads, new)?;
        }
    }
    Ok(grads)
}

/// Run a node's formula; with `release`, its saved tensors are freed as
/// they are unpacked (a backward without `retain_graph`).
fn call_formula(
    node: &Arc<Node>,
    f: &super::node::Formula,
    grads: Grads,
    release: bool,
) -> Result<super::node::GradVec> {
    let mut full = smallvec::SmallVec::with_capacity(grads.len());
    for (g, m) in grads.into_iter().zip(&node.outputs) {
        full.push(match g {
            Some(g) => g,
            None => Tensor::zeros(&m.shape, m.dtype)?,
        });
    }
    let mut needs = smallvec::SmallVec::new();
    needs.extend(node.next.iter().map(|e| e.is_some()));
    let ctx = Ctx {
        grads: full,
        saved: node.unpack_saved(release)?,
        needs,
    };
    let outs = f(&ctx).map_err(|e| match &node.trace {
        Some(t) => e.context(format!("in {} (forward op recorded at {t})", node.name)),
        None => e,
    })?;
    if is_anomaly_enabled() {
        for (i, g) in outs.iter().enumerate() {
            if let Some(g) = g {
                if g.is_floating_point() && g.isnan()?.any()?.item()?.to_bool() {
                    crate::bail!(
                        Runtime,
                        "Function '{}' returned nan values in its {i}th output.{}",
                        node.name,
                        node.trace
                            .as_ref()
                            .map(|t| format!(" The forward op was called at: {t}"))
                            .unwrap_or_default()
                    );
                }
            }
        }
    }
    Ok(outs)
}

/// `AccumulateGrad`: add `g` into the leaf's `.grad` (without recording
/// unless `create_graph`), then run its post-accumulate hooks.
///
/// # Note [Gradient layout contract]
/// As in PyTorch, a fresh `.grad` is laid out like its parameter: with the
/// parameter's strides when the parameter is non-overlapping and dense (a
/// permutation of a contiguous layout), else row-major contiguous. The
/// gradient a backward produced is handed over as `.grad` without a copy
/// only when it already obeys that contract ([`steal`]); otherwise it is
/// copied into the contract's layout. Optimizers and in-place users of
/// `.grad` may rely on it (though they also accept any layout): a linear
/// layer on 3-D input computes its weight gradient transposed, which before
/// this contract reached AdamW as a non-contiguous `.grad`.
fn accumulate_grad(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    leaf.0.autograd.with(|m| -> Result<()> {
        m.grad = Some(match m.grad.take() {
            None if create_graph && obeys_layout(&g, leaf) => g,
            None if create_graph => g.clone_laid_out_like(leaf)?,
            None => match steal(g, leaf) {
                Ok(g) => g,
                Err(g) => g.detach().clone_laid_out_like(leaf)?,
            },
            Some(prev) if create_graph => prev.add(&g)?,
            Some(prev) => {
                prev.add_(&g)?;
                prev
            }
        });
        Ok(())
    })?;
    let hooks = leaf
        .0
        .autograd
        .read(|m| {
            m.post_hooks
                .iter()
                .map(|(_, h)| h.clone())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for h in hooks {
        h(leaf)?;
    }
    Ok(())
}

/// Whether `g` is laid out as Note [Gradient layout contract] asks for a
/// `.grad` of `leaf`: the leaf's strides (size-1 dims aside) when the leaf
/// is non-overlapping and dense, else contiguous.
fn obeys_layout(g: &Tensor, leaf: &Tensor) -> bool {
    if g.shape() != leaf.shape() {
        return false;
    }
    if leaf.is_contiguous() || !leaf.layout().is_dense() {
        return g.is_contiguous();
    }
    crate::tensor::access::same_dense_layout(&[leaf, g])
}

/// The gradient itself as the leaf's `.grad`, instead of a copy (PyTorch's
/// AccumulateGrad does the same), when nothing else holds the tensor or its
/// storage, it requires no grad, and it already obeys Note [Gradient
/// layout contract], so `.grad` can never alias memory that someone else
/// reads or writes. A view whose base only it holds qualifies too (a
/// linear layer's weight gradient on 2-D input is the transpose of a
/// product computed transposed, Note [Gradient layout]); it is handed over
/// as a plain tensor on the same storage. `Err` gives the gradient back.
fn steal(g: Tensor, leaf: &Tensor) -> std::result::Result<Tensor, Tensor> {
    let laid_out = !g.requires_grad()
        && g.dtype() == leaf.dtype()
        && g.layout().offset() == 0
        && obeys_layout(&g, leaf);
    if !laid_out || Arc::strong_count(&g.0) != 1 || Arc::weak_count(&g.0) != 0 {
        return Err(g);
    }
    match &g.0.base {
        None if g.storage().use_count() == 1 => Ok(g),
        Some(base)
            if Arc::strong_count(&base.0) == 1
                && Arc::weak_count(&base.0) == 0
                && g.storage().use_count() == 2 =>
        {
            Ok(Tensor::from_parts(
                g.storage().clone(),
                g.layout().clone(),
                g.dtype(),
            ))
        }
        _ => Err(g),
    }
}

/// Edges for `tensors`, failing like PyTorch for ones outside the graph.
pub(crate) fn edges_of(tensors: &[Tensor], what: &str) -> Result<Vec<Edge>> {
    tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            gradient_edge(t).ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!(
                        "element {i} of {what} does not require grad and does not have a grad_fn"
                    ),
                )
            })
        })
        .collect()
}

/// Shape and dtype a captured gradient to its input tensor.
pub(crate) fn reduce_to_input(g: Tensor, x: &Tensor) -> Result<Tensor> {
    conform(g, x.shape(), x.dtype())
}
