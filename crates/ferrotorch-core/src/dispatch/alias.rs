//! PyTorch's alias annotations in schemas: `Tensor(a)` (a view sharing
//! alias set `a`), `Tensor(a!)` (written in place), `Tensor(a -> *)` (its
//! alias set flows into a list of outputs, `split`).
//!
//! The tracer, the bindings' in-place handling and the passes read these
//! facts from the schema ([`super::Schema::aliased_input`],
//! [`super::Schema::is_inplace`], [`super::Schema::mutated_args`]) instead of
//! matching op names.

use crate::error::Result;

/// The annotation on one argument or return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AliasInfo {
    /// The alias set's name (`a`).
    pub set: String,
    /// Written in place (`!`).
    pub write: bool,
    /// The set flows into outputs of any set (`a -> *`).
    pub wildcard_after: bool,
}

/// Split `Tensor(a!)` into `Tensor` and its annotation.
pub(crate) fn split_annotation(s: &str) -> Result<(&str, Option<AliasInfo>)> {
    let Some(p) = s.find('(') else {
        return Ok((s, None));
    };
    let ann = &s[p..];
    crate::ensure!(
        ann.ends_with(')') && ann.len() > 2,
        Runtime,
        "bad alias annotation in type '{s}'"
    );
    let inner = ann[1..ann.len() - 1].trim();
    let (before, wildcard_after) = match inner.split_once("->") {
        Some((b, after)) => {
            crate::ensure!(
                after.trim() == "*",
                Runtime,
                "bad alias annotation in type '{s}'"
            );
            (b.trim(), true)
        }
        None => (inner, false),
    };
    let (set, write) = match before.strip_suffix('!') {
        Some(x) => (x.trim(), true),
        None => (before, false),
    };
    crate::ensure!(
        !set.is_empty() && set.chars().all(|c| c.is_ascii_alphanumeric() || c == '*'),
        Runtime,
        "bad alias annotation in type '{s}'"
    );
    Ok((
        &s[..p],
        Some(AliasInfo {
            set: set.to_string(),
            write,
            wildcard_after,
        }),
    ))
}
