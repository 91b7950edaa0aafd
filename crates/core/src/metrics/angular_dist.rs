//! `angular_dist`: the angle between consecutive streams as a fraction of pi (`docs/theory.md`,
//! "The metrics"), derived from `cos_prev` by [`from_cos`] in both engines:
//!
//! ```text
//! angular_dist_l = arccos(cos_prev_l) / pi.
//! ```
//!
//! (Sampled: per network, before averaging over networks.)

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};

/// Definition.
pub static INFO: Info = Info {
    name: "angular_dist",
    about: "arccos(cos_prev) / pi",
    layers: Layers::Blocks,
    source: None,
    needs: Needs::FORWARD,
    reach: Reach::Forward,
    scale: Scale::Angle,
    undefined: "the angle to a zero stream (x_l or x_{l-1} is 0)",
    title: "Angular distance of adjacent layers",
    keeps: Keeps::STREAM,
    beyond_f64: None,
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `arccos(clamp(cos, -1, 1)) / pi`.
pub fn from_cos(cos: f64) -> f64 {
    cos.clamp(-1.0, 1.0).acos() / std::f64::consts::PI
}

/// From the closed form's `cos_prev`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, from_cos(q.mf.cos_prev[l]));
}

/// From this network's `cos_prev`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    put(None, from_cos(q.cos_prev(l)));
}
