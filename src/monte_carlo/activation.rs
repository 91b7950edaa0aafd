//! Pointwise activations for the sampled MLPs (the closed form's kernels are in
//! [`crate::branch::activation`]).

use crate::branch::Activation;
use crate::branch::activation::{gelu, gelu_prime};

/// `phi(x)`.
pub fn act(a: Activation, x: f64) -> f64 {
    match a {
        Activation::Relu => x.max(0.0),
        Activation::Gelu => gelu(x),
    }
}

/// `phi'(x)` (ReLU: 1 for x > 0, else 0).
pub fn act_prime(a: Activation, x: f64) -> f64 {
    match a {
        Activation::Relu => {
            if x > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        Activation::Gelu => gelu_prime(x),
    }
}
