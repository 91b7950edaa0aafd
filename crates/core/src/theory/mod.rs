//! The closed-form engine ([`ClosedForm`]): the mean-field recursion ([`mean_field`]) and what
//! it keeps ([`layered`]),
//! path-length laws ([`paths`]), and the quantities its metrics read ([`closed_form`]). The exact
//! symbolic expansion lives in [`crate::symbolic`].

pub mod closed_form;
pub mod finite_width;
pub mod layered;
pub mod logsum;
pub mod mean_field;
pub mod paths;
pub mod split;

pub use closed_form::{ClosedForm, Quantities};
pub use layered::{Keep, Layered};
pub use mean_field::{Inputs, MeanField};
