//! # normscope-numeric
//!
//! The numeric layer beneath normscope's engines: the float trait and the products
//! ([`gemm`]: faer's GEMM for f32, [`exact_dgemm`]'s bit-exact re-implementation of
//! matrixmultiply 0.3.11's `dgemm` for f64, with its AVX-512 kernel), the seeded generator
//! ([`rng`]: xoshiro256++ with splitmix64 seeding), standard normals ([`normal`]: the ziggurat
//! of `rand_distr`, bit for bit), sampling estimates with Student-t intervals ([`estimate`]),
//! f32 `e^x` with glibc's bits, eight at a time ([`expf`]), the processor at hand and its caches ([`cpu`]), and the test suites' named tolerances
//! ([`tolerance`]).
//!
//! This is the only crate of the workspace allowed `unsafe` (SIMD intrinsics and the raw
//! pointers of the GEMM kernels, plus the two libc calls in [`sys`]); every other crate
//! carries `#![deny(unsafe_code)]`. Nothing here imports from the crates above it.

pub mod cpu;
pub mod estimate;
pub mod exact_dgemm;
pub mod expf;
pub mod gemm;
pub mod normal;
pub mod rng;
pub mod sys;
pub mod tolerance;

pub use gemm::Real;
