//! Layer arguments that are "an int or a pair" (`kernel_size=3` or
//! `(3, 5)`), and Python's spelling of values in module reprs.

/// A 2-D size given as one int or a pair (`kernel_size=3`, `(3, 5)`);
/// printed back the way it was given, as PyTorch prints pooling layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size2 {
    /// (height, width).
    pub hw: [usize; 2],
    scalar: bool,
}

impl Size2 {
    /// The pair as a slice for the native ops.
    pub fn as_slice(&self) -> &[usize] {
        &self.hw
    }

    /// `3` or `(3, 5)`, as given.
    pub fn py(&self) -> String {
        if self.scalar {
            self.hw[0].to_string()
        } else {
            py_tuple(&self.hw)
        }
    }
}

impl From<usize> for Size2 {
    fn from(v: usize) -> Size2 {
        Size2 {
            hw: [v, v],
            scalar: true,
        }
    }
}

impl From<(usize, usize)> for Size2 {
    fn from((h, w): (usize, usize)) -> Size2 {
        Size2 {
            hw: [h, w],
            scalar: false,
        }
    }
}

impl From<[usize; 2]> for Size2 {
    fn from(hw: [usize; 2]) -> Size2 {
        Size2 { hw, scalar: false }
    }
}

/// A Python tuple: `(3,)`, `(3, 5)`.
pub(crate) fn py_tuple(v: &[usize]) -> String {
    match v {
        [x] => format!("({x},)"),
        _ => format!(
            "({})",
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `repr(float)`: `0.1`, `1.0`, `1e-05`.
pub(crate) fn py_float(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e16).contains(&a) {
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("+", exp),
        };
        format!("{mantissa}e{sign}{digits:0>2}")
    } else {
        format!("{v:?}")
    }
}

/// Python's spelling of a bool.
pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn python_float_repr() {
        assert_eq!(super::py_float(1e-5), "1e-05");
        assert_eq!(super::py_float(0.1), "0.1");
        assert_eq!(super::py_float(1.0), "1.0");
        assert_eq!(super::py_float(2.5e20), "2.5e+20");
    }
}
