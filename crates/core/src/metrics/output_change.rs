//! `output_change`: the output's sensitivity to its weights (Liu et al. 2020's amplification
//! effect; `docs/theory.md`, "The metrics")
//!
//! ```text
//! E||f_l(W + delta) - f_l(W)||^2 / (d eps^2),   eps -> 0,
//! ```
//!
//! for independent perturbations of every branch weight with entry variance
//! `eps^2 Var(W_ij)`, `f_l` the depth-l network's output (`x_l`, through the final Norm if the
//! preset has one). Closed form: the forward-tangent recursion of the mean field. Sampled: the
//! exact first-order change (a forward tangent), `||t||^2 / (n d)`.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "output_change",
    about: "output change per unit weight perturbation (Liu et al. 2020)",
    layers: Layers::Stream,
    source: None,
    needs: Needs {
        perturbation: true,
        ..Needs::FORWARD
    },
    reach: Reach::ForwardToOutput,
    scale: Scale::Linear,
    undefined: "0/0 in a norm's Jacobian at a zero input",
    title: "Output change",
    keeps: Keeps::STREAM,
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// The recursion's value.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.output_change[l].value());
}

/// `||t_l||^2 / (n d)` of the first-order output change.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(v) = q.output_change[l] {
        put(None, v);
    }
}

/// The recursion carries it as a magnitude ([`crate::theory::logsum::Mag`]): its logarithm is
/// exact beyond f64's range.
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    _: Option<usize>,
) -> Option<String> {
    ln_beyond_f64(q.mf.output_change[l].ln())
}
