//! `grad_sq`: the mean-square gradient at `x_l` per coordinate for an output gradient with
//! iid unit-variance entries (THEORY.md sections 4-5):
//!
//! ```text
//! r_L = 1/q_L (final Norm) | 1,   r_{l-1} = a_l^2 r_l + b_l^2 r_l
//! ```
//!
//! (split into token mean and fluctuation for token-mixing branches). Sampled:
//! `||dL/dx_l||^2 / (n d)` for one Gaussian output gradient.

use super::{Info, Layers, Needs, Put, Reach, Scale};
use crate::monte_carlo::measure::resolved;

/// Definition.
pub static INFO: Info = Info {
    name: "grad_sq",
    about: "mean-square gradient at x_l for an isotropic output gradient",
    layers: Layers::Stream,
    source: None,
    needs: Needs {
        backward: true,
        ..Needs::FORWARD
    },
    reach: Reach::Backward,
    scale: Scale::Linear,
    undefined: "0/0 in a norm's Jacobian at a zero input",
};

/// `r_l`.
pub fn closed_form(q: &crate::theory::Quantities, l: usize, put: Put) {
    put(None, q.mf.grad[l].value());
}

/// `||dL/dx_l||^2 / (n d)`.
pub fn sampled(q: &crate::monte_carlo::Quantities, l: usize, put: Put) {
    if let Some(g) = q.grad_sq[l] {
        put(None, resolved(g) / (q.tokens * q.width));
    }
}
