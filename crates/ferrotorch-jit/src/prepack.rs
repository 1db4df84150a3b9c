//! The interpreter's prepacked convolution filters: a convolution node
//! whose filter is a constant of the graph runs with the filter's
//! transforms kept from call to call (Note [Prepacked convolution filters]
//! in ferrotorch-core).

use crate::ir::{Graph, NodeKind};
use ferrotorch_core::dispatch::{find_op, IValue, OpEntry};
use ferrotorch_core::native::PrepackedFilters;
use std::sync::{Arc, Mutex, OnceLock};

/// A graph's prepacked filters, one per constant filter tensor used by a
/// convolution node. A copy of a graph (which passes may then change)
/// starts with none.
#[derive(Default)]
pub struct Prepacked(Mutex<Vec<Arc<PrepackedFilters>>>);

impl Clone for Prepacked {
    fn clone(&self) -> Self {
        Prepacked::default()
    }
}

/// The ops whose second argument is a filter that may be prepacked.
fn conv_ops() -> &'static [Arc<OpEntry>] {
    static OPS: OnceLock<Vec<Arc<OpEntry>>> = OnceLock::new();
    OPS.get_or_init(|| {
        ["conv2d", "_conv2d_affine"]
            .iter()
            .filter_map(|n| find_op(n))
            .collect()
    })
}

impl Prepacked {
    /// The prepacked filters for node `k` of `g` (an op called with
    /// `args`), where it is a convolution whose filter is a constant.
    pub(crate) fn for_node(
        &self,
        g: &Graph,
        k: usize,
        e: &Arc<OpEntry>,
        args: &[IValue],
    ) -> Option<Arc<PrepackedFilters>> {
        if !conv_ops().iter().any(|c| Arc::ptr_eq(c, e)) {
            return None;
        }
        let (Some(&v), Some(IValue::Tensor(w))) = (g.nodes[k].inputs.get(1), args.get(1)) else {
            return None;
        };
        // a constant's kept filters are found here from the second call on,
        // without the search for the filter's producer below
        let mut packs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = packs.iter().find(|p| p.is_for(w)) {
            return Some(p.clone());
        }
        // the filter must be a constant of this graph (its own, never
        // trained), not a parameter read by `prim::GetAttr`
        let constant = g.nodes[..k]
            .iter()
            .rev()
            .find(|n| n.outputs.contains(&v))
            .is_some_and(|n| matches!(n.kind, NodeKind::Constant(_)));
        if !constant {
            return None;
        }
        let p = PrepackedFilters::new(w);
        packs.push(p.clone());
        Some(p)
    }
}
