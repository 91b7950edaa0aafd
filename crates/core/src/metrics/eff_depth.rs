//! `eff_depth`: the effective depth, the mean path length of blocks `1..=l` (`docs/theory.md`,
//! "The metrics"), derived from the `path_len` law by [`mean_length`]:
//!
//! ```text
//! eff_depth_l = sum_k k P_l(k)   ( = sum_{i<=l} p_i for the Poisson-binomial law ).
//! ```
//!
//! Closed form: the mean of the law, carried by its own O(L) recursion
//! ([`crate::theory::paths::SplitPaths::push_mean`]) so that depth 10^6 costs no O(L^2) law.
//! Sampled: [`mean_length`] of the network's path law.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};

/// Definition.
pub static INFO: Info = Info {
    name: "eff_depth",
    about: "effective depth: mean path length of blocks 1..=l",
    layers: Layers::Stream,
    source: None,
    needs: Needs {
        paths: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the mean path length of a zero Jacobian (every path has gain 0)",
    title: "Effective depth",
    keeps: Keeps {
        gains: true,
        mean_path: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// The mean `sum_k k P(k)` of a path-length law given as `(k, P(k))` pairs.
pub fn mean_length(law: impl IntoIterator<Item = (usize, f64)>) -> f64 {
    law.into_iter().map(|(k, p)| k as f64 * p).sum()
}

/// The law's mean at layer l.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    if let Some(&v) = q.eff_depth.get(&l) {
        put(None, v);
    }
}

/// The mean of this network's law at layer l.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(law) = q.path_laws.get(&l) {
        put(None, law.mean);
    }
}

/// Why `eff_depth` at layer l cannot be written: a positive mean path length below f64's
/// normal range (a subnormal has lost bits, and a share below it was dropped).
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    let v = *q.eff_depth.get(&l)?;
    if v >= f64::MIN_POSITIVE || (v == 0.0 && !q.eff_depth_tiny.contains(&l)) {
        return None;
    }
    crate::theory::logsum::ln_beyond_f64(crate::theory::logsum::ln0(v)).or_else(|| {
        Some("underflow: the mean path length is below f64's smallest number (every branch's share of the paths is)".to_string())
    })
}
