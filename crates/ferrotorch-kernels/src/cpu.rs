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

/// Bytes of the L2 cache of one core, as Linux reports it in sysfs
/// (`/sys/devices/system/cpu/cpu0/cache/index*/`); 2 MiB where it does not
/// say. Read once. Kernels size their blocking from it: Zen 3 has 512 KiB,
/// recent Xeons 1–2 MiB.
pub fn l2_bytes() -> usize {
    static L2: OnceLock<usize> = OnceLock::new();
    *L2.get_or_init(|| read_l2().unwrap_or(2 << 20))
}

fn read_l2() -> Option<usize> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    for i in 0..8 {
        let dir = base.join(format!("index{i}"));
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        if read("level")?.trim() != "2" || read("type")?.trim() == "Instruction" {
            continue;
        }
        return parse_size(read("size")?.trim());
    }
    None
}

/// "512K", "2048K", "1M", "1048576" -> bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (num, unit) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    let n: usize = num.trim().parse().ok()?;
    n.checked_mul(unit).filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_size("512K"), Some(512 * 1024));
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("abc"), None);
    }
}
