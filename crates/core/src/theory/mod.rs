//! The mean-field mathematics of a stack: the recursion ([`mean_field`]) and what it keeps
//! ([`layered`]), magnitudes in log space ([`logsum`]), path-length laws ([`paths`]), the split
//! of a stream into skip and branch parts ([`split`]), and the finite-width correction's
//! factors ([`finite_width`]). The engine that turns them into a profile is
//! [`crate::closed_form`]; the exact symbolic expansion lives in [`crate::symbolic`].

pub mod finite_width;
pub mod layered;
pub mod logsum;
pub mod mean_field;
pub(crate) mod norm_map;
pub mod paths;
pub mod split;

pub use layered::{Keep, Layered};
pub use mean_field::{Inputs, MeanField};
