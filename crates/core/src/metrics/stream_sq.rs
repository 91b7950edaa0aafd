//! `stream_sq`: the per-coordinate second moment of the stream (THEORY.md section 5),
//!
//! ```text
//! q_l = E||x_l||^2 / d,   l = 0..=L.
//! ```
//!
//! Closed form: the mean-field recursion's `q_l` (THEORY.md section 4). Sampled:
//! `sum_t ||x_{l,t}||^2 / (n d)` over the network's n tokens.

use super::{Info, Layers, Needs, Put, Reach, Scale};
use crate::monte_carlo::measure::resolved;

/// Definition.
pub static INFO: Info = Info {
    name: "stream_sq",
    about: "q_l = E||x_l||^2 / d, the stream's second moment",
    layers: Layers::Stream,
    source: None,
    needs: Needs::FORWARD,
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "0/0 in a norm at a zero input",
};

/// `q_l`.
pub fn closed_form(q: &crate::theory::Quantities, l: usize, put: Put) {
    put(None, q.mf.q[l].value());
}

/// `||x_l||_F^2 / (n d)`.
pub fn sampled(q: &crate::monte_carlo::Quantities, l: usize, put: Put) {
    put(None, resolved(q.energy(l)) / (q.tokens * q.width));
}
