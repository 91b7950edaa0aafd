//! `branch_gain`: the mean-square gain `b_l^2` of block l's branch path for a tangent with
//! independent tokens (`docs/theory.md`, "The mean-field closed form" and "The metrics"):
//!
//! ```text
//! b_l^2 = n_l^2 lambda_l^2 (1/m_l)^[N_br = Norm] g_b(q_u) (1/(q_{l-1} l^[LNS]))^[N_in = Norm].
//! ```
//!
//! Sampled: `||J_branch h||^2 / ||h||^2` for the same Gaussian tangent h as `skip_gain`.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "branch_gain",
    about: "branch-path gain b_l^2 of block l (norm Jacobians included)",
    layers: Layers::Blocks,
    source: None,
    needs: Needs {
        gains: true,
        ..Needs::FORWARD
    },
    reach: Reach::Block,
    scale: Scale::Linear,
    undefined: "the branch's norm Jacobian at a zero branch input (0/0)",
    title: "branch-path gain b_l^2 of block l (norm Jacobians included)",
    keeps: Keeps::STREAM,
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `b_l^2`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.branch_gain[l].value());
}

/// `||J_branch h||^2 / ||h||^2`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some((_, b2)) = q.gains[l] {
        put(None, b2);
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.branch_gain[l].ln())
}
