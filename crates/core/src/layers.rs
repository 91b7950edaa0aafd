//! `--layers SPEC`: which layers a table writes (`all`, `last`, `log:K`, or a list like `1,4,16`
//! or `0,last`).

use crate::{Error, Result};

/// A layer selection, resolved against a depth by [`LayerSpec::resolve`].
///
/// # Examples
///
/// ```rust
/// use normscope_core::layers::LayerSpec;
/// assert_eq!(LayerSpec::parse("log:3")?.resolve(100)?, vec![1, 10, 100]);
/// assert_eq!(LayerSpec::parse("all")?.resolve(3)?, vec![0, 1, 2, 3]);
/// assert_eq!(LayerSpec::parse("last")?.resolve(7)?, vec![7]);
/// assert_eq!(LayerSpec::parse("4, 1,4")?, LayerSpec::List(vec![4, 1, 4]));
/// assert_eq!(LayerSpec::parse("0,last")?, LayerSpec::ListAndLast(vec![0]));
/// assert_eq!(LayerSpec::parse("0,last")?.resolve(12)?, vec![0, 12]);
/// assert_eq!(LayerSpec::List(vec![4, 1, 4]).resolve(5)?, vec![1, 4]);
/// assert_eq!(LayerSpec::All.max_count(8), 9);
/// assert!(LayerSpec::parse("first").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerSpec {
    /// Every layer 0..=L.
    All,
    /// Only layer L.
    Last,
    /// K layers log-spaced between 1 and L (rounded, deduplicated; always 1 and L).
    Log(usize),
    /// An explicit list.
    List(Vec<usize>),
    /// An explicit list and layer L (a list naming `last`, like `0,last`).
    ListAndLast(Vec<usize>),
}

const ACCEPTED: &str =
    "all, last, log:K (K >= 1), or a comma-separated list of layers like 1,4,16 or 0,last";

impl LayerSpec {
    /// Parses the flag value.
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        match s {
            "all" => return Ok(LayerSpec::All),
            "last" => return Ok(LayerSpec::Last),
            _ => {}
        }
        if let Some(k) = s.strip_prefix("log:") {
            return match k.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(LayerSpec::Log(k)),
                _ => Err(Error::invalid("--layers", s, ACCEPTED)),
            };
        }
        let items: Vec<&str> = s.split(',').map(str::trim).collect();
        let last = items.contains(&"last");
        let list: std::result::Result<Vec<usize>, _> = items
            .iter()
            .filter(|p| **p != "last")
            .map(|p| p.parse::<usize>())
            .collect();
        match list {
            Ok(v) if last => Ok(LayerSpec::ListAndLast(v)),
            Ok(v) if !v.is_empty() => Ok(LayerSpec::List(v)),
            _ => Err(Error::invalid("--layers", s, ACCEPTED)),
        }
    }

    /// An upper bound on the number of layers [`Self::resolve`] returns, without listing them
    /// (to refuse a selection before allocating it).
    pub fn max_count(&self, depth: usize) -> u128 {
        let all = depth as u128 + 1;
        match self {
            LayerSpec::All => all,
            LayerSpec::Last => 1,
            LayerSpec::Log(k) => (*k as u128).min(all),
            LayerSpec::List(v) => (v.len() as u128).min(all),
            LayerSpec::ListAndLast(v) => (v.len() as u128 + 1).min(all),
        }
    }

    /// Sorted, unique layers in `0..=depth`.
    pub fn resolve(&self, depth: usize) -> Result<Vec<usize>> {
        let mut v: Vec<usize> = match self {
            LayerSpec::All => (0..=depth).collect(),
            LayerSpec::Last => vec![depth],
            LayerSpec::Log(k) => {
                let k = *k;
                let top = (depth as f64).ln();
                if k == 1 {
                    vec![depth]
                } else if (k - 1) as f64 > depth as f64 * top {
                    // Consecutive log-spaced points are less than 1 apart everywhere (the
                    // widest gap, at the top, is below depth ln(depth) / (k - 1)), so rounding
                    // hits every layer: the same set as the loop below, without k steps.
                    (1..=depth).collect()
                } else {
                    (0..k)
                        .map(|i| (top * i as f64 / (k - 1) as f64).exp().round() as usize)
                        .map(|l| l.clamp(1, depth))
                        .collect()
                }
            }
            LayerSpec::List(list) | LayerSpec::ListAndLast(list) => {
                if let Some(&bad) = list.iter().find(|&&l| l > depth) {
                    return Err(Error::invalid(
                        "--layers",
                        bad,
                        format!("layers in 0..={depth} (the depth)"),
                    ));
                }
                let mut v = list.clone();
                if matches!(self, LayerSpec::ListAndLast(_)) {
                    v.push(depth);
                }
                v
            }
        };
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_spacing_hits_both_ends() {
        let v = LayerSpec::parse("log:5").unwrap().resolve(10_000).unwrap();
        assert_eq!(v, vec![1, 10, 100, 1000, 10_000]);
    }

    #[test]
    fn huge_log_counts_select_every_layer_without_iterating() {
        // The shortcut gives exactly what the log-spaced loop gives just above its threshold.
        for depth in [1, 2, 7, 64, 1000] {
            let k = (depth as f64 * (depth as f64).ln()) as usize + 2;
            let shortcut = LayerSpec::Log(usize::MAX).resolve(depth).unwrap();
            let top = (depth as f64).ln();
            let mut looped: Vec<usize> = (0..k)
                .map(|i| (top * i as f64 / (k - 1).max(1) as f64).exp().round() as usize)
                .map(|l| l.clamp(1, depth))
                .collect();
            looped.sort_unstable();
            looped.dedup();
            assert_eq!(shortcut, looped, "depth {depth}");
        }
    }

    #[test]
    fn bad_specs_are_rejected() {
        assert!(LayerSpec::parse("log:0").is_err());
        assert!(LayerSpec::parse("first").is_err());
        assert!(LayerSpec::parse("1,x").is_err());
        assert!(LayerSpec::List(vec![5]).resolve(4).is_err());
    }
}
