//! `weight_grad_sq`: the mean-square gradient of block l's last weight matrix for one token
//! (`docs/theory.md`, "The metrics"):
//!
//! ```text
//! E||dL/dW_last||_F^2 / d^2 = E||delta_l||^2/d * E||a_l||^2/d
//! ```
//!
//! with `delta_l` the gradient at the branch output and `a_l` the last matrix's input (for
//! token-mixing branches the token mean of delta enters n times). Sampled:
//! `||dL/dW_last||_F^2 / (n d^2)`, the per-token value when token contributions are
//! uncorrelated.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "weight_grad_sq",
    about: "E||dL/dW||_F^2 / d^2 of block l's last weight matrix, per token",
    layers: Layers::Blocks,
    source: None,
    needs: Needs {
        backward: true,
        ..Needs::FORWARD
    },
    reach: Reach::BackwardThroughBlock,
    scale: Scale::Linear,
    undefined: "0/0 in a norm's Jacobian at a zero input",
    title: "Weight gradient",
    keeps: Keeps {
        backward: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: Some(correction),
    absent_is_zero: false,
    min_tokens: None,
};

/// `E||dL/dW_last||^2 / d^2`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.weight_grad[l].value());
}

/// `||dL/dW_last||_F^2 / (n d^2)`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(gw) = q.last_weight_grad_sq[l] {
        put(None, gw / (q.tokens * q.width * q.width));
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.weight_grad[l].ln())
}

/// The weight-gradient factor at blocks `1..=L`.
fn correction(c: &crate::theory::finite_width::Correction, layer: usize) -> Option<f64> {
    (layer >= 1).then(|| c.ln_weight[layer].exp())
}
