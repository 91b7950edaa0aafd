//! Statistics of the training analyses ("Statistics, stated before the numbers";
//! docs/training.md, "Statistics, fixed before the data"): Wilson intervals for rates ([`wilson`]), Fisher's exact test for two
//! rates ([`fisher`]), Holm's step-down correction ([`holm`]), seeded percentile-bootstrap
//! intervals for medians and other statistics ([`bootstrap`]), least-squares lines ([`ols`]),
//! and the exact sign test for paired differences ([`sign`]), also on interval-censored data.
//!
//! The training-claims ledger's verdicts build on: interval observations, exact or censored,
//! and their paired differences ([`obs`]); the distribution-free confidence interval for a
//! median from order statistics, the sign test's inversion ([`median_ci`]); logarithms of
//! normal probabilities accurate far in the tails ([`normal_tail`]); interval-censored Gaussian
//! regression, the Tobit model generalised ([`censored`]); and the verdict rules every claim
//! goes through, effect and interval first, then supported, conditional, inconclusive or
//! refuted ([`verdict`]).

pub mod bootstrap;
pub mod censored;
pub mod fisher;
pub mod holm;
pub mod median_ci;
pub mod normal_tail;
pub mod obs;
pub mod ols;
pub mod sign;
pub mod verdict;
pub mod wilson;

/// The coverage of every interval here: 95%.
pub const LEVEL: f64 = 0.95;

/// The standard normal quantile `z_{1 - (1 - LEVEL)/2}` (1.959963984540054 for 95%).
pub fn z() -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().inverse_cdf(1.0 - (1.0 - LEVEL) / 2.0)
}
