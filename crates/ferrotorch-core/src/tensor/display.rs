//! Printing like PyTorch (`torch/_tensor_str.py`): `tensor([[1., 2.],
//! [3., 4.]])`, the same int/fixed/scientific mode choice, column widths,
//! line wrapping at 80 columns, summarisation with `...` past 1000
//! elements, and `dtype=` shown when it is not a default dtype.

use super::Tensor;
use crate::dtype::{get_default_dtype, DType};
use parking_lot::RwLock;
use std::fmt;

/// `torch.set_printoptions` settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintOptions {
    /// Digits after the decimal point.
    pub precision: usize,
    /// Element count above which output is summarised.
    pub threshold: usize,
    /// Items shown at each end of a summarised dimension.
    pub edgeitems: usize,
    /// Characters per line.
    pub linewidth: usize,
    /// Force (`Some(true)`) or forbid scientific notation; `None` chooses.
    pub sci_mode: Option<bool>,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            precision: 4,
            threshold: 1000,
            edgeitems: 3,
            linewidth: 80,
            sci_mode: None,
        }
    }
}

static OPTS: RwLock<PrintOptions> = RwLock::new(PrintOptions {
    precision: 4,
    threshold: 1000,
    edgeitems: 3,
    linewidth: 80,
    sci_mode: None,
});

/// Change how tensors print (`torch.set_printoptions`).
pub fn set_printoptions(opts: PrintOptions) {
    *OPTS.write() = opts;
}

/// Current print options.
pub fn get_printoptions() -> PrintOptions {
    *OPTS.read()
}

#[derive(Clone, Copy)]
enum Kind {
    Float,
    Int,
    Bool,
}

struct Formatter {
    kind: Kind,
    int_mode: bool,
    sci: bool,
    width: usize,
    precision: usize,
}

/// Python's `{:.Ne}`: mantissa, `e`, sign, at least two exponent digits.
fn py_sci(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return py_special(v);
    }
    let s = format!("{v:.p$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn py_special(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

fn py_fixed(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return py_special(v);
    }
    format!("{v:.p$}")
}

impl Formatter {
    fn new(kind: Kind, vals: &[f64], opts: &PrintOptions) -> Formatter {
        let mut f = Formatter {
            kind,
            int_mode: true,
            sci: false,
            width: 1,
            precision: opts.precision,
        };
        match kind {
            Kind::Bool => {
                f.width = vals
                    .iter()
                    .map(|&v| if v != 0.0 { 4 } else { 5 })
                    .max()
                    .unwrap_or(1)
            }
            Kind::Int => {
                f.width = vals
                    .iter()
                    .map(|&v| format!("{}", v as i64).len())
                    .max()
                    .unwrap_or(1)
                    .max(1)
            }
            Kind::Float => {
                let nz: Vec<f64> = vals
                    .iter()
                    .copied()
                    .filter(|v| v.is_finite() && *v != 0.0)
                    .collect();
                if !nz.is_empty() {
                    let min = nz.iter().fold(f64::INFINITY, |a, v| a.min(v.abs()));
                    let max = nz.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                    f.int_mode = nz.iter().all(|v| *v == v.ceil());
                    let p = opts.precision;
                    if f.int_mode {
                        if max / min > 1000.0 || max > 1.0e8 {
                            f.sci = true;
                            f.width = nz.iter().map(|&v| py_sci(v, p).len()).max().unwrap_or(1);
                        } else {
                            f.width = nz
                                .iter()
                                .map(|&v| format!("{v:.0}").len() + 1)
                                .max()
                                .unwrap_or(1);
                        }
                    } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
                        f.sci = true;
                        f.width = nz.iter().map(|&v| py_sci(v, p).len()).max().unwrap_or(1);
                    } else {
                        f.width = nz.iter().map(|&v| py_fixed(v, p).len()).max().unwrap_or(1);
                    }
                }
                if let Some(s) = opts.sci_mode {
                    f.sci = s;
                }
            }
        }
        f
    }

    fn format(&self, v: f64) -> String {
        let s = match self.kind {
            Kind::Bool => (if v != 0.0 { "True" } else { "False" }).to_string(),
            Kind::Int => format!("{}", v as i64),
            Kind::Float => {
                if self.sci {
                    py_sci(v, self.precision)
                } else if self.int_mode {
                    if v.is_finite() {
                        format!("{v:.0}.")
                    } else {
                        py_special(v)
                    }
                } else {
                    py_fixed(v, self.precision)
                }
            }
        };
        format!("{}{s}", " ".repeat(self.width.saturating_sub(s.len())))
    }
}

/// Values of a row-major array with `shape`, reduced to the edge items of
/// every summarised dimension (`get_summarized_data`).
fn summarized<V: Copy>(vals: &[V], shape: &[usize], summarize: bool, edge: usize) -> Vec<V> {
    if shape.is_empty() {
        return vals.to_vec();
    }
    let inner: usize = shape[1..].iter().product();
    let rows: Vec<usize> = if summarize && shape[0] > 2 * edge {
        (0..edge).chain(shape[0] - edge..shape[0]).collect()
    } else {
        (0..shape[0]).collect()
    };
    rows.into_iter()
        .flat_map(|i| {
            summarized(
                &vals[i * inner..(i + 1) * inner],
                &shape[1..],
                summarize,
                edge,
            )
        })
        .collect()
}

/// The nested-list text of `vals` (row-major, `shape`), each element
/// written by `fmt` in a column `width` wide.
fn tensor_str<V: Copy>(
    vals: &[V],
    shape: &[usize],
    indent: usize,
    summarize: bool,
    fmt: &dyn Fn(V) -> String,
    width: usize,
    o: &PrintOptions,
) -> String {
    if shape.is_empty() {
        return fmt(vals[0]);
    }
    let n = shape[0];
    let inner: usize = shape[1..].iter().product();
    let edge = o.edgeitems;
    if shape.len() == 1 {
        let elem_len = width + 2;
        let per_line = ((o.linewidth.saturating_sub(indent)) / elem_len).max(1);
        let data: Vec<String> = if summarize && n > 2 * edge {
            let mut d: Vec<String> = vals[..edge].iter().map(|&v| fmt(v)).collect();
            d.push(" ...".into());
            d.extend(vals[n - edge..].iter().map(|&v| fmt(v)));
            d
        } else {
            vals.iter().map(|&v| fmt(v)).collect()
        };
        let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
        return format!(
            "[{}]",
            lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
        );
    }
    let sub = |i: usize| {
        tensor_str(
            &vals[i * inner..(i + 1) * inner],
            &shape[1..],
            indent + 1,
            summarize,
            fmt,
            width,
            o,
        )
    };
    let slices: Vec<String> = if summarize && n > 2 * edge {
        let mut s: Vec<String> = (0..edge).map(sub).collect();
        s.push("...".into());
        s.extend((n - edge..n).map(sub));
        s
    } else {
        (0..n).map(sub).collect()
    };
    let sep = format!(
        ",{}{}",
        "\n".repeat(shape.len() - 1),
        " ".repeat(indent + 1)
    );
    format!("[{}]", slices.join(&sep))
}

fn add_suffixes(s: String, suffixes: &[String], indent: usize, linewidth: usize) -> String {
    let mut out = s;
    let mut last = out.len() - out.rfind('\n').map_or(0, |p| p + 1) + 1;
    for suf in suffixes {
        if last + suf.len() + 2 > linewidth {
            out.push_str(&format!(",\n{}{suf}", " ".repeat(indent)));
            last = indent + suf.len();
        } else {
            out.push_str(&format!(", {suf}"));
            last += suf.len() + 2;
        }
    }
    out.push(')');
    out
}

/// A complex tensor's data as torch writes it: the real parts in one
/// column format, the imaginary parts in another, `1.+2.j`.
fn complex_str(t: &Tensor, indent: usize, o: &PrintOptions) -> String {
    let parts = t
        .detach()
        .real_view_raw()
        .to_dtype(DType::F64)
        .and_then(|r| r.to_vec::<f64>());
    let flat = match parts {
        Ok(v) => v,
        Err(e) => return format!("<unprintable: {e}>"),
    };
    let vals: Vec<(f64, f64)> = flat.chunks(2).map(|p| (p[0], p[1])).collect();
    let summarize = t.numel() > o.threshold;
    let shown = if summarize {
        summarized(&vals, t.shape(), true, o.edgeitems)
    } else {
        vals.clone()
    };
    let re: Vec<f64> = shown.iter().map(|v| v.0).collect();
    let im: Vec<f64> = shown.iter().map(|v| v.1).collect();
    let (f1, f2) = (
        Formatter::new(Kind::Float, &re, o),
        Formatter::new(Kind::Float, &im, o),
    );
    let fmt = |(a, b): (f64, f64)| {
        let real = f1.format(a);
        let imag = format!("{}j", f2.format(b));
        let imag = imag.trim_start();
        if imag.starts_with('+') || imag.starts_with('-') {
            format!("{real}{imag}")
        } else {
            format!("{real}+{imag}")
        }
    };
    tensor_str(
        &vals,
        t.shape(),
        indent,
        summarize,
        &fmt,
        f1.width + f2.width + 1,
        o,
    )
}

/// Suffixes after the data (`dtype=...`), plus any the caller adds
/// (autograd adds `requires_grad=True`, `grad_fn=<...>`).
pub(crate) fn render(t: &Tensor, extra: &[String]) -> String {
    // a conjugated view prints its values (Note [The conjugate bit])
    let resolved;
    let t = if t.is_conj() {
        resolved = t.resolve_conj().unwrap_or_else(|_| t.clone());
        &resolved
    } else {
        t
    };
    let o = get_printoptions();
    let prefix = "tensor(";
    let indent = prefix.len();
    let dt = t.dtype();
    let default_like = dt == get_default_dtype()
        || dt == crate::dtype::default_complex_dtype()
        || dt == DType::I64
        || dt == DType::Bool;
    let mut suffixes = Vec::new();
    let body = if t.numel() == 0 {
        if t.dim() != 1 {
            let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
            let tup = if dims.len() == 1 {
                format!("({},)", dims[0])
            } else {
                format!("({})", dims.join(", "))
            };
            suffixes.push(format!("size={tup}"));
        }
        if dt != get_default_dtype() {
            suffixes.push(format!("dtype={dt}"));
        }
        "[]".to_string()
    } else {
        if !default_like {
            suffixes.push(format!("dtype={dt}"));
        }
        if dt.is_complex() {
            return add_suffixes(
                format!("{prefix}{}", complex_str(t, indent, &o)),
                &[suffixes, extra.to_vec()].concat(),
                indent,
                o.linewidth,
            );
        }
        let vals = match t.to_vec_f64() {
            Ok(v) => v,
            Err(e) => return format!("tensor(<unprintable: {e}>)"),
        };
        let kind = if dt.is_floating_point() {
            Kind::Float
        } else if dt == DType::Bool {
            Kind::Bool
        } else {
            Kind::Int
        };
        let summarize = t.numel() > o.threshold;
        let fvals = if summarize {
            summarized(&vals, t.shape(), true, o.edgeitems)
        } else {
            vals.clone()
        };
        let f = Formatter::new(kind, &fvals, &o);
        tensor_str(
            &vals,
            t.shape(),
            indent,
            summarize,
            &|v| f.format(v),
            f.width,
            &o,
        )
    };
    suffixes.extend(extra.iter().cloned());
    add_suffixes(format!("{prefix}{body}"), &suffixes, indent, o.linewidth)
}

/// The autograd suffix torch prints: `grad_fn=<MulBackward0>` on results of
/// recorded ops, `requires_grad=True` on leaves that require grad.
fn autograd_suffix(t: &Tensor) -> Vec<String> {
    match t.grad_fn() {
        Some(f) => vec![format!("grad_fn=<{}>", f.name())],
        None if t.requires_grad() => vec!["requires_grad=True".to_string()],
        None => vec![],
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self, &autograd_suffix(self)))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self, &autograd_suffix(self)))
    }
}
