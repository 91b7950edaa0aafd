//! The processor at hand as Linux describes it: its model name (`/proc/cpuinfo`), whether it
//! has AVX-512, and the sizes of its data caches (`/sys/devices/system/cpu/cpu0/cache/index*`,
//! the caches of the first core: level 1 and 2 are per core, level 3 shared). The bench prints
//! it beside every measured ratio (a speed ratio is a property of a machine, not of the code
//! alone), and the f64 kernel sizes its row blocks from the level-2 cache
//! ([`crate::exact_dgemm`]). Elsewhere, or where a file is missing, the fields are unknown.

use std::sync::OnceLock;

/// A processor's model name and data caches.
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::cpu::Processor;
///
/// let p = Processor::parse(
///     "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx512f\n",
///     &[(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"), (3, "Unified", "32768K")],
/// );
/// assert_eq!(p.model, "AMD EPYC");
/// assert!(p.avx512);
/// assert_eq!((p.l1d, p.l2, p.l3), (Some(32 << 10), Some(1 << 20), Some(32 << 20)));
/// assert_eq!(p.summary(), "AMD EPYC, AVX-512; L1d 32 KiB, L2 1 MiB, L3 32 MiB");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Processor {
    /// The model name (`model name` in `/proc/cpuinfo`), or `unknown processor`.
    pub model: String,
    /// Whether the flags list `avx512f`.
    pub avx512: bool,
    /// Level-1 data cache of one core, bytes.
    pub l1d: Option<u64>,
    /// Level-2 cache of one core, bytes.
    pub l2: Option<u64>,
    /// Level-3 cache (shared), bytes.
    pub l3: Option<u64>,
}

/// A cache size as sysfs writes it (`32K`, `1024K`, `2M`), in bytes.
fn size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit.trim() {
        "" => 1,
        "K" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// `32 KiB`, `1 MiB`, `1.25 MiB`.
fn shown(bytes: u64) -> String {
    let (v, unit) = if bytes >= 1 << 20 {
        (bytes as f64 / (1u64 << 20) as f64, "MiB")
    } else {
        (bytes as f64 / 1024.0, "KiB")
    };
    format!("{} {unit}", (v * 100.0).round() / 100.0)
}

impl Processor {
    /// From `/proc/cpuinfo`'s text and the first core's caches as `(level, type, size)`.
    pub fn parse(cpuinfo: &str, caches: &[(u32, &str, &str)]) -> Processor {
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let cache = |level: u32, kind: &str| {
            caches
                .iter()
                .find(|(l, t, _)| *l == level && (*t == kind || *t == "Unified"))
                .and_then(|(_, _, s)| size(s))
        };
        Processor {
            model: field("model name").unwrap_or_else(|| "unknown processor".into()),
            avx512: field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "avx512f")),
            l1d: cache(1, "Data"),
            l2: cache(2, "Unified"),
            l3: cache(3, "Unified"),
        }
    }

    /// The processor this process runs on, read once.
    pub fn here() -> &'static Processor {
        static HERE: OnceLock<Processor> = OnceLock::new();
        HERE.get_or_init(|| {
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap_or_default();
            let caches: Vec<(u32, String, String)> = (0..8)
                .map(|i| {
                    std::path::PathBuf::from(format!("/sys/devices/system/cpu/cpu0/cache/index{i}"))
                })
                .filter(|d| d.is_dir())
                .filter_map(|d| {
                    let level = read(d.join("level")).trim().parse().ok()?;
                    Some((
                        level,
                        read(d.join("type")).trim().to_string(),
                        read(d.join("size")),
                    ))
                })
                .collect();
            let refs: Vec<(u32, &str, &str)> = caches
                .iter()
                .map(|(l, t, s)| (*l, t.as_str(), s.as_str()))
                .collect();
            Processor::parse(&cpuinfo, &refs)
        })
    }

    /// `model, AVX-512; L1d 32 KiB, L2 1 MiB, L3 32 MiB` (unknown sizes left out).
    pub fn summary(&self) -> String {
        let caches: Vec<String> = [("L1d", self.l1d), ("L2", self.l2), ("L3", self.l3)]
            .iter()
            .filter_map(|(n, b)| b.map(|b| format!("{n} {}", shown(b))))
            .collect();
        let simd = if self.avx512 { ", AVX-512" } else { "" };
        if caches.is_empty() {
            format!("{}{simd}; caches unknown", self.model)
        } else {
            format!("{}{simd}; {}", self.model, caches.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_sysfs_writes_them() {
        assert_eq!(size("48K\n"), Some(48 << 10));
        assert_eq!(size("2M"), Some(2 << 20));
        assert_eq!(size("1280K"), Some(1280 << 10));
        assert_eq!(size("512"), Some(512));
        assert_eq!(size("x"), None);
        assert_eq!(shown(1280 << 10), "1.25 MiB");
    }

    #[test]
    fn nothing_known_is_said_so() {
        let p = Processor::parse("", &[]);
        assert_eq!(p.summary(), "unknown processor; caches unknown");
        assert!(!p.avx512 && p.l2.is_none());
    }
}
