//! `torch.nn.init`: in-place initialisers, run without recording
//! gradients, drawing from the same random streams as PyTorch (so a seeded
//! model starts from PyTorch's numbers).

use ferrotorch_core::autograd::no_grad;
use ferrotorch_core::native::random::Generator;
use ferrotorch_core::native::{special, where_};
use ferrotorch_core::{bail, ensure, Result, Tensor};

/// The recommended gain for a nonlinearity (`calculate_gain`): `param` is
/// leaky_relu's negative slope (default 0.01).
pub fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 0.75,
        _ => bail!(Value, "Unsupported nonlinearity {nonlinearity}"),
    })
}

/// `(fan_in, fan_out)` of a weight (`_calculate_fan_in_and_fan_out`):
/// dims 1 and 0 times the receptive field.
pub fn calculate_fan_in_and_fan_out(tensor: &Tensor) -> Result<(usize, usize)> {
    ensure!(
        tensor.dim() >= 2,
        Value,
        "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    );
    let receptive: usize = tensor.shape()[2..].iter().product();
    Ok((tensor.shape()[1] * receptive, tensor.shape()[0] * receptive))
}

fn fan(tensor: &Tensor, mode: &str) -> Result<usize> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(tensor)?;
    match mode {
        "fan_in" => Ok(fan_in),
        "fan_out" => Ok(fan_out),
        _ => bail!(
            Value,
            "Mode {mode} not supported, please use one of fan_in, fan_out"
        ),
    }
}

/// Fill with U(a, b) (`uniform_`).
pub fn uniform_(tensor: &Tensor, a: f64, b: f64, generator: Option<&Generator>) -> Result<()> {
    let _g = no_grad();
    tensor.detach().uniform_(a, b, generator)
}

/// Fill with N(mean, std²) (`normal_`).
pub fn normal_(tensor: &Tensor, mean: f64, std: f64, generator: Option<&Generator>) -> Result<()> {
    let _g = no_grad();
    tensor.detach().normal_(mean, std, generator)
}

/// Fill with `val` (`constant_`).
pub fn constant_(tensor: &Tensor, val: f64) -> Result<()> {
    let _g = no_grad();
    tensor.detach().fill_(val)
}

/// Fill with zeros (`zeros_`).
pub fn zeros_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 0.0)
}

/// Fill with ones (`ones_`).
pub fn ones_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 1.0)
}

/// The identity matrix, for 2-D tensors (`eye_`).
pub fn eye_(tensor: &Tensor) -> Result<()> {
    ensure!(
        tensor.dim() == 2,
        Value,
        "Only tensors with 2 dimensions are supported"
    );
    let (n, m) = (tensor.shape()[0], tensor.shape()[1]);
    let _g = no_grad();
    tensor
        .detach()
        .copy_(&Tensor::eye(n, Some(m), tensor.dtype())?)
}

/// Glorot uniform: U(-a, a), `a = gain √(6 / (fan_in + fan_out))`
/// (`xavier_uniform_`).
pub fn xavier_uniform_(tensor: &Tensor, gain: f64, generator: Option<&Generator>) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(tensor)?;
    let std = gain * (2.0 / (fan_in + fan_out) as f64).sqrt();
    let a = 3f64.sqrt() * std;
    uniform_(tensor, -a, a, generator)
}

/// Glorot normal: N(0, std²), `std = gain √(2 / (fan_in + fan_out))`
/// (`xavier_normal_`).
pub fn xavier_normal_(tensor: &Tensor, gain: f64, generator: Option<&Generator>) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(tensor)?;
    let std = gain * (2.0 / (fan_in + fan_out) as f64).sqrt();
    normal_(tensor, 0.0, std, generator)
}

fn kaiming_std(tensor: &Tensor, a: f64, mode: &str, nonlinearity: &str) -> Result<f64> {
    let fan = fan(tensor, mode)?;
    Ok(calculate_gain(nonlinearity, Some(a))? / (fan as f64).sqrt())
}

/// He uniform: U(-b, b), `b = gain √(3 / fan)` (`kaiming_uniform_(a, mode,
/// nonlinearity)`; PyTorch's defaults are `0, "fan_in", "leaky_relu"`).
/// Zero-element tensors are left alone, as in PyTorch.
pub fn kaiming_uniform_(
    tensor: &Tensor,
    a: f64,
    mode: &str,
    nonlinearity: &str,
    generator: Option<&Generator>,
) -> Result<()> {
    if tensor.numel() == 0 {
        return Ok(());
    }
    let bound = 3f64.sqrt() * kaiming_std(tensor, a, mode, nonlinearity)?;
    uniform_(tensor, -bound, bound, generator)
}

/// He normal: N(0, (gain / √fan)²) (`kaiming_normal_`).
pub fn kaiming_normal_(
    tensor: &Tensor,
    a: f64,
    mode: &str,
    nonlinearity: &str,
    generator: Option<&Generator>,
) -> Result<()> {
    if tensor.numel() == 0 {
        return Ok(());
    }
    let std = kaiming_std(tensor, a, mode, nonlinearity)?;
    normal_(tensor, 0.0, std, generator)
}

/// N(mean, std²) truncated to [a, b] (`trunc_normal_(mean=0, std=1,
/// a=-2, b=2)`), by PyTorch 2.15's rejection sampling and random stream:
/// redraw normals outside [a, b] when most mass is inside, otherwise
/// uniform proposals accepted against the density.
pub fn trunc_normal_(
    tensor: &Tensor,
    mean: f64,
    std: f64,
    a: f64,
    b: f64,
    generator: Option<&Generator>,
) -> Result<()> {
    let norm_cdf = |x: f64| (1.0 + special::erf(x / 2f64.sqrt())) / 2.0;
    let p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std);
    let _g = no_grad();
    let t = tensor.detach();
    let any = |m: &Tensor| -> Result<bool> { Ok(m.any()?.item_f64()? != 0.0) };
    if p > 0.3 {
        // Bounds rounded to the tensor's dtype, so the test agrees with
        // the stored values.
        let bound = |v: f64| Tensor::full(&[], v, t.dtype())?.item_f64();
        let (lo, hi) = (bound(a)?, bound(b)?);
        t.normal_(mean, std, generator)?;
        let mut result = t.clone();
        loop {
            let mask = result.lt(lo)?.logical_or(&result.gt(hi)?)?;
            if !any(&mask)? {
                break;
            }
            let fresh = t.empty_like()?;
            fresh.normal_(mean, std, generator)?;
            result = where_(&mask, &fresh, &result)?;
        }
        if !result.is_same(&t) {
            t.copy_(&result)?;
        }
        return Ok(());
    }
    let mode = mean.clamp(a, b);
    let log_peak = -0.5 * ((mode - mean) / std).powi(2);
    let log_pdf = |c: &Tensor| c.sub(mean)?.div(std)?.pow(2.0)?.mul(-0.5)?.sub(log_peak);
    let accept_buf = t.empty_like()?;
    let accept = |c: &Tensor| -> Result<Tensor> {
        accept_buf.uniform_(0.0, 1.0, generator)?;
        accept_buf.log()?.gt(c)
    };
    t.uniform_(a, b, generator)?;
    let mut pending = accept(&log_pdf(&t)?)?;
    if !any(&pending)? {
        return Ok(());
    }
    let mut result = t.clone();
    let candidates = t.empty_like()?;
    loop {
        candidates.uniform_(a, b, generator)?;
        result = where_(&pending, &candidates, &result)?;
        let rejected = accept(&log_pdf(&candidates)?)?;
        pending = where_(&pending, &rejected, &pending)?;
        if !any(&pending)? {
            break;
        }
    }
    t.copy_(&result)
}

/// A (semi-)orthogonal matrix times `gain` (`orthogonal_`): QR of a
/// normal sample with R's diagonal made positive, as PyTorch does.
pub fn orthogonal_(tensor: &Tensor, gain: f64, generator: Option<&Generator>) -> Result<()> {
    ensure!(
        tensor.dim() >= 2,
        Value,
        "Only tensors with 2 or more dimensions are supported"
    );
    if tensor.numel() == 0 {
        return Ok(());
    }
    let rows = tensor.shape()[0];
    let cols = tensor.numel() / rows;
    let flat = Tensor::empty(&[rows, cols], tensor.dtype())?;
    flat.normal_(0.0, 1.0, generator)?;
    let mut a = flat
        .to_dtype(ferrotorch_core::DType::F64)?
        .to_vec::<f64>()?;
    let (m, n) = if rows < cols {
        a = transpose(&a, rows, cols);
        (cols, rows)
    } else {
        (rows, cols)
    };
    let mut q = householder_q(&a, m, n);
    if rows < cols {
        q = transpose(&q, m, n);
    }
    let shape: Vec<i64> = tensor.shape().iter().map(|&s| s as i64).collect();
    let q = Tensor::from_slice(&q)
        .reshape(&shape)?
        .mul(gain)?
        .to_dtype(tensor.dtype())?;
    let _g = no_grad();
    tensor.detach().copy_(&q)
}

fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    (0..c)
        .flat_map(|j| (0..r).map(move |i| a[i * c + j]))
        .collect()
}

/// The `m × n` (m ≥ n) Q of `a = QR` with R's diagonal positive.
fn householder_q(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut r = a.to_vec();
    let mut vs: Vec<Vec<f64>> = Vec::with_capacity(n);
    for k in 0..n {
        let mut v: Vec<f64> = (k..m).map(|i| r[i * n + k]).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let alpha = if v[0] > 0.0 { -norm } else { norm };
        v[0] -= alpha;
        let vn = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if vn > 0.0 {
            v.iter_mut().for_each(|x| *x /= vn);
        }
        for j in 0..n {
            let d: f64 = (k..m).map(|i| v[i - k] * r[i * n + j]).sum();
            (k..m).for_each(|i| r[i * n + j] -= 2.0 * v[i - k] * d);
        }
        vs.push(v);
    }
    // Q = H_0 ... H_{n-1} applied to the first n columns of I.
    let mut q: Vec<f64> = (0..m * n)
        .map(|idx| f64::from(u8::from(idx / n == idx % n)))
        .collect();
    for k in (0..n).rev() {
        let v = &vs[k];
        for j in 0..n {
            let d: f64 = (k..m).map(|i| v[i - k] * q[i * n + j]).sum();
            (k..m).for_each(|i| q[i * n + j] -= 2.0 * v[i - k] * d);
        }
    }
    // Make R's diagonal positive: flip the matching columns of Q.
    for j in 0..n {
        if r[j * n + j] < 0.0 {
            (0..m).for_each(|i| q[i * n + j] = -q[i * n + j]);
        }
    }
    q
}
