//! `branch_weight`: the share of the stream's energy carried by source j (`docs/theory.md`, "The metrics")
//!
//! ```text
//! w_{l,j} = C_{l,j}^2 E||B~_j||^2 / E||x_l||^2,   sum_j w_{l,j} = 1 in expectation,
//! ```
//!
//! with `source` = j. Closed form: `C_{l,j}^2 m_j / q_l` in log space
//! ([`crate::theory::MeanField::branch_weight`]). Sampled: `sum_t |C_{l,j,t} B~_{j,t}|^2 /
//! ||x_l||^2` from the exact per-token decomposition.

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::theory::logsum::ln_beyond_f64;

/// Definition.
pub static INFO: Info = Info {
    name: "branch_weight",
    about: "share of E||x_l||^2 carried by source j (source = j)",
    layers: Layers::Stream,
    source: Some("j"),
    needs: Needs {
        decomposition: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the share of a zero stream (E||x_l||^2 = 0)",
    title: "Branch weight",
    keeps: Keeps {
        sources: true,
        ..Keeps::STREAM
    },
    beyond_f64: Some(beyond_f64),
    correction: None,
    absent_is_zero: false,
    min_tokens: None,
};

/// `C_{l,j}^2 m_j / q_l`, j = 0..=l.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    for j in 0..=l {
        put(Some(j), q.mf.branch_weight(l, j));
    }
}

/// `sum_t |C_{l,j,t} B~_{j,t}|^2 / ||x_l||^2`, j = 0..=l.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    if let Some(d) = q.decomposition.get(&l) {
        for (j, &w) in d.weight.iter().enumerate() {
            put(Some(j), w);
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
    s.and_then(|j| ln_beyond_f64(q.mf.ln_branch_weight(l, j)))
}
