//! Helpers the kernel tests share.

/// The f32 edge values every kernel test runs: NaN, ±inf, ±0, ±a
/// subnormal, the smallest normal, ±the largest finite.
pub const EDGES: [f32; 10] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1e-40,
    -1e-40,
    f32::MIN_POSITIVE,
    f32::MAX,
    f32::MIN,
];

/// The same bits, or both NaN (NaN payloads may differ).
pub fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}
