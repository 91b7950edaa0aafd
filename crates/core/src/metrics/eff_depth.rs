//! `eff_depth`: the effective depth, the mean path length of blocks `1..=l` (THEORY.md
//! section 5), derived from the `path_len` law by [`mean_length`]:
//!
//! ```text
//! eff_depth_l = sum_k k P_l(k)   ( = sum_{i<=l} p_i for the Poisson-binomial law ).
//! ```
//!
//! Closed form: the mean of the law, carried by its own O(L) recursion
//! ([`crate::theory::paths::SplitPaths::push_mean`]) so that depth 10^6 costs no O(L^2) law.
//! Sampled: [`mean_length`] of the network's path law.

use super::{Info, Layers, Needs, Put, Reach, Scale};

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
};

/// The mean `sum_k k P(k)` of a path-length law given as `(k, P(k))` pairs.
pub fn mean_length(law: impl IntoIterator<Item = (usize, f64)>) -> f64 {
    law.into_iter().map(|(k, p)| k as f64 * p).sum()
}

/// The law's mean at layer l.
pub fn closed_form(q: &crate::theory::Quantities, l: usize, put: Put) {
    if let Some(&v) = q.eff_depth.get(&l) {
        put(None, v);
    }
}

/// The mean of this network's law at layer l.
pub fn sampled(q: &crate::monte_carlo::Quantities, l: usize, put: Put) {
    if let Some(law) = q.path_laws.get(&l) {
        put(None, law.mean);
    }
}
