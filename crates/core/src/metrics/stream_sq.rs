//! `stream_sq`: the per-coordinate second moment of the stream (`docs/theory.md`, "The metrics"),
//!
//! ```text
//! q_l = E||x_l||^2 / d,   l = 0..=L.
//! ```
//!
//! Closed form: the mean-field recursion's `q_l` (`docs/theory.md`, "The mean-field closed form"). Sampled:
//! `sum_t ||x_{l,t}||^2 / (n d)` over the network's n tokens.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::metrics::sampled::resolved;
use crate::theory::logsum::ln_beyond_f64;

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
    title: "Stream second moment",
    keeps: Keeps::STREAM,
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `q_l`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.q[l].value());
}

/// `||x_l||_F^2 / (n d)`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    put(None, resolved(q.energy(l)) / (q.tokens * q.width));
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.q[l].ln())
}
