//! `torch.nn.parallel.DistributedDataParallel` for Rust modules
//! (`ferrotorch::nn::parallel`): a [`Forward`] module trained by every rank
//! of a group on its own share of the data, gradients averaged over the
//! ranks during each backward.
//!
//! # Note [Rust DDP's reducer]
//! As PyTorch's Reducer (and the Python one, Note [DDP's reducer]): at
//! construction parameters and buffers are broadcast from rank 0; the
//! parameters are grouped into buckets in reverse registration order
//! (backward produces gradients roughly so), the first small (1 MiB) so
//! that communication starts early, the rest `bucket_cap_mb`, one dtype a
//! bucket. Each bucket is one flat tensor. A post-accumulate-grad hook
//! copies a parameter's gradient into its slice of the bucket as it
//! arrives; when a bucket is full its all-reduce goes to the reducer's
//! worker thread, which runs it while backward goes on, in the same
//! bucket order on every rank. A callback queued on the autograd engine
//! runs when backward ends: it waits for the buckets, averages them in
//! place and hands the gradients back. With `gradient_as_bucket_view`
//! each `.grad` *is* its slice of the bucket (set on the first step), so
//! backward accumulates straight into the bucket and nothing is copied
//! in or out. A parameter that got no gradient is an error naming it,
//! unless `find_unused_parameters` (then its gradient counts as zero, and
//! buckets are all reduced at the end, in order, since ranks may differ
//! in which parameters were used). `no_sync()` skips all of it.

use crate::group::{err, ProcessGroup};
use crate::ReduceOp;
use ferrotorch_core::autograd::graph_hooks::queue_callback;
use ferrotorch_core::autograd::{no_grad, RemovableHandle};
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::{Entry, Forward, Module, Parameter};
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};

const FIRST_BUCKET_BYTES: usize = 1 << 20;

/// `DistributedDataParallel`'s keyword arguments, with torch's defaults.
#[derive(Clone, Debug)]
pub struct DdpOptions {
    /// bucket size in MiB (25)
    pub bucket_cap_mb: f64,
    /// treat parameters that got no gradient as zero instead of an error
    pub find_unused_parameters: bool,
    /// gradients are views into the buckets (no copies in or out)
    pub gradient_as_bucket_view: bool,
    /// broadcast buffers from rank 0 at each training forward (true)
    pub broadcast_buffers: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: 25.0,
            find_unused_parameters: false,
            gradient_as_bucket_view: false,
            broadcast_buffers: true,
        }
    }
}

struct Bucket {
    /// indices into `Reducer::params`, and each one's offset in `flat`
    members: Vec<(usize, usize)>,
    flat: Tensor,
}

#[derive(Default)]
struct Step {
    pending: Vec<usize>,
    seen: Vec<bool>,
    queued: bool,
    works: Vec<Option<Receiver<Result<()>>>>,
}

struct Job {
    flat: Tensor,
    done: Sender<Result<()>>,
}

struct Reducer {
    group: Arc<ProcessGroup>,
    params: Vec<(String, Tensor)>,
    buckets: Vec<Bucket>,
    /// each parameter's (bucket, offset)
    place: Vec<(usize, usize)>,
    opts: DdpOptions,
    sync: AtomicBool,
    step: Mutex<Step>,
    worker: Mutex<Sender<Job>>,
}

/// `nn.parallel.DistributedDataParallel(module)`: see Note [Rust DDP's
/// reducer]. Call it as the module (`ddp.call(&x)`); `ddp.module()` is
/// the wrapped module (in a checkpoint its names are prefixed `module.`,
/// as torch's).
pub struct DistributedDataParallel<M: Forward> {
    module: M,
    reducer: Arc<Reducer>,
    hooks: Vec<RemovableHandle>,
}

/// While alive, backwards accumulate gradients locally (`ddp.no_sync()`).
pub struct NoSync<'a> {
    sync: &'a AtomicBool,
    before: bool,
}

impl Drop for NoSync<'_> {
    fn drop(&mut self) {
        self.sync.store(self.before, Ordering::SeqCst);
    }
}

impl<M: Forward> DistributedDataParallel<M> {
    /// Wrap `module` for training on the default group.
    pub fn new(module: M) -> Result<Self> {
        Self::with_options(module, crate::api::default_group()?, DdpOptions::default())
    }

    /// Wrap `module` for training on `group` with `opts`.
    pub fn with_options(module: M, group: Arc<ProcessGroup>, opts: DdpOptions) -> Result<Self> {
        {
            let _g = no_grad();
            for p in module.parameters() {
                group.broadcast(&p.tensor(), 0)?;
            }
            for b in module.buffers() {
                group.broadcast(&b.tensor(), 0)?;
            }
        }
        let params: Vec<(String, Tensor)> = module
            .named_parameters()
            .into_iter()
            .map(|(n, p): (String, Parameter)| (n, p.tensor()))
            .filter(|(_, t)| t.requires_grad())
            .collect();
        let cap = (opts.bucket_cap_mb * (1 << 20) as f64).max(1.0) as usize;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut bytes = 0;
        for i in (0..params.len()).rev() {
            let t = &params[i].1;
            if let Some(&first) = current.first() {
                if params[first].1.dtype() != t.dtype() {
                    groups.push(std::mem::take(&mut current));
                    bytes = 0;
                }
            }
            current.push(i);
            bytes += t.numel() * t.element_size();
            let limit = if groups.is_empty() {
                FIRST_BUCKET_BYTES.min(cap)
            } else {
                cap
            };
            if bytes >= limit {
                groups.push(std::mem::take(&mut current));
                bytes = 0;
            }
        }
        if !current.is_empty() {
            groups.push(current);
        }
        let mut place = vec![(0, 0); params.len()];
        let mut buckets = Vec::new();
        for (b, idx) in groups.into_iter().enumerate() {
            let mut members = Vec::new();
            let mut at = 0;
            for i in idx {
                members.push((i, at));
                place[i] = (b, at);
                at += params[i].1.numel();
            }
            let dtype = params[members[0].0].1.dtype();
            buckets.push(Bucket {
                members,
                flat: Tensor::zeros(&[at], dtype)?,
            });
        }
        let (tx, rx) = channel::<Job>();
        let worker_group = group.clone();
        std::thread::Builder::new()
            .name("ddp-reducer".into())
            .spawn(move || {
                // one all-reduce at a time, in the order they were launched
                for job in rx {
                    let _ = job
                        .done
                        .send(worker_group.all_reduce(&job.flat, ReduceOp::Sum));
                }
            })
            .map_err(|e| err(format!("DistributedDataParallel: the reducer thread: {e}")))?;
        let reducer = Arc::new(Reducer {
            group,
            params,
            buckets,
            place,
            opts,
            sync: AtomicBool::new(true),
            step: Mutex::new(Step::default()),
            worker: Mutex::new(tx),
        });
        reducer.reset();
        let mut hooks = Vec::new();
        for (i, (_, t)) in reducer.params.iter().enumerate() {
            let weak: Weak<Reducer> = Arc::downgrade(&reducer);
            hooks.push(
                t.register_post_accumulate_grad_hook(move |leaf| match weak.upgrade() {
                    Some(r) => r.ready(i, leaf, &weak),
                    None => Ok(()),
                })?,
            );
        }
        Ok(DistributedDataParallel {
            module,
            reducer,
            hooks,
        })
    }

    /// The wrapped module (`ddp.module`).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// `with ddp.no_sync():` — backwards while the guard lives accumulate
    /// gradients locally; the next synchronised backward reduces them.
    pub fn no_sync(&self) -> NoSync<'_> {
        let before = self.reducer.sync.swap(false, Ordering::SeqCst);
        NoSync {
            sync: &self.reducer.sync,
            before,
        }
    }

    /// The number of gradient buckets (the first holds the last-registered
    /// parameters).
    pub fn num_buckets(&self) -> usize {
        self.reducer.buckets.len()
    }
}

impl<M: Forward> Drop for DistributedDataParallel<M> {
    fn drop(&mut self) {
        for h in &self.hooks {
            h.remove();
        }
    }
}

impl Reducer {
    fn reset(&self) {
        let mut s = self.step.lock().unwrap_or_else(|p| p.into_inner());
        *s = Step {
            pending: self.buckets.iter().map(|b| b.members.len()).collect(),
            seen: vec![false; self.params.len()],
            queued: false,
            works: (0..self.buckets.len()).map(|_| None).collect(),
        };
    }

    fn slice(&self, i: usize) -> Result<Tensor> {
        let (b, at) = self.place[i];
        let t = &self.params[i].1;
        let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        self.buckets[b]
            .flat
            .narrow(0, at as i64, t.numel())?
            .view(&shape)
    }

    /// Whether `g` is already parameter `i`'s slice of its bucket.
    fn is_slice(&self, i: usize, g: &Tensor) -> bool {
        let (b, at) = self.place[i];
        let flat = &self.buckets[b].flat;
        g.storage().is_same(flat.storage()) && g.storage_offset() == flat.storage_offset() + at
    }

    /// Parameter `i`'s gradient has been accumulated.
    fn ready(&self, i: usize, leaf: &Tensor, weak: &Weak<Reducer>) -> Result<()> {
        if !self.sync.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut s = self.step.lock().unwrap_or_else(|p| p.into_inner());
        if !s.queued {
            s.queued = true;
            let w = weak.clone();
            queue_callback(move || match w.upgrade() {
                Some(r) => r.finish(),
                None => Ok(()),
            })?;
        }
        if s.seen[i] {
            return Ok(());
        }
        s.seen[i] = true;
        if let Some(g) = leaf.grad() {
            if !self.is_slice(i, &g) {
                let slice = self.slice(i)?;
                {
                    let _g = no_grad();
                    slice.copy_(&g)?;
                }
                if self.opts.gradient_as_bucket_view {
                    leaf.set_grad(Some(slice))?;
                }
            }
        }
        let (b, _) = self.place[i];
        s.pending[b] -= 1;
        if s.pending[b] == 0 && !self.opts.find_unused_parameters {
            self.launch(&mut s, b)?;
        }
        Ok(())
    }

    fn launch(&self, s: &mut Step, b: usize) -> Result<()> {
        let (done, rx) = channel();
        self.worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Job {
                flat: self.buckets[b].flat.clone(),
                done,
            })
            .map_err(|_| err("DistributedDataParallel: the reducer thread has stopped".into()))?;
        s.works[b] = Some(rx);
        Ok(())
    }

    /// The end of backward: every bucket reduced, averaged, handed back.
    fn finish(&self) -> Result<()> {
        let mut s = self.step.lock().unwrap_or_else(|p| p.into_inner());
        let missing: Vec<&str> = (0..self.params.len())
            .filter(|&i| !s.seen[i])
            .map(|i| self.params[i].0.as_str())
            .collect();
        if !missing.is_empty() && !self.opts.find_unused_parameters {
            let msg = format!(
                "DistributedDataParallel: these parameters received no gradient in this backward pass: {}. If the forward does not use them every step, pass find_unused_parameters: true (then every rank reduces them as zeros).",
                missing.join(", ")
            );
            drop(s);
            self.reset();
            return Err(err(msg));
        }
        {
            let _g = no_grad();
            for i in 0..self.params.len() {
                if !s.seen[i] {
                    self.slice(i)?.zero_()?;
                }
            }
        }
        for b in 0..self.buckets.len() {
            if s.works[b].is_none() {
                self.launch(&mut s, b)?;
            }
        }
        let world = self.group.size() as f64;
        let _g = no_grad();
        for (b, bucket) in self.buckets.iter().enumerate() {
            let rx = s.works[b].take().expect("launched above");
            rx.recv().map_err(|_| {
                err("DistributedDataParallel: the reducer thread has stopped".into())
            })??;
            bucket.flat.div_(world)?;
            for &(i, _) in &bucket.members {
                let t = &self.params[i].1;
                let slice = self.slice(i)?;
                match t.grad() {
                    Some(g) if self.is_slice(i, &g) => {}
                    Some(g) => g.copy_(&slice)?,
                    None if self.opts.gradient_as_bucket_view => t.set_grad(Some(slice))?,
                    None => t.set_grad(Some(slice.deep_clone()?))?,
                }
            }
        }
        drop(s);
        self.reset();
        Ok(())
    }
}

impl<M: Forward> Module for DistributedDataParallel<M> {
    fn visit<'a>(&'a self, visitor: &mut dyn FnMut(&str, Entry<'a>)) {
        visitor("module", Entry::Module(&self.module));
    }

    fn type_name(&self) -> &str {
        "DistributedDataParallel"
    }

    fn as_module(&self) -> &dyn Module {
        self
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<M: Forward> Forward for DistributedDataParallel<M> {
    /// Buffers from rank 0 (in training, unless `broadcast_buffers` is
    /// off), then the module's forward.
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if self.reducer.opts.broadcast_buffers && self.module.is_training() {
            let _g = no_grad();
            for b in self.module.buffers() {
                self.reducer.group.broadcast(&b.tensor(), 0)?;
            }
        }
        self.reducer.reset();
        self.module.call(input)
    }
}
