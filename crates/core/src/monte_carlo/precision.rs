//! The float type a Monte Carlo run computes in (`--precision`).
//!
//! `f64` (the default) is what every table in `data/` was made with and what the exact
//! comparisons against the closed form use. `f32` runs the matrix products and activations in
//! single precision (faer's f32 `matmul`, [`normscope_numeric::gemm`]), with statistics and reductions
//! accumulated in f64 ([`normscope_numeric::gemm::Real::as_f64`]). Both precisions draw the same weights
//! from the same stream (an f32 network is the f64 one rounded), so the precision is not part
//! of the configuration text that seeds the networks ([`super::McConfig::canonical`]) and the
//! two can be compared network by network.

use crate::{Error, Result};

/// The float type of the sampled networks.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::monte_carlo::Precision;
///
/// assert_eq!(Precision::default(), Precision::F64);
/// assert_eq!(Precision::parse("single")?, Precision::F32);
/// assert_eq!(Precision::parse(" Float64 ")?, Precision::F64);
/// assert_eq!(Precision::F32.name(), "f32");
/// assert_eq!(Precision::F32.torch_dtype(), "float32");
/// assert_eq!(Precision::ALL.map(Precision::bytes), [8, 4]);
/// assert!(Precision::parse("f16").unwrap_err().to_string().contains("--precision"));
/// # Ok(())
/// # }
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Precision {
    /// IEEE double precision (53-bit significand): the default, bit-reproducible tables.
    #[default]
    F64,
    /// IEEE single precision (24-bit significand) for the products and activations; sums of
    /// squares and every statistic in f64.
    F32,
}

impl Precision {
    /// Every precision, in `--help` order.
    pub const ALL: [Precision; 2] = [Precision::F64, Precision::F32];

    /// The name on the command line and in outputs: `f64` or `f32`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }

    /// Parses `f64` or `f32` (also `float64`, `float32`, `double`, `single`).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f64" | "float64" | "double" => Ok(Precision::F64),
            "f32" | "float32" | "single" => Ok(Precision::F32),
            _ => Err(Error::invalid("--precision", s, "f64 or f32")),
        }
    }

    /// PyTorch's name of its dtype: `float64` or `float32` (the reference scripts' `--dtype`).
    pub fn torch_dtype(self) -> &'static str {
        match self {
            Precision::F64 => "float64",
            Precision::F32 => "float32",
        }
    }

    /// Bytes per value.
    pub fn bytes(self) -> usize {
        match self {
            Precision::F64 => 8,
            Precision::F32 => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_name_the_flag() {
        for p in Precision::ALL {
            assert_eq!(Precision::parse(p.name()).unwrap(), p);
        }
        let e = Precision::parse("f16").unwrap_err().to_string();
        assert!(e.contains("--precision") && e.contains("f64 or f32"), "{e}");
    }
}
