//! `skip_gain`: the mean-square gain `a_l^2` of block l's skip path, norm Jacobians included
//! (`docs/theory.md`, "The mean-field closed form" and "The metrics"):
//!
//! ```text
//! a_l^2 = n_l^2 alpha_l^2,   n_l^2 = 1/s_l if N_out = Norm, else 1.
//! ```
//!
//! Sampled: `||J_skip h||^2 / ||h||^2` for one isotropic Gaussian tangent h of `x_{l-1}`.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "skip_gain",
    about: "skip-path gain a_l^2 of block l (norm Jacobians included)",
    layers: Layers::Blocks,
    source: None,
    needs: Needs {
        gains: true,
        ..Needs::FORWARD
    },
    reach: Reach::Block,
    scale: Scale::Linear,
    undefined: "the skip path's norm Jacobian at a zero input (0/0)",
    title: "skip-path gain a_l^2 of block l (norm Jacobians included)",
    keeps: Keeps::STREAM,
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `a_l^2`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.skip_gain[l].value());
}

/// `||J_skip h||^2 / ||h||^2`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some((a2, _)) = q.gains[l] {
        put(None, a2);
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.skip_gain[l].ln())
}
