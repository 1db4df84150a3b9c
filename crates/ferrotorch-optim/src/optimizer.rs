//! The optimizer machinery shared by every algorithm: parameter groups with
//! per-group options, per-parameter state, `zero_grad`, and PyTorch's
//! `state_dict` layout (`state` by parameter index, `param_groups` with
//! their options and parameter indices).

use ferrotorch_core::{bail, ensure, Result, Tensor};
use ferrotorch_nn::Parameter;
use std::collections::BTreeMap;

/// One option value of a parameter group, as PyTorch's `param_groups`
/// dicts hold them.
#[derive(Clone, Debug, PartialEq)]
pub enum Hyper {
    /// A float (`lr`, `eps`, ...).
    Float(f64),
    /// A flag (`nesterov`, `amsgrad`, ...).
    Bool(bool),
    /// A pair (`betas`).
    Pair(f64, f64),
}

/// Options of one parameter group, convertible to and from PyTorch's
/// `param_groups` entries.
pub trait GroupOptions: Clone + Send + Sync + 'static {
    /// The options as `(name, value)` pairs, in PyTorch's order.
    fn to_map(&self) -> BTreeMap<String, Hyper>;
    /// Read back options written by [`GroupOptions::to_map`].
    fn from_map(map: &BTreeMap<String, Hyper>) -> Result<Self>;
    /// The learning rate (`group["lr"]`).
    fn lr(&self) -> f64;
    /// Set the learning rate (schedulers do).
    fn set_lr(&mut self, lr: f64);
    /// The momentum OneCycleLR cycles (`momentum`, or Adam's `betas[0]`);
    /// `None` for algorithms without one.
    fn momentum(&self) -> Option<f64>;
    /// Set that momentum (only called when [`GroupOptions::momentum`] is `Some`).
    fn set_momentum(&mut self, momentum: f64);
}

/// Parameters optimised with one set of options (`{'params': [...], 'lr': ...}`).
#[derive(Clone)]
pub struct ParamGroup<O> {
    /// The parameters.
    pub params: Vec<Parameter>,
    /// Their options.
    pub options: O,
}

/// One optimisation algorithm: its options, its per-parameter state and
/// its update. [`Optim`] does the bookkeeping around it.
pub trait Algorithm: Send + Sync + 'static {
    /// Per-group options.
    type Options: GroupOptions;
    /// Per-parameter state (`optimizer.state[p]`).
    type State: ParamState;
    /// The class name (`Adam`), for errors.
    const NAME: &'static str;
    /// Check options when the optimizer is made (PyTorch's ValueErrors).
    fn validate(options: &Self::Options) -> Result<()>;
    /// State for a parameter seen for the first time.
    fn init_state(param: &Tensor, options: &Self::Options) -> Result<Self::State>;
    /// One update of `param` from `grad`.
    fn update(
        param: &Tensor,
        grad: &Tensor,
        state: &mut Self::State,
        options: &Self::Options,
    ) -> Result<()>;
}

/// Per-parameter state, convertible to PyTorch's `state[i]` dict.
pub trait ParamState: Send + Sync + Sized + 'static {
    /// The state's tensors by PyTorch key (`step`, `exp_avg`, ...).
    fn to_map(&self) -> Result<BTreeMap<String, Tensor>>;
    /// Rebuild from a saved map for `param`.
    fn from_map(map: &BTreeMap<String, Tensor>, param: &Tensor) -> Result<Self>;
}

/// `optimizer.state_dict()`: per-parameter state by flat parameter index
/// and each group's options with the indices of its parameters.
#[derive(Clone, Default)]
pub struct OptimizerStateDict {
    /// `state`: index → key → tensor.
    pub state: BTreeMap<usize, BTreeMap<String, Tensor>>,
    /// `param_groups`: options and parameter indices.
    pub param_groups: Vec<(BTreeMap<String, Hyper>, Vec<usize>)>,
}

/// What schedulers and training loops need from any optimizer.
pub trait Optimizer: Send {
    /// Apply one update to every parameter that has a gradient (`step()`).
    fn step(&mut self) -> Result<()>;
    /// Clear every gradient (`zero_grad()`, `set_to_none=True`).
    fn zero_grad(&self);
    /// Number of parameter groups.
    fn num_groups(&self) -> usize;
    /// The learning rate of group `i`.
    fn lr(&self, group: usize) -> f64;
    /// Set the learning rate of group `i`.
    fn set_lr(&mut self, group: usize, lr: f64);
    /// The momentum (or beta1) of group `i`, if the algorithm has one.
    fn momentum(&self, group: usize) -> Option<f64>;
    /// Set the momentum (or beta1) of group `i`.
    fn set_momentum(&mut self, group: usize, momentum: f64);
    /// `state_dict()`.
    fn state_dict(&self) -> Result<OptimizerStateDict>;
    /// `load_state_dict(state_dict)`.
    fn load_state_dict(&mut self, state_dict: &OptimizerStateDict) -> Result<()>;
}

/// An optimizer running algorithm `A` over parameter groups; `SGD`,
/// `Adam`, ... are its instances.
pub struct Optim<A: Algorithm> {
    groups: Vec<ParamGroup<A::Options>>,
    state: Vec<Vec<Option<A::State>>>,
}

impl<A: Algorithm> Optim<A> {
    /// An optimizer of `params` with `options` (`Adam(params, lr=...)`).
    pub fn new(params: Vec<Parameter>, options: A::Options) -> Result<Self> {
        Self::with_groups(vec![ParamGroup { params, options }])
    }

    /// An optimizer of several groups with their own options.
    pub fn with_groups(groups: Vec<ParamGroup<A::Options>>) -> Result<Self> {
        let mut opt = Optim {
            groups: Vec::new(),
            state: Vec::new(),
        };
        for g in groups {
            opt.add_param_group(g)?;
        }
        Ok(opt)
    }

    /// Add a group (`add_param_group`). A parameter may be in one group only.
    pub fn add_param_group(&mut self, group: ParamGroup<A::Options>) -> Result<()> {
        A::validate(&group.options)?;
        // PyTorch warns about (and then steps twice) a parameter repeated
        // within a group; here it is an error, as PyTorch plans.
        for (i, p) in group.params.iter().enumerate() {
            ensure!(
                !group.params[..i].iter().any(|q| q.ptr_eq(p)),
                Value,
                "optimizer contains a parameter group with duplicate parameters"
            );
            ensure!(
                !self
                    .groups
                    .iter()
                    .flat_map(|g| &g.params)
                    .any(|q| q.ptr_eq(p)),
                Value,
                "some parameters appear in more than one parameter group"
            );
        }
        self.state.push(group.params.iter().map(|_| None).collect());
        self.groups.push(group);
        Ok(())
    }

    /// The groups (`param_groups`).
    pub fn param_groups(&self) -> &[ParamGroup<A::Options>] {
        &self.groups
    }

    /// Mutable groups, to change options between steps.
    pub fn param_groups_mut(&mut self) -> &mut [ParamGroup<A::Options>] {
        &mut self.groups
    }

    /// The state of parameter `index` of group `group`, once it has one.
    pub fn state(&self, group: usize, index: usize) -> Option<&A::State> {
        self.state.get(group)?.get(index)?.as_ref()
    }
}

impl<A: Algorithm> Optimizer for Optim<A> {
    fn step(&mut self) -> Result<()> {
        let _g = ferrotorch_core::autograd::no_grad();
        for (group, states) in self.groups.iter().zip(&mut self.state) {
            for (p, slot) in group.params.iter().zip(states.iter_mut()) {
                let Some(grad) = p.grad() else { continue };
                let param = p.tensor();
                ensure!(
                    grad.shape() == param.shape(),
                    Runtime,
                    "{}.step: gradient of shape {:?} for a parameter of shape {:?}",
                    A::NAME,
                    grad.shape(),
                    param.shape()
                );
                if slot.is_none() {
                    *slot = Some(A::init_state(&param, &group.options)?);
                }
                let state = slot.as_mut().expect("state initialised above");
                A::update(&param, &grad.contiguous()?, state, &group.options)?;
            }
        }
        Ok(())
    }

    fn zero_grad(&self) {
        for p in self.groups.iter().flat_map(|g| &g.params) {
            let _ = p.set_grad(None);
        }
    }

    fn num_groups(&self) -> usize {
        self.groups.len()
    }

    fn lr(&self, group: usize) -> f64 {
        self.groups[group].options.lr()
    }

    fn set_lr(&mut self, group: usize, lr: f64) {
        self.groups[group].options.set_lr(lr)
    }

    fn momentum(&self, group: usize) -> Option<f64> {
        self.groups[group].options.momentum()
    }

    fn set_momentum(&mut self, group: usize, momentum: f64) {
        self.groups[group].options.set_momentum(momentum)
    }

    fn state_dict(&self) -> Result<OptimizerStateDict> {
        let mut sd = OptimizerStateDict::default();
        let mut index = 0;
        for (group, states) in self.groups.iter().zip(&self.state) {
            let mut ids = Vec::new();
            for s in states {
                if let Some(s) = s {
                    sd.state.insert(index, s.to_map()?);
                }
                ids.push(index);
                index += 1;
            }
            sd.param_groups.push((group.options.to_map(), ids));
        }
        Ok(sd)
    }

    fn load_state_dict(&mut self, sd: &OptimizerStateDict) -> Result<()> {
        ensure!(
            sd.param_groups.len() == self.groups.len(),
            Value,
            "loaded state dict has a different number of parameter groups"
        );
        for ((_, ids), g) in sd.param_groups.iter().zip(&self.groups) {
            ensure!(
                ids.len() == g.params.len(),
                Value,
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            );
        }
        let mut options = Vec::new();
        let mut state = Vec::new();
        for ((map, ids), g) in sd.param_groups.iter().zip(&self.groups) {
            let o = A::Options::from_map(map)?;
            A::validate(&o)?;
            options.push(o);
            let mut per = Vec::new();
            for (id, p) in ids.iter().zip(&g.params) {
                per.push(match sd.state.get(id) {
                    Some(m) => Some(A::State::from_map(m, &p.tensor())?),
                    None => None,
                });
            }
            state.push(per);
        }
        for (g, o) in self.groups.iter_mut().zip(options) {
            g.options = o;
        }
        self.state = state;
        Ok(())
    }
}

/// Read a state tensor saved under `key`, checking it matches `param`.
pub(crate) fn saved(map: &BTreeMap<String, Tensor>, key: &str, param: &Tensor) -> Result<Tensor> {
    let Some(t) = map.get(key) else {
        bail!(Key, "optimizer state: missing '{key}'");
    };
    ensure!(
        t.shape() == param.shape(),
        Runtime,
        "optimizer state '{key}' has shape {:?} but its parameter has shape {:?}",
        t.shape(),
        param.shape()
    );
    t.to_dtype(param.dtype())?.contiguous()?.deep_clone()
}

/// Read the saved `step` count.
pub(crate) fn saved_step(map: &BTreeMap<String, Tensor>) -> Result<f64> {
    match map.get("step") {
        Some(t) => t.item_f64(),
        None => bail!(Key, "optimizer state: missing 'step'"),
    }
}

/// The `step` entry, a float32 scalar as PyTorch stores it.
pub(crate) fn step_tensor(step: f64) -> Result<Tensor> {
    Tensor::full(&[], step, ferrotorch_core::DType::F32)
}

/// Check `0 <= value` (or a custom test) as PyTorch's constructors do.
pub(crate) fn check(ok: bool, what: &str, value: impl std::fmt::Display) -> Result<()> {
    ensure!(ok, Value, "Invalid {what}: {value}");
    Ok(())
}
