//! Running a lowered fusion group on tensors: broadcasting, collapsing
//! dimensions into rows, and splitting rows over the intra-op pool
//! (Note [Generated kernels] in ferrotorch-codegen says what one kernel
//! call does).

use ferrotorch_codegen::{Access, Elem, Kernel, RowKernel};
use ferrotorch_core::tensor::layout::{broadcast_shapes, broadcast_strides};
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_kernels::parallel::parallel_for;

/// Elements per parallel chunk at least: below this a chunk's start-up
/// costs more than the work.
const GRAIN: usize = 32 * 1024;

/// A group's inputs laid out for kernels: the broadcast shape, and
/// dimensions merged where every operand is contiguous across them.
pub(crate) struct Plan {
    /// The outputs' shape.
    pub shape: Vec<usize>,
    /// Merged dimensions, outermost first; the last is the row.
    dims: Vec<usize>,
    /// Per input, its stride (in elements) in each merged dimension.
    strides: Vec<Vec<usize>>,
}

impl Plan {
    /// The plan for `inputs`, or `None` when their shapes do not
    /// broadcast (the interpreter then reports the error). With
    /// `keep_last`, the last dimension is never merged: rows are exactly
    /// the last dimension (row kernels reduce over it).
    pub fn new(inputs: &[Tensor], keep_last: bool) -> Option<Plan> {
        let mut shape: Vec<usize> = Vec::new();
        for t in inputs {
            shape = broadcast_shapes(&shape, t.shape()).ok()?.to_vec();
        }
        let full: Vec<Vec<usize>> = inputs
            .iter()
            .map(|t| broadcast_strides(t.shape(), t.stride(), &shape).to_vec())
            .collect();
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: Vec<Vec<usize>> = vec![Vec::new(); inputs.len()];
        let last = shape.len().wrapping_sub(1);
        for d in 0..shape.len() {
            if shape[d] == 1 && !(keep_last && d == last) {
                continue;
            }
            // merge into the previous dimension where every input steps
            // across both as across one
            let merge = !(dims.is_empty() || keep_last && d == last)
                && full
                    .iter()
                    .zip(&strides)
                    .all(|(f, s)| *s.last().expect("a previous dimension") == f[d] * shape[d]);
            if merge {
                *dims.last_mut().expect("a previous dimension") *= shape[d];
                for (f, s) in full.iter().zip(&mut strides) {
                    *s.last_mut().expect("a previous dimension") = f[d];
                }
            } else {
                dims.push(shape[d]);
                for (f, s) in full.iter().zip(&mut strides) {
                    s.push(f[d]);
                }
            }
        }
        if dims.is_empty() {
            dims.push(1);
            for s in &mut strides {
                s.push(0);
            }
        }
        Some(Plan {
            shape,
            dims,
            strides,
        })
    }

    /// How the kernel reads each input along a row.
    pub fn access(&self) -> Vec<Access> {
        let row = self.dims.len() - 1;
        self.strides
            .iter()
            .map(|s| match s[row] {
                0 => Access::Broadcast,
                1 => Access::Contiguous,
                _ => Access::Strided,
            })
            .collect()
    }

    fn row_len(&self) -> usize {
        *self.dims.last().expect("at least one dimension")
    }

    /// Each input's offset (elements) at the start of row `r`.
    fn row_offsets(&self, mut r: usize, out: &mut [usize]) {
        out.iter_mut().for_each(|o| *o = 0);
        for d in (0..self.dims.len() - 1).rev() {
            let i = r % self.dims[d];
            r /= self.dims[d];
            for (o, s) in out.iter_mut().zip(&self.strides) {
                *o += i * s[d];
            }
        }
    }
}

/// The float type a dtype computes in (halves in f32).
pub(crate) fn float_of(dtype: DType) -> Option<Elem> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => Some(Elem::F32),
        DType::F64 => Some(Elem::F64),
        DType::I32 => Some(Elem::I32),
        DType::I64 => Some(Elem::I64),
        _ => None,
    }
}

/// The dtype a kernel computes in and `inputs` in it: halves are widened
/// first (the kernel computes in f32) and the results narrowed once at
/// the end.
fn widen(dtype: DType, float: Elem, inputs: &[Tensor]) -> Result<(DType, Vec<Tensor>)> {
    let compute = match float {
        Elem::F32 => DType::F32,
        Elem::F64 => DType::F64,
        Elem::I32 => DType::I32,
        Elem::I64 => DType::I64,
    };
    let widened = if compute == dtype {
        inputs.to_vec()
    } else {
        inputs
            .iter()
            .map(|t| t.to_dtype(compute))
            .collect::<Result<_>>()?
    };
    Ok((compute, widened))
}

/// Run `kernel` (compiled for `plan.access()`) on `inputs`: the group's
/// outputs, in `dtype` (the group's).
pub(crate) fn execute(
    dtype: DType,
    kernel: &Kernel,
    plan: &Plan,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>> {
    let (compute, widened) = widen(dtype, kernel.float(), inputs)?;
    let n_out = kernel.n_outputs();
    let outs: Vec<Tensor> = (0..n_out)
        .map(|_| Tensor::empty(&plan.shape, compute))
        .collect::<Result<_>>()?;
    let numel: usize = plan.shape.iter().product();
    let esize = compute.size();
    let ins: Vec<usize> = widened.iter().map(|t| t.data_ptr() as usize).collect();
    let outp: Vec<usize> = outs.iter().map(|t| t.data_ptr() as usize).collect();
    let row = plan.row_len();
    let row_strides: Vec<i64> = plan
        .strides
        .iter()
        .map(|s| s[plan.dims.len() - 1] as i64)
        .collect();
    parallel_for(numel, GRAIN, |range| {
        let mut offs = vec![0usize; ins.len()];
        let mut in_ptrs = vec![std::ptr::null::<u8>(); ins.len()];
        let mut out_ptrs = vec![std::ptr::null_mut::<u8>(); outp.len()];
        let mut p = range.start;
        while p < range.end {
            let (r, c) = (p / row, p % row);
            let n = (row - c).min(range.end - p);
            plan.row_offsets(r, &mut offs);
            for k in 0..ins.len() {
                let e = offs[k] + c * row_strides[k] as usize;
                in_ptrs[k] = (ins[k] + e * esize) as *const u8;
            }
            for j in 0..outp.len() {
                out_ptrs[j] = (outp[j] + p * esize) as *mut u8;
            }
            // SAFETY: `Plan` took each input's offsets from its own
            // (validated) layout broadcast to `shape`, so every element
            // read lies in its storage; outputs are fresh, dense
            // `shape`-sized buffers, written at `p..p + n` only.
            unsafe { kernel.run(&in_ptrs, &row_strides, &out_ptrs, n) };
            p += n;
        }
    });
    if compute == dtype {
        Ok(outs)
    } else {
        outs.iter().map(|t| t.to_dtype(dtype)).collect()
    }
}

/// Run a row kernel over every row of `plan` (rows are the last
/// dimension, `Plan::new(.., true)`): the group's one output, in
/// `dtype`, `out_shape` shaped.
pub(crate) fn execute_rows(
    dtype: DType,
    kernel: &RowKernel,
    plan: &Plan,
    inputs: &[Tensor],
    out_shape: &[usize],
) -> Result<Vec<Tensor>> {
    let (compute, widened) = widen(dtype, kernel.float(), inputs)?;
    let out = Tensor::empty(out_shape, compute)?;
    // the row op's input, when the group returns it too
    let kept = if kernel.keeps_input() {
        Some(Tensor::empty(&plan.shape, compute)?)
    } else {
        None
    };
    let row = plan.row_len();
    let rows: usize = plan.shape.iter().product::<usize>() / row;
    let per_row = if kernel.op().reduces() { 1 } else { row };
    let esize = compute.size();
    let ins: Vec<usize> = widened.iter().map(|t| t.data_ptr() as usize).collect();
    let outp = out.data_ptr() as usize;
    let keptp = kept.as_ref().map(|t| t.data_ptr() as usize);
    let row_strides: Vec<i64> = plan
        .strides
        .iter()
        .map(|s| s[plan.dims.len() - 1] as i64)
        .collect();
    parallel_for(rows, (GRAIN / row).max(1), |range| {
        let mut offs = vec![0usize; ins.len()];
        let mut in_ptrs = vec![std::ptr::null::<u8>(); ins.len()];
        let mut outs = vec![std::ptr::null_mut::<u8>(); 1 + usize::from(keptp.is_some())];
        for r in range {
            plan.row_offsets(r, &mut offs);
            for k in 0..ins.len() {
                in_ptrs[k] = (ins[k] + offs[k] * esize) as *const u8;
            }
            outs[0] = (outp + r * per_row * esize) as *mut u8;
            if let Some(p) = keptp {
                outs[1] = (p + r * row * esize) as *mut u8;
            }
            // SAFETY: as in `execute`; the output row `r` is `per_row`
            // fresh elements at `r * per_row`, the kept row `row` at
            // `r * row`.
            unsafe { kernel.run(&in_ptrs, &row_strides, &outs, row) };
        }
    });
    let results: Vec<Tensor> = kept.into_iter().chain([out]).collect();
    if compute == dtype {
        Ok(results)
    } else {
        results.iter().map(|t| t.to_dtype(dtype)).collect()
    }
}
