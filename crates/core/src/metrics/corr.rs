//! `corr`: the token correlation `c_l` (`docs/theory.md`, "The metrics"; rank collapse, Noci et al. 2022),
//! l = 0..=L.
//!
//! Closed form: the mean-field recursion's `c_l` (`docs/theory.md`, "The mean-field closed form"). Sampled, with
//! `S = ||sum_t x_{l,t}||^2` and `E = sum_t ||x_{l,t}||^2`:
//!
//! ```text
//! corr = (S - E) / ((n - 1) E)
//! ```
//!
//! the mean over token pairs `t != s` of `<x_t, x_s>` relative to the mean `||x_t||^2`
//! (undefined for one token, which writes no row).

use super::{Info, Keeps, Layers, Needs, Put, Reach, Scale};
use crate::metrics::sampled::ratio;

/// Definition.
pub static INFO: Info = Info {
    name: "corr",
    about: "token correlation c_l (rank collapse)",
    layers: Layers::Stream,
    source: None,
    needs: Needs {
        column_sum: true,
        ..Needs::FORWARD
    },
    reach: Reach::Forward,
    scale: Scale::Linear,
    undefined: "the correlation of zero tokens (q_l = 0)",
    title: "Token correlation",
    keeps: Keeps::STREAM,
    beyond_f64: None,
    correction: None,
    absent_is_zero: false,
    min_tokens: Some((2, "a correlation between tokens needs two")),
};

/// `c_l`.
pub fn closed_form(q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
    put(None, q.mf.corr[l]);
}

/// `(S - E) / ((n - 1) E)`.
pub fn sampled(q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
    let n = q.tokens;
    if n >= 2.0 {
        let e = q.energy(l);
        if let Some(s) = q.column_sum_sq[l] {
            put(None, ratio(s - e, (n - 1.0) * e));
        }
    }
}
