//! The closed-form engine: the mean-field recursion ([`mean_field`]), path-length laws
//! ([`paths`]), and tidy rows ([`rows`]). The exact symbolic expansion lives in
//! [`crate::symbolic`].

pub mod logsum;
pub mod mean_field;
pub mod paths;
pub mod rows;
pub mod split;

pub use mean_field::{Inputs, MeanField};
