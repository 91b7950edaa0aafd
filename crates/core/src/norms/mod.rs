//! Normalizers beyond LayerNorm and RMSNorm, as kernels on a `d x n` matrix of `n` columns
//! (tokens, or samples times tokens): the statistics of BatchNorm, InstanceNorm and GroupNorm
//! over blocks of entries ([`grouped`]), BatchNorm's running statistics ([`running`]) and the
//! normalization-free DyT ([`dyt`]) with the Gaussian moments a closed form needs of it
//! ([`dyt_moments`]).
//!
//! Both engines reach them through [`crate::monte_carlo::norm::forward_with`] (`--norm`), and
//! training through [`crate::train::layer_norm::NormLayer`]; the engines' LayerNorm and
//! RMSNorm are [`crate::monte_carlo::norm`], which [`grouped`] reproduces bit for bit with one
//! group of all channels and blocks of one column.

pub mod dyt;
pub mod dyt_moments;
pub mod grouped;
pub mod running;
