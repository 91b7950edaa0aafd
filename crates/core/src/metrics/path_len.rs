//! `path_len`: the share of the mean-square Jacobian of blocks `1..=l` carried by paths
//! through exactly k branches (Veit et al. 2016; `docs/theory.md`, "The metrics"), `source` = k.
//!
//! Closed form: a Poisson-binomial law with `p_i = b_i^2 / (a_i^2 + b_i^2)`, or the split
//! recursion for token-mixing branches ([`crate::theory::paths`]); computed up to layer
//! [`crate::theory::paths::MAX_PATH_LAYER`]. Sampled: the exact path polynomial
//! `T'_k = J_skip T_k + J_br T_{k-1}` from one Gaussian tangent, shares
//! `||T_k||^2 / sum_k ||T_k||^2`, or beyond `--path-max` blocks the factorized law with this
//! network's `p_i` ([`crate::monte_carlo::measure`]).

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};

/// Definition.
pub static INFO: Info = Info {
    name: "path_len",
    about: "share of the Jacobian of blocks 1..=l on paths of length k (source = k)",
    layers: Layers::Stream,
    source: Some("k"),
    needs: Needs {
        paths: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the share of a zero Jacobian (every path has gain 0)",
    title: "Path-length distribution",
    keeps: Keeps {
        gains: true,
        path_law: true,
        ..Keeps::STREAM
    },
    beyond_f64: None,
    correction: None,
    absent_is_zero: true,
    min_tokens: None,
};

/// The law at layer l (absent beyond the computed layers).
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    if let Some(law) = q.path_laws.get(&l) {
        for &(k, v) in law {
            put(Some(k), v);
        }
    }
}

/// This network's law at layer l (lengths whose share is 0 are not written).
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(law) = q.path_laws.get(&l) {
        for &(k, v) in &law.shares {
            put(Some(k), v);
        }
    }
}
