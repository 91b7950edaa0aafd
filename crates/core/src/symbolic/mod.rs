//! Exact symbolic expansion of the recursion: `x_L = sum_j C_{L,j} B_j` with every
//! coefficient an exact expression in (alpha, beta, g, lambda, q0), and its rendering
//! ([`render`]).

pub mod expand;
pub mod expr;
pub mod poly;
pub mod render;

pub use expand::{Expansion, Subs, expand};
pub use expr::Expr;
pub use poly::{Poly, Sym};
