//! `torch.set_printoptions` / `torch._tensor_str.PRINT_OPTS` over the
//! core's print options.

use ferrotorch_core::tensor::display::{get_printoptions, set_printoptions, PrintOptions};
use pyo3::prelude::*;

/// `_C._set_printoptions(precision, threshold, edgeitems, linewidth,
/// sci_mode)`: `None` keeps a setting; a threshold of `None` is also kept
/// (`inf` arrives as a huge int).
#[pyfunction]
#[pyo3(signature = (precision, threshold, edgeitems, linewidth, sci_mode, set_sci))]
pub fn _set_printoptions(
    precision: Option<usize>,
    threshold: Option<usize>,
    edgeitems: Option<usize>,
    linewidth: Option<usize>,
    sci_mode: Option<bool>,
    set_sci: bool,
) {
    let mut o = get_printoptions();
    if let Some(p) = precision {
        o.precision = p;
    }
    if let Some(t) = threshold {
        o.threshold = t;
    }
    if let Some(e) = edgeitems {
        o.edgeitems = e;
    }
    if let Some(l) = linewidth {
        o.linewidth = l;
    }
    if set_sci {
        o.sci_mode = sci_mode;
    }
    set_printoptions(o);
}

/// `_C._get_printoptions()`: (precision, threshold, edgeitems, linewidth, sci_mode).
#[pyfunction]
pub fn _get_printoptions() -> (usize, usize, usize, usize, Option<bool>) {
    let PrintOptions {
        precision,
        threshold,
        edgeitems,
        linewidth,
        sci_mode,
    } = get_printoptions();
    (precision, threshold, edgeitems, linewidth, sci_mode)
}
