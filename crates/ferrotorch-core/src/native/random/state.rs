//! A generator's state as the bytes torch's `get_rng_state()` returns.
//!
//! Note [Generator state bytes]: torch's CPU generator state is the plain
//! struct `CPUGeneratorImplState` (aten/src/ATen/CPUGeneratorImpl.cpp),
//! 5,056 bytes on a 64-bit little-endian machine:
//!
//! | offset | field | here |
//! |---|---|---|
//! | 0 | u64 `the_initial_seed` | the seed |
//! | 8 | i32 `left` | draws before the next twist, + 1 |
//! | 12 | i32 `seeded` | 1 |
//! | 16 | u64 `next` | the next word to temper |
//! | 24 | u64 × 624 `state` | the Mersenne Twister's words, widened |
//! | 5016 | f64 `normal_x`, `normal_y`, `normal_rho` | the cached normal in `normal_y` |
//! | 5040 | i32 `normal_is_valid` | whether it is cached (then padding) |
//! | 5048 | f32 `next_float_normal_sample`, u8 `is_..._valid` | unused here: 0 |
//!
//! so a state saved by torch (`torch.get_rng_state()`, a checkpoint's
//! `rng_state`) restores here to the same stream, and ours restores in
//! torch. torch also accepts the 5,048-byte legacy struct without the
//! float sample; so do we. Every field is checked before it is used: the
//! size, `left` in 1..=624 and `next` consistent with it.

use super::{Generator, Mt19937, N};
use crate::error::Result;

/// The size of torch's `CPUGeneratorImplState`.
pub const STATE_BYTES: usize = 5056;
/// The size of its legacy part (`CPUGeneratorImplStateLegacy`), which
/// torch's `set_state` also accepts.
pub const LEGACY_STATE_BYTES: usize = 5048;
const STATE_AT: usize = 24;
const NORMAL_Y_AT: usize = STATE_AT + N * 8 + 8;
const NORMAL_VALID_AT: usize = STATE_AT + N * 8 + 24;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl Generator {
    /// The state as torch's bytes (`g.get_state()`, `torch.get_rng_state()`;
    /// Note [Generator state bytes]).
    pub fn get_state_bytes(&self) -> Vec<u8> {
        let mt = self.0.lock();
        let mut b = vec![0u8; STATE_BYTES];
        b[0..8].copy_from_slice(&mt.seed.to_le_bytes());
        // torch counts down `left` to the twist and reads `state[next]`;
        // here `index` is the next word (N: twist first)
        let left = (N + 1 - mt.index.min(N)) as i32;
        let next = if mt.fresh { 0 } else { mt.index as u64 };
        b[8..12].copy_from_slice(&left.to_le_bytes());
        b[12..16].copy_from_slice(&1i32.to_le_bytes());
        b[16..24].copy_from_slice(&next.to_le_bytes());
        for (i, w) in mt.state.iter().enumerate() {
            let at = STATE_AT + i * 8;
            b[at..at + 8].copy_from_slice(&(*w as u64).to_le_bytes());
        }
        if let Some(y) = mt.next_normal {
            b[NORMAL_Y_AT..NORMAL_Y_AT + 8].copy_from_slice(&y.to_le_bytes());
            b[NORMAL_VALID_AT..NORMAL_VALID_AT + 4].copy_from_slice(&1i32.to_le_bytes());
        }
        b
    }

    /// Restore a state from torch's bytes (`g.set_state(t)`,
    /// `torch.set_rng_state(t)`), checked field by field first (Note
    /// [Generator state bytes]).
    pub fn set_state_bytes(&self, b: &[u8]) -> Result<()> {
        crate::ensure!(
            b.len() == STATE_BYTES || b.len() == LEGACY_STATE_BYTES,
            Runtime,
            "Expected either a CPUGeneratorImplStateLegacy of size {LEGACY_STATE_BYTES} or a \
             CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG state size to be {}",
            b.len()
        );
        let left = i32_at(b, 8);
        crate::ensure!(
            (1..=N as i32).contains(&left),
            Runtime,
            "The legacy_pod.left value should be between 1 and {N} (got {left})"
        );
        let next = u64_at(b, 16);
        let index = if left == 1 { N } else { N + 1 - left as usize };
        crate::ensure!(
            left == 1 || next == index as u64,
            Runtime,
            "set_state: an RNG state with left = {left} must have next = {index} (got {next})"
        );
        let mut state = [0u32; N];
        for (i, w) in state.iter_mut().enumerate() {
            let v = u64_at(b, STATE_AT + i * 8);
            crate::ensure!(
                v <= u32::MAX as u64,
                Runtime,
                "set_state: Mersenne Twister word {i} is {v}, more than 32 bits"
            );
            *w = v as u32;
        }
        let normal = (i32_at(b, NORMAL_VALID_AT) != 0).then(|| {
            f64::from_le_bytes(b[NORMAL_Y_AT..NORMAL_Y_AT + 8].try_into().expect("8 bytes"))
        });
        *self.0.lock() = Mt19937 {
            state,
            index,
            fresh: left == 1 && next == 0,
            seed: u64_at(b, 0),
            next_normal: normal,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_bytes_round_trip_mid_stream() {
        let g = Generator::new(7);
        for _ in 0..1000 {
            g.next_u32();
        }
        let b = g.get_state_bytes();
        let want: Vec<u32> = (0..700).map(|_| g.next_u32()).collect();
        let h = Generator::new(0);
        h.set_state_bytes(&b).unwrap();
        let got: Vec<u32> = (0..700).map(|_| h.next_u32()).collect();
        assert_eq!(got, want);
        assert_eq!(h.initial_seed(), 7);
    }

    #[test]
    fn a_fresh_state_reads_as_torchs() {
        let b = Generator::new(42).get_state_bytes();
        assert_eq!(b.len(), STATE_BYTES);
        assert_eq!(u64_at(&b, 0), 42);
        assert_eq!((i32_at(&b, 8), i32_at(&b, 12), u64_at(&b, 16)), (1, 1, 0));
        // torch's init_with_uint32: state[1] = 1812433253 * (s ^ (s >> 30)) + 1
        assert_eq!(
            u64_at(&b, STATE_AT + 8),
            1_812_433_253u64 * 42 % (1 << 32) + 1
        );
    }

    #[test]
    fn bad_states_are_refused_with_reasons() {
        let g = Generator::new(1);
        let mut b = g.get_state_bytes();
        assert!(g
            .set_state_bytes(&b[..100])
            .unwrap_err()
            .to_string()
            .contains("found the input RNG state size to be 100"));
        b[8..12].copy_from_slice(&0i32.to_le_bytes());
        assert!(g
            .set_state_bytes(&b)
            .unwrap_err()
            .to_string()
            .contains("left value"));
        b[8..12].copy_from_slice(&10i32.to_le_bytes());
        assert!(g
            .set_state_bytes(&b)
            .unwrap_err()
            .to_string()
            .contains("must have next = 615"));
    }
}
