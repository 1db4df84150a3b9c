//! Run-time CPU feature detection, done once.

use std::sync::OnceLock;

/// The instruction-set level the vectorised loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Whatever the compilation target guarantees (SSE2 on x86-64).
    Baseline,
    /// AVX2 with FMA (x86-64-v3).
    Avx2,
    /// AVX-512 F/BW/DQ/VL (x86-64-v4).
    Avx512,
}

/// The best level this CPU supports. Set `FERROTORCH_CPU_LEVEL=baseline|avx2`
/// to force a lower one (for testing the fallbacks).
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(detect)
}

fn detect() -> Level {
    let forced = std::env::var("FERROTORCH_CPU_LEVEL").ok();
    let cap = match forced.as_deref() {
        Some("baseline") => Level::Baseline,
        Some("avx2") => Level::Avx2,
        _ => Level::Avx512,
    };
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("fma");
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let found = if avx512 {
            Level::Avx512
        } else if avx2 {
            Level::Avx2
        } else {
            Level::Baseline
        };
        found.min(cap)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = cap;
        Level::Baseline
    }
}
