//! `cos_prev`: the cosine between consecutive streams (`docs/theory.md`, "The metrics")
//!
//! ```text
//! cos(x_l, x_{l-1}) = <x_l, x_{l-1}> / (||x_l|| ||x_{l-1}||),   closed form  n_l alpha_l sqrt(q_{l-1} / q_l).
//! ```
//!
//! Sampled over all tokens of the network (clamped to [-1, 1]).

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};

/// Definition.
pub static INFO: Info = Info {
    name: "cos_prev",
    about: "cos(x_l, x_{l-1})",
    layers: Layers::Blocks,
    source: None,
    needs: Needs::FORWARD,
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the cosine with a zero stream (x_l or x_{l-1} is 0)",
    title: "Cosine of adjacent layers",
    keeps: Keeps::STREAM,
    beyond_f64: None,
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `n_l alpha_l sqrt(q_{l-1} / q_l)`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.cos_prev[l]);
}

/// The cosine of this network's `x_l` and `x_{l-1}`, over all tokens.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    put(None, q.cos_prev(l));
}
