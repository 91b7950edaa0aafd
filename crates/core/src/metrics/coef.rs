//! `coef`: the coefficient `C_{l,j}` of source j in the expansion (`docs/theory.md`, "The metrics")
//!
//! ```text
//! x_l = sum_{j=0..=l} C_{l,j} B_j,   B_0 = x_0,  B_j = F_j(...) the raw output of branch j,
//! ```
//!
//! with `source` = j. Closed form: `C_{l,j}` from the log-space prefix sums of the recursion
//! ([`crate::theory::MeanField::coef`]). Sampled: the token mean of the exact per-token
//! coefficient `C_{l,j,t}` (a norm is a centering followed by a per-token scalar, so the
//! decomposition holds exactly at finite width; [`crate::monte_carlo::network`]).

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "coef",
    about: "C_{l,j} in x_l = sum_j C_{l,j} B_j (source = j)",
    layers: Layers::Stream,
    source: Some("j"),
    needs: Needs {
        decomposition: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "0/0 in the block's skip or branch scale",
    title: "C_{l,j} in x_l = sum_j C_{l,j} B_j (source = j)",
    keeps: Keeps {
        sources: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `C_{l,j}`, j = 0..=l.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    for j in 0..=l {
        put(Some(j), q.mf.coef(l, j));
    }
}

/// `mean_t C_{l,j,t}`, j = 0..=l.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(d) = q.decomposition.get(&l) {
        for (j, &c) in d.coef.iter().enumerate() {
            put(Some(j), c);
        }
    }
}

/// The recursion carries it per source in log space, so a value beyond f64's range either way
/// is a reason with its exact log: an overflow, or an underflow below f64's smallest normal
/// number (a missing cell, as `skip_gain`'s; an exact zero, ln = -inf, stays a written 0).
fn beyond_f64(
    q: &crate::metrics::closed::Quantities,
    l: usize,
    s: Option<usize>,
) -> Option<String> {
    s.and_then(|j| ln_beyond_f64(q.mf.ln_coef(l, j)))
}
