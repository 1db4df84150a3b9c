//! One cheap hasher for tables keyed by addresses or block sizes.
//!
//! Such keys are already distinct and spread (node addresses, multiples of
//! 64): one multiply mixes them, where the default SipHash showed up in
//! small-op profiles (the backward engine's node table, the allocator's
//! free lists).

/// Multiplicative hasher for `usize` keys (other input is folded byte by
/// byte).
#[derive(Default, Clone, Copy)]
pub(crate) struct MulHasher(u64);

impl std::hash::Hasher for MulHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, x: usize) {
        self.0 = (x as u64 ^ (x as u64 >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// `BuildHasher` for [`MulHasher`].
pub(crate) type MulHash = std::hash::BuildHasherDefault<MulHasher>;
