//! Random numbers: PyTorch's CPU generator, reproduced stream for stream.
//!
//! # Note [PyTorch-compatible random streams]
//! The default generator is a 32-bit Mersenne Twister (mt19937) seeded the
//! way `torch.manual_seed` seeds it, and the float transforms are
//! PyTorch's: `rand` keeps the low 24 (f32) or 53 (f64) bits of a draw,
//! `randn` fills uniforms and applies Box–Muller in blocks of 16 (single
//! draws below 16 elements), `randint` is `draw % range + low`, `randperm`
//! is the same Fisher–Yates walk. So `manual_seed(0); rand(&[3])` gives the
//! numbers PyTorch gives (normal values to within an ulp or so, since
//! PyTorch's vectorised log/sin/cos round differently). `bernoulli` and
//! `multinomial` use this generator too but not PyTorch's MKL paths, so
//! their streams differ from PyTorch's.

use crate::dispatch::Registry;
use crate::dtype::{get_default_dtype, DType, Element};
use crate::error::Result;
use crate::tensor::{Tensor, TensorOptions};
use ferrotorch_kernels::sync::ForkLock;
use std::sync::{Arc, OnceLock};

mod samplers;
mod state;

const N: usize = 624;
const M: usize = 397;

/// The Mersenne Twister state behind a [`Generator`]: `index` is the
/// next word of `state` to temper (`N`: twist first), `fresh` whether no
/// word was drawn since seeding (torch's state then reads `next = 0`;
/// `state.rs`).
#[derive(Clone)]
struct Mt19937 {
    state: [u32; N],
    index: usize,
    fresh: bool,
    seed: u64,
    next_normal: Option<f64>,
}

impl Mt19937 {
    fn new(seed: u64) -> Mt19937 {
        let mut state = [0u32; N];
        state[0] = seed as u32;
        for j in 1..N {
            state[j] = 1_812_433_253u32
                .wrapping_mul(state[j - 1] ^ (state[j - 1] >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 {
            state,
            index: N,
            fresh: true,
            seed,
            next_normal: None,
        }
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % N] & 0x7fff_ffff);
            let mut v = self.state[(i + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    fn next_u32(&mut self) -> u32 {
        self.fresh = false;
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn next_u64(&mut self) -> u64 {
        let hi = self.next_u32() as u64;
        let lo = self.next_u32() as u64;
        (hi << 32) | lo
    }

    /// Uniform in [0, 1) with PyTorch's bit recipe for `dtype`.
    fn uniform(&mut self, dtype: DType) -> f64 {
        match dtype {
            DType::F64 => (self.next_u64() & ((1u64 << 53) - 1)) as f64 / (1u64 << 53) as f64,
            DType::F16 => (self.next_u32() & ((1 << 11) - 1)) as f64 / (1u32 << 11) as f64,
            DType::BF16 => (self.next_u32() & ((1 << 8) - 1)) as f64 / (1u32 << 8) as f64,
            _ => (self.next_u32() & ((1 << 24) - 1)) as f64 / (1u32 << 24) as f64,
        }
    }

    /// One standard normal via Box–Muller on two f64 uniforms, caching the
    /// second value as PyTorch's `normal_distribution<double>` does.
    fn normal(&mut self) -> f64 {
        if let Some(v) = self.next_normal.take() {
            return v;
        }
        let u1 = self.uniform(DType::F64);
        let u2 = self.uniform(DType::F64);
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_normal = Some(r * theta.sin());
        r * theta.cos()
    }
}

/// A random number generator (`torch.Generator`). Cloning shares it.
#[derive(Clone)]
pub struct Generator(Arc<ForkLock<Mt19937>>);

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator(Arc::new(ForkLock::new(Mt19937::new(seed))))
    }

    /// Reseed (`g.manual_seed(seed)`).
    pub fn manual_seed(&self, seed: u64) {
        *self.0.lock() = Mt19937::new(seed);
    }

    /// The seed last set (`g.initial_seed()`).
    pub fn initial_seed(&self) -> u64 {
        self.0.lock().seed
    }

    /// A raw 32-bit draw.
    pub fn next_u32(&self) -> u32 {
        self.0.lock().next_u32()
    }

    /// A raw 64-bit draw.
    pub fn next_u64(&self) -> u64 {
        self.0.lock().next_u64()
    }

    /// Snapshot of the state (`g.get_state()`), restorable with [`Generator::set_state`].
    pub fn get_state(&self) -> Generator {
        Generator(Arc::new(ForkLock::new(self.0.lock().clone())))
    }

    /// Restore a snapshot taken with [`Generator::get_state`].
    pub fn set_state(&self, snapshot: &Generator) {
        let s = snapshot.0.lock().clone();
        *self.0.lock() = s;
    }
}

/// The process-wide default generator (seed 67280421310721 like PyTorch's
/// default until `manual_seed` is called).
pub fn default_generator() -> &'static Generator {
    static G: OnceLock<Generator> = OnceLock::new();
    G.get_or_init(|| Generator::new(67_280_421_310_721))
}

/// Hold the default generator's lock across a `fork()` (Note [Fork
/// safety]).
#[cfg(unix)]
pub(crate) fn fork_lock() {
    default_generator().0.fork_hold();
}

/// Release what [`fork_lock`] held, in the parent or the child.
#[cfg(unix)]
pub(crate) fn fork_unlock() {
    // SAFETY: held by fork_lock on this thread.
    unsafe { default_generator().0.fork_release() };
}

/// Seed the default generator (`torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    default_generator().manual_seed(seed);
}

fn gen(g: Option<&Generator>) -> &Generator {
    g.unwrap_or_else(|| default_generator())
}

/// Write `f(i)` for each element index of a contiguous float tensor, in order.
fn fill_with<T: Element>(t: &Tensor, mut f: impl FnMut() -> f64) {
    let _g = crate::storage::lock_storages(&[], &[t.storage()]);
    let p = t.data_ptr() as *mut T;
    for i in 0..t.numel() {
        // SAFETY: t is a fresh contiguous tensor of numel elements.
        unsafe { *p.add(i) = T::from_f64(f()) };
    }
}

fn float_dtype(op: &str, opts: TensorOptions) -> Result<DType> {
    let d = opts.dtype.unwrap_or_else(get_default_dtype);
    crate::ensure!(
        d.is_floating_point() || d.is_complex(),
        NotImplemented,
        "\"{op}\" not implemented for '{}'",
        d.name_title()
    );
    Ok(d)
}

impl Tensor {
    /// Fill in place with U(from, to) (`t.uniform_(from, to)`).
    pub fn uniform_(&self, from: f64, to: f64, generator: Option<&Generator>) -> Result<()> {
        crate::enter_op_inplace!("uniform_", self, from, to, generator.cloned());
        self.storage().check_writable("uniform_")?;
        if self.is_complex() {
            // torch: both parts U(from, to)
            return self.view_as_real()?.uniform_(from, to, generator);
        }
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "uniform_: \"check_uniform_bounds\" not implemented for '{}'",
            self.dtype().name_title()
        );
        crate::ensure!(
            from <= to,
            Runtime,
            "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
        );
        let t = self.contiguous()?;
        {
            let mut g = gen(generator).0.lock();
            let dt = self.dtype();
            crate::dispatch_dtype!(dt, T => fill_with::<T>(&t, || g.uniform(dt) * (to - from) + from));
        }
        if !t.is_same(self) {
            self.copy_(&t)?;
        } else {
            self.storage().bump_version();
        }
        Ok(())
    }

    /// Fill in place with N(mean, std²) (`t.normal_(mean, std)`).
    pub fn normal_(&self, mean: f64, std: f64, generator: Option<&Generator>) -> Result<()> {
        crate::enter_op_inplace!("normal_", self, mean, std, generator.cloned());
        self.storage().check_writable("normal_")?;
        crate::ensure!(
            std >= 0.0,
            Runtime,
            "normal expects std >= 0.0, but found std {std}"
        );
        if self.is_complex() {
            // torch: both parts N(mean, std²/2), so E|z - mean|² = std²
            return self
                .view_as_real()?
                .normal_(mean, std / std::f64::consts::SQRT_2, generator);
        }
        crate::ensure!(
            self.is_floating_point(),
            NotImplemented,
            "normal_: \"normal_kernel_cpu\" not implemented for '{}'",
            self.dtype().name_title()
        );
        let t = self.contiguous()?;
        let n = t.numel();
        let dt = self.dtype();
        {
            let mut g = gen(generator).0.lock();
            if n >= 16 {
                // PyTorch's normal_fill: uniforms first, then Box-Muller per 16.
                let mut u: Vec<f64> = (0..n).map(|_| g.uniform(dt)).collect();
                let block = |d: &mut [f64]| {
                    for j in 0..8 {
                        let u1 = 1.0 - d[j];
                        let u2 = d[j + 8];
                        let r = (-2.0 * u1.ln()).sqrt();
                        let th = 2.0 * std::f64::consts::PI * u2;
                        d[j] = r * th.cos() * std + mean;
                        d[j + 8] = r * th.sin() * std + mean;
                    }
                };
                let full = n - n % 16;
                for i in (0..full).step_by(16) {
                    block(&mut u[i..i + 16]);
                }
                if n % 16 != 0 {
                    for v in u[n - 16..].iter_mut() {
                        *v = g.uniform(dt);
                    }
                    block(&mut u[n - 16..]);
                }
                let mut it = u.into_iter();
                crate::dispatch_dtype!(dt, T => fill_with::<T>(&t, || it.next().unwrap_or(0.0)));
            } else {
                crate::dispatch_dtype!(dt, T => fill_with::<T>(&t, || g.normal() * std + mean));
            }
        }
        if !t.is_same(self) {
            self.copy_(&t)?;
        } else {
            self.storage().bump_version();
        }
        Ok(())
    }

    /// U[0, 1) samples (`torch.rand`).
    pub fn rand(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
        Tensor::rand_with(shape, opts, None)
    }

    /// `torch.rand` with an explicit generator.
    pub fn rand_with(
        shape: &[usize],
        opts: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let opts = opts.into();
        if generator.is_none() {
            // traced as the op (the JIT records random ops, not their values)
            // every argument in schema order: generator, dtype, layout,
            // device, pin_memory
            crate::enter_op!(
                "rand",
                shape,
                crate::dispatch::IValue::None,
                opts.dtype,
                crate::dispatch::IValue::None,
                crate::dispatch::IValue::None,
                crate::dispatch::IValue::None
            );
        }
        let t = Tensor::empty(shape, float_dtype("check_uniform_bounds", opts)?)?;
        t.uniform_(0.0, 1.0, generator)?;
        Ok(t)
    }

    /// N(0, 1) samples (`torch.randn`).
    pub fn randn(shape: &[usize], opts: impl Into<TensorOptions>) -> Result<Tensor> {
        Tensor::randn_with(shape, opts, None)
    }

    /// `torch.randn` with an explicit generator.
    pub fn randn_with(
        shape: &[usize],
        opts: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        let opts = opts.into();
        if generator.is_none() {
            // every argument in schema order: generator, dtype, layout,
            // device, pin_memory
            crate::enter_op!(
                "randn",
                shape,
                crate::dispatch::IValue::None,
                opts.dtype,
                crate::dispatch::IValue::None,
                crate::dispatch::IValue::None,
                crate::dispatch::IValue::None
            );
        }
        let t = Tensor::empty(shape, float_dtype("normal_kernel_cpu", opts)?)?;
        t.normal_(0.0, 1.0, generator)?;
        Ok(t)
    }

    /// Integers uniform in `[low, high)` (`torch.randint`, int64 by default).
    pub fn randint(
        low: i64,
        high: i64,
        shape: &[usize],
        opts: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        Tensor::randint_with(low, high, shape, opts, None)
    }

    /// `torch.randint` with an explicit generator.
    pub fn randint_with(
        low: i64,
        high: i64,
        shape: &[usize],
        opts: impl Into<TensorOptions>,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        crate::ensure!(
            low < high,
            Runtime,
            "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        );
        let dt = opts.into().dtype.unwrap_or(DType::I64);
        let range = (high as i128 - low as i128) as u64;
        let t = Tensor::empty(shape, dt)?;
        let mut g = gen(generator).0.lock();
        crate::dispatch_dtype!(dt, T => fill_with::<T>(&t, || {
            let v = if range >= 1 << 32 { g.next_u64() } else { g.next_u32() as u64 };
            ((v % range) as i64).wrapping_add(low) as f64
        }));
        Ok(t)
    }

    /// A random permutation of `0..n` (`torch.randperm`, int64).
    pub fn randperm(n: usize, generator: Option<&Generator>) -> Result<Tensor> {
        let mut v: Vec<i64> = crate::storage::try_vec(n)?;
        v.extend(0..n as i64);
        let mut g = gen(generator).0.lock();
        for i in 0..n.saturating_sub(1) {
            let z = if n < (u32::MAX / 20) as usize {
                g.next_u32() as usize % (n - i)
            } else {
                (g.next_u64() % (n - i) as u64) as usize
            };
            v.swap(i, z + i);
        }
        Tensor::from_vec(v, &[n])
    }

    /// 1 with probability `self[i]`, else 0 (`torch.bernoulli(p)`), same dtype.
    pub fn bernoulli(&self, generator: Option<&Generator>) -> Result<Tensor> {
        let p = self.to_vec_f64()?;
        crate::ensure!(
            p.iter().all(|&x| (0.0..=1.0).contains(&x)),
            Runtime,
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false."
        );
        // torch draws a float uniform for float probabilities and a double
        // one for double probabilities: same streams as torch's.
        let udt = if self.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let mut g = gen(generator).0.lock();
        let v: Vec<f64> = p
            .iter()
            .map(|&x| (g.uniform(udt) < x) as u8 as f64)
            .collect();
        drop(g);
        Tensor::from_vec(v, self.shape())?.to_dtype(self.dtype())
    }

    /// Fill in place with Bernoulli(p) draws (`t.bernoulli_(p)`).
    pub fn bernoulli_(&self, p: f64, generator: Option<&Generator>) -> Result<()> {
        crate::enter_op_inplace!("bernoulli_.float", self, p, generator.cloned());
        self.storage().check_writable("bernoulli_")?;
        crate::ensure!(
            (0.0..=1.0).contains(&p),
            Runtime,
            "bernoulli_ expects p to be in [0, 1], but got p={p}"
        );
        let probs = Tensor::full(self.shape(), p, DType::F64)?;
        self.copy_(&probs.bernoulli(generator)?)
    }

    /// Draw `num_samples` category indices per row from the (unnormalised)
    /// weights in `self` (`torch.multinomial`).
    pub fn multinomial(
        &self,
        num_samples: usize,
        replacement: bool,
        generator: Option<&Generator>,
    ) -> Result<Tensor> {
        crate::ensure!(
            self.dim() == 1 || self.dim() == 2,
            Runtime,
            "prob_dist must be 1 or 2 dim"
        );
        let rows2 = if self.dim() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let (m, k) = (rows2.shape()[0], rows2.shape()[1]);
        crate::ensure!(
            replacement || num_samples <= k,
            Runtime,
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        );
        crate::ensure!(
            k > 0,
            Runtime,
            "multinomial: cannot sample from a distribution with no categories"
        );
        let w = rows2.to_vec_f64()?;
        for row in w.chunks(k) {
            crate::ensure!(
                row.iter().all(|&x| x >= 0.0 && x.is_finite()),
                Runtime,
                "probability tensor contains either `inf`, `nan` or element < 0"
            );
            crate::ensure!(
                row.iter().sum::<f64>() > 0.0,
                Runtime,
                "invalid multinomial distribution (sum of probabilities <= 0)"
            );
            crate::ensure!(
                replacement || row.iter().filter(|&&x| x > 0.0).count() >= num_samples,
                Runtime,
                "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)"
            );
        }
        let total = m.checked_mul(num_samples).ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::Runtime,
                format!("multinomial: {m} rows of {num_samples} samples overflow"),
            )
        })?;
        let mut out = crate::storage::try_vec(total)?;
        let mut g = gen(generator).0.lock();
        if !replacement || num_samples == 1 {
            // PyTorch's Gumbel trick: the top `num_samples` of p / q with
            // q ~ Exp(1) (one draw per weight, row-major, from 53-bit
            // uniforms), which samples without replacement.
            let single = self.dtype() != DType::F64;
            let q: Vec<f64> = (0..m * k)
                .map(|_| {
                    let e = -(-g.uniform(DType::F64)).ln_1p();
                    if single {
                        e as f32 as f64
                    } else {
                        e
                    }
                })
                .collect();
            for (row, q) in w.chunks(k).zip(q.chunks(k)) {
                let mut keyed: Vec<(f64, usize)> = row
                    .iter()
                    .zip(q)
                    .enumerate()
                    .map(|(j, (&p, &e))| (p / e, j))
                    .collect();
                keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                out.extend(keyed[..num_samples].iter().map(|&(_, j)| j as i64));
            }
        } else {
            // With replacement: inverse-CDF draws from each row.
            for row in w.chunks(k) {
                let total: f64 = row.iter().sum();
                for _ in 0..num_samples {
                    let target = g.uniform(DType::F64) * total;
                    let mut acc = 0.0;
                    let mut pick = k - 1;
                    for (j, &x) in row.iter().enumerate() {
                        acc += x;
                        if target < acc && x > 0.0 {
                            pick = j;
                            break;
                        }
                    }
                    out.push(pick as i64);
                }
            }
        }
        drop(g);
        let t = Tensor::from_vec(out, &[m, num_samples])?;
        if self.dim() == 1 {
            t.squeeze_dims(&[0])
        } else {
            Ok(t)
        }
    }
}

pub(crate) fn register(r: &mut Registry) {
    samplers::register(r);
    type Gen = Option<Generator>;
    type Pin = Option<bool>;
    use crate::tensor::create_ops::{opts as create_opts, DeviceArg, Strided, OPTS};
    r.def_typed(
        &format!("rand(SymInt[] size, *, Generator? generator=None, {OPTS}) -> Tensor"),
        move |size: Vec<usize>, g: Gen, dt: Option<DType>, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::rand_with(&size, create_opts(dt, dev), g.as_ref())
        },
    );
    r.def_typed(
        &format!("randn(SymInt[] size, *, Generator? generator=None, {OPTS}) -> Tensor"),
        move |size: Vec<usize>, g: Gen, dt: Option<DType>, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::randn_with(&size, create_opts(dt, dev), g.as_ref())
        },
    );
    r.def_typed(
        &format!("randint.low(SymInt low, SymInt high, SymInt[] size, *, Generator? generator=None, {OPTS}) -> Tensor"),
        move |low: i64, high: i64, size: Vec<usize>, g: Gen, dt: Option<DType>, _: Strided, dev: DeviceArg, _: Pin| {
            Tensor::randint_with(low, high, &size, create_opts(dt, dev), g.as_ref())
        },
    );
    r.def_typed(
        &format!(
            "randint(SymInt high, SymInt[] size, *, Generator? generator=None, {OPTS}) -> Tensor"
        ),
        move |high: i64,
              size: Vec<usize>,
              g: Gen,
              dt: Option<DType>,
              _: Strided,
              dev: DeviceArg,
              _: Pin| {
            Tensor::randint_with(0, high, &size, create_opts(dt, dev), g.as_ref())
        },
    );
    r.def_typed(
        "randperm(SymInt n, *, Generator? generator=None, ScalarType? dtype=None) -> Tensor",
        |n: usize, g: Gen, dt: Option<DType>| {
            let t = Tensor::randperm(n, g.as_ref())?;
            match dt {
                Some(d) if d != DType::I64 => t.to_dtype(d),
                _ => Ok(t),
            }
        },
    );
    r.def_typed("manual_seed(int seed) -> ()", |seed: i64| {
        manual_seed(seed as u64);
        Ok(())
    });
    r.def_typed(
        "normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor(a!)",
        |x: Tensor, mean: f64, std: f64, g: Gen| x.normal_(mean, std, g.as_ref()).map(|()| x),
    );
    r.def_typed(
        "uniform_(Tensor(a!) self, float from=0, float to=1, *, Generator? generator=None) -> Tensor(a!)",
        |x: Tensor, from: f64, to: f64, g: Gen| x.uniform_(from, to, g.as_ref()).map(|()| x),
    );
    r.def_typed(
        "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
        |x: Tensor, g: Gen| x.bernoulli(g.as_ref()),
    );
    r.def_typed(
        "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
        |x: Tensor, p: f64, g: Gen| {
            let t = x.deep_clone()?;
            t.bernoulli_(p, g.as_ref()).map(|()| t)
        },
    );
    r.def_typed(
        "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
        |x: Tensor, p: f64, g: Gen| x.bernoulli_(p, g.as_ref()).map(|()| x),
    );
    r.def_typed(
        "multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor",
        |x: Tensor, n: usize, replacement: bool, g: Gen| x.multinomial(n, replacement, g.as_ref()),
    );
}
