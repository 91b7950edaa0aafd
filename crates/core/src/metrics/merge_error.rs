//! `merge_error`: the seeds' key approximation `F_{l+1}(N(x_l)) ~ F_{l+1}(N(x_{l-1}))`
//! (`docs/theory.md`, "The metrics"), with N block l+1's branch input, l = 1..=L-1:
//!
//! ```text
//! ||F_{l+1}(N(x_l)) - F_{l+1}(N(x_{l-1}))||^2 / ||F_{l+1}(N(x_l))||^2.
//! ```
//!
//! Closed form: from the pair kernel of `F_{l+1}` at the moments of the two inputs
//! ([`crate::theory::MeanField`]). Sampled: `F_{l+1}` evaluated on both inputs with the
//! network's own weights.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::metrics::sampled::ratio;
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "merge_error",
    about: "||F_{l+1}(N(x_l)) - F_{l+1}(N(x_{l-1}))||^2 / ||F_{l+1}(N(x_l))||^2",
    layers: Layers::Interior,
    source: None,
    needs: Needs {
        merge: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the branch output is zero (g = 0 or beta = 0, so its relative error is 0/0)",
    title: "Merge error of adjacent layers",
    keeps: Keeps {
        merge: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// From the pair kernel.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.merge_error[l].value());
}

/// `F_{l+1}` on block l+1's branch input of `x_{l-1}`, against its output on `x_l`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some((diff, f)) = q.merge[l] {
        put(None, ratio(diff, f));
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.merge_error[l].ln())
}
