//! `grad_sq`: the mean-square gradient at `x_l` per coordinate for an output gradient with
//! iid unit-variance entries (`docs/theory.md`, "The mean-field closed form" and "The metrics"):
//!
//! ```text
//! r_L = 1/q_L (final Norm) | 1,   r_{l-1} = a_l^2 r_l + b_l^2 r_l
//! ```
//!
//! (split into token mean and fluctuation for token-mixing branches). Sampled:
//! `||dL/dx_l||^2 / (n d)` for one Gaussian output gradient.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::metrics::sampled::resolved;
use crate::theory::logsum::ln_beyond_f64;

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
    title: "Mean-square gradient",
    keeps: Keeps {
        backward: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: Some(correction),
    absent_is_zero: false,
    min_tokens: None,
};

/// `r_l`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.grad[l].value());
}

/// `||dL/dx_l||^2 / (n d)`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(g) = q.grad_sq[l] {
        put(None, resolved(g) / (q.tokens * q.width));
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.grad[l].ln())
}

/// `prod_{i=l+1..L} F_i`.
fn correction(c: &crate::theory::finite_width::Correction, layer: usize) -> Option<f64> {
    Some(c.ln_grad[layer].exp())
}
