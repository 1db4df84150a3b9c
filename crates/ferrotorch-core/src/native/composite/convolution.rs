//! ATen's general convolution entry points, `convolution` and
//! `_convolution` (what `torch.jit.trace` records for every `nn.Conv*d`),
//! dispatched by the weight's rank and `transposed` to the convolutions
//! that have kernels.

use crate::dispatch::Registry;
use crate::error::Result;
use crate::tensor::Tensor;

fn usizes(v: &[i64], what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| {
                crate::Error::new(
                    crate::ErrorKind::Runtime,
                    format!("convolution(): {what} must be non-negative, got {v:?}"),
                )
            })
        })
        .collect()
}

/// `aten::convolution`.
#[allow(clippy::too_many_arguments)]
fn convolution(
    x: Tensor,
    w: Tensor,
    bias: Option<Tensor>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
) -> Result<Tensor> {
    let groups = usize::try_from(groups).unwrap_or(0);
    crate::ensure!(
        groups > 0,
        Runtime,
        "convolution(): non-positive groups is not supported"
    );
    let spatial = w.dim().saturating_sub(2);
    let fit = |v: &[i64], what: &str| -> Result<Vec<usize>> {
        let v = usizes(v, what)?;
        Ok(match v.len() {
            1 => vec![v[0]; spatial],
            _ => v,
        })
    };
    let (s, p, d, op) = (
        fit(&stride, "stride")?,
        fit(&padding, "padding")?,
        fit(&dilation, "dilation")?,
        fit(&output_padding, "output_padding")?,
    );
    let b = bias.as_ref();
    match (spatial, transposed) {
        (2, false) => x.conv2d(&w, b, &s, &p, &d, groups),
        (2, true) => x.conv_transpose2d(&w, b, &s, &p, &op, groups, &d),
        (1, false) => x.conv1d(&w, b, s[0], p[0], d[0], groups),
        // a 1-D transposed convolution as a 2-D one of height 1
        (1, true) => x
            .unsqueeze(-2)?
            .conv_transpose2d(
                &w.unsqueeze(-2)?,
                b,
                &[1, s[0]],
                &[0, p[0]],
                &[0, op[0]],
                groups,
                &[1, d[0]],
            )?
            .squeeze_dims(&[-2]),
        (n, t) => crate::bail!(
            Runtime,
            "convolution(): {}{n}-d convolutions (a weight of shape {:?}) are not supported",
            if t { "transposed " } else { "" },
            w.shape()
        ),
    }
}

pub(crate) fn register(r: &mut Registry) {
    r.def_typed(
        "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
        convolution,
    );
    // thirteen arguments, past the typed binder's ten: read by position
    r.add(
        "_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor",
        |a| {
            convolution(
                a.tensor(0)?,
                a.tensor(1)?,
                a.opt_tensor(2)?,
                a.int_list(3)?,
                a.int_list(4)?,
                a.int_list(5)?,
                a.bool(6)?,
                a.int_list(7)?,
                a.int(8)?,
            )
            .map(Into::into)
        },
    )
    .expect("a valid schema");
}
