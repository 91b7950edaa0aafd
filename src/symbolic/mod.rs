//! Exact symbolic expansion of the recursion: `x_L = sum_j C_{L,j} B_j` with every
//! coefficient an exact expression in (alpha, beta, g, lambda, q0).

pub mod expand;
pub mod expr;
pub mod poly;

pub use expand::{Expansion, Subs, expand};
pub use expr::Expr;
pub use poly::{Poly, Sym};
