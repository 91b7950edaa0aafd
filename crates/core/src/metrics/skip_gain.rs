//! `skip_gain`: the mean-square gain `a_l^2` of block l's skip path, norm Jacobians included
//! (THEORY.md sections 4-5):
//!
//! ```text
//! a_l^2 = n_l^2 alpha_l^2,   n_l^2 = 1/s_l if N_out = Norm, else 1.
//! ```
//!
//! Sampled: `||J_skip h||^2 / ||h||^2` for one isotropic Gaussian tangent h of `x_{l-1}`.

use super::{Info, Layers, Needs, Put, Reach, Scale};

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
};

/// `a_l^2`.
pub fn closed_form(q: &crate::theory::Quantities, l: usize, put: Put) {
    put(None, q.mf.skip_gain[l].value());
}

/// `||J_skip h||^2 / ||h||^2`.
pub fn sampled(q: &crate::monte_carlo::Quantities, l: usize, put: Put) {
    if let Some((a2, _)) = q.gains[l] {
        put(None, a2);
    }
}
