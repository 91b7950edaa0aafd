//! `rel_update`: the relative change of the stream across block l (`docs/theory.md`, "The metrics")
//!
//! ```text
//! ||x_l - x_{l-1}|| / ||x_{l-1}||,   closed form  sqrt((n_l alpha_l - 1)^2 + n_l^2 lambda_l^2 q_br / q_{l-1}).
//! ```
//!
//! Sampled over all tokens of the network.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::metrics::sampled::ratio;

/// Definition.
pub static INFO: Info = Info {
    name: "rel_update",
    about: "||x_l - x_{l-1}|| / ||x_{l-1}||",
    layers: Layers::Blocks,
    source: None,
    needs: Needs {
        step: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Root,
    undefined: "the relative change of a zero stream (x_{l-1} = 0)",
    title: "Relative update",
    keeps: Keeps::STREAM,
    beyond_f64: None,
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// The recursion's root of the ratio of mean squares.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.rel_update[l]);
}

/// `||x_l - x_{l-1}||_F / ||x_{l-1}||_F`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(step) = q.step_sq[l] {
        put(None, ratio(step, q.energy(l - 1)).sqrt());
    }
}
