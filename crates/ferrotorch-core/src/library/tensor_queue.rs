//! The worked example of custom classes: seeds/004's thread-safe
//! `TensorQueue` (fbgemm's), registered in namespace `MyCustomClass` as
//! the seed does, with the custom op `for_each_add_` that takes it.
//!
//! ```
//! use ferrotorch_core::dispatch::IValue;
//! use ferrotorch_core::library::{construct, tensor_queue};
//! use ferrotorch_core::Tensor;
//!
//! # fn main() -> ferrotorch_core::Result<()> {
//! tensor_queue::register()?;
//! // tq = torch.classes.MyCustomClass.TensorQueue(torch.empty(0).fill_(-1))
//! let tq = construct("MyCustomClass::TensorQueue", &[Tensor::from_slice(&[-1.0f32]).into()], &[])?;
//! let x = Tensor::from_slice(&[1.0f32, 2.0]);
//! tq.call_method("push", &[x.sin()?.into()], &[])?;
//! tq.call_method("push", &[x.cos()?.into()], &[])?;
//! let popped = tq.call_method("pop", &[], &[])?.into_tensor()?;
//! assert_eq!(popped.to_vec::<f32>()?, x.sin()?.to_vec::<f32>()?);
//! assert!(matches!(tq.call_method("size", &[], &[])?, IValue::Int(1)));
//! # Ok(())
//! # }
//! ```

use super::{find_class, Kind, Library, ScriptObject};
use crate::dispatch::{DispatchKey, IValue};
use crate::error::Result;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::OnceLock;

/// A queue of tensors behind a lock (seeds/004's `TensorQueue`): `pop`
/// and `top` of an empty queue give the tensor it was made with.
pub struct TensorQueue {
    init_tensor: Tensor,
    queue: Mutex<VecDeque<Tensor>>,
}

impl TensorQueue {
    /// An empty queue whose empty `pop` gives `init_tensor`.
    pub fn new(init_tensor: Tensor) -> TensorQueue {
        TensorQueue {
            init_tensor,
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Push `x` to the back (the tensor itself, not a copy).
    pub fn push(&self, x: Tensor) {
        self.queue.lock().push_back(x);
    }

    /// Take the front element, or the initial tensor when empty.
    pub fn pop(&self) -> Tensor {
        self.queue
            .lock()
            .pop_front()
            .unwrap_or_else(|| self.init_tensor.clone())
    }

    /// The front element, or the initial tensor when empty.
    pub fn top(&self) -> Tensor {
        self.queue
            .lock()
            .front()
            .cloned()
            .unwrap_or_else(|| self.init_tensor.clone())
    }

    /// How many tensors it holds.
    pub fn size(&self) -> i64 {
        self.queue.lock().len() as i64
    }

    /// The tensors it holds, front first (shared, not copied).
    pub fn get_raw_queue(&self) -> Vec<Tensor> {
        self.queue.lock().iter().cloned().collect()
    }

    /// A new queue holding copies of this one's tensors.
    pub fn clone_queue(&self) -> Result<ScriptObject> {
        let copy = TensorQueue::new(self.init_tensor.clone());
        for t in self.queue.lock().iter() {
            copy.push(t.deep_clone()?);
        }
        let class = find_class("MyCustomClass::TensorQueue").expect("registered");
        ScriptObject::new(&class, copy)
    }

    /// Add `inc` in place to every tensor it holds.
    pub fn for_each_add_(&self, inc: Tensor) -> Result<()> {
        for t in self.queue.lock().iter() {
            t.add_(&inc)?;
        }
        Ok(())
    }

    /// `(("queue", tensors), ("init_tensor_", a copy of the initial
    /// tensor))`: the seed's `__obj_flatten__`.
    pub fn obj_flatten(&self) -> Result<IValue> {
        Ok(IValue::Tuple(vec![
            IValue::Tuple(vec![
                IValue::Str("queue".into()),
                IValue::TensorList(self.get_raw_queue()),
            ]),
            IValue::Tuple(vec![
                IValue::Str("init_tensor_".into()),
                IValue::Tensor(self.init_tensor.deep_clone()?),
            ]),
        ]))
    }

    /// The pickled state: the initial tensor and the queue.
    pub fn state(&self) -> (Tensor, Vec<Tensor>) {
        (self.init_tensor.clone(), self.get_raw_queue())
    }

    /// A queue from a pickled state.
    pub fn from_state((init_tensor, queue): (Tensor, Vec<Tensor>)) -> TensorQueue {
        TensorQueue {
            init_tensor,
            queue: Mutex::new(queue.into()),
        }
    }
}

/// Register `MyCustomClass::TensorQueue` and `MyCustomClass::for_each_add_`
/// (as the seed's `TORCH_LIBRARY`, `TORCH_LIBRARY_FRAGMENT` and
/// `TORCH_LIBRARY_IMPL` blocks do). Registering again does nothing.
pub fn register() -> Result<()> {
    static DONE: OnceLock<std::result::Result<(), crate::Error>> = OnceLock::new();
    DONE.get_or_init(register_once).clone()
}

fn register_once() -> Result<()> {
    // TORCH_LIBRARY(MyCustomClass, m)
    let mut m = Library::new("MyCustomClass", Kind::Def)?;
    m.class_::<TensorQueue>("TensorQueue")?
        .def_init(TensorQueue::new)?
        .def("push", TensorQueue::push)?
        .def("pop", TensorQueue::pop)?
        .def("top", TensorQueue::top)?
        .def("size", TensorQueue::size)?
        .def("clone_queue", TensorQueue::clone_queue)?
        .def("get_raw_queue", TensorQueue::get_raw_queue)?
        .def("__obj_flatten__", TensorQueue::obj_flatten)?
        .def_pickle(TensorQueue::state, TensorQueue::from_state)?;
    // TORCH_LIBRARY_FRAGMENT(MyCustomClass, m)
    let mut f = Library::new("MyCustomClass", Kind::Fragment)?;
    f.class_::<TensorQueue>("TensorQueue")?
        .def("for_each_add_", TensorQueue::for_each_add_)?;
    f.def(
        "for_each_add_(__torch__.torch.classes.MyCustomClass.TensorQueue foo, Tensor inc) -> ()",
    )?;
    // TORCH_LIBRARY_IMPL(MyCustomClass, CPU, m)
    let mut i = Library::new("MyCustomClass", Kind::Impl)?;
    i.impl_("for_each_add_", DispatchKey::Cpu, |a| {
        let tq = a.object(0)?;
        let q = tq
            .downcast_ref::<TensorQueue>()
            .expect("the schema's class");
        q.for_each_add_(a.tensor(1)?)?;
        Ok(IValue::None)
    })?;
    Ok(())
}
