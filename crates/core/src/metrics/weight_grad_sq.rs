//! `weight_grad_sq`: the mean-square gradient of block l's last weight matrix for one token
//! (THEORY.md section 5):
//!
//! ```text
//! E||dL/dW_last||_F^2 / d^2 = E||delta_l||^2/d * E||a_l||^2/d
//! ```
//!
//! with `delta_l` the gradient at the branch output and `a_l` the last matrix's input (for
//! token-mixing branches the token mean of delta enters n times). Sampled:
//! `||dL/dW_last||_F^2 / (n d^2)`, the per-token value when token contributions are
//! uncorrelated.

use super::{Info, Layers, Needs, Put, Reach, Scale};

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
};

/// `E||dL/dW_last||^2 / d^2`.
pub fn closed_form(q: &crate::theory::Quantities, l: usize, put: Put) {
    put(None, q.mf.weight_grad[l].value());
}

/// `||dL/dW_last||_F^2 / (n d^2)`.
pub fn sampled(q: &crate::monte_carlo::Quantities, l: usize, put: Put) {
    if let Some(gw) = q.last_weight_grad_sq[l] {
        put(None, gw / (q.tokens * q.width * q.width));
    }
}
