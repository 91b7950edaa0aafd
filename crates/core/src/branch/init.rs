//! Initialization schemes, summarized by the fan-in gain of a matrix: `sigma^2 = Var(W_ij) *
//! fan_in`, so that `E||W u||^2 / ||u||^2 = sigma^2 * fan_out / fan_in`, and a fan_in -> fan_out
//! matrix maps per-coordinate second moment q to `sigma^2 q`.

use crate::{Error, Result};
use statrs::distribution::{Continuous, ContinuousCDF, Normal};

/// An init scheme.
///
/// # Examples
///
/// A 4 -> 4 matrix: Xavier's variance is `2/(4 + 4) = 0.25` (fan-in gain 1), He's `2/4 = 0.5`
/// (gain 2), PyTorch's default `1/(3 * 4)` (gain 1/3). BERT's is `0.02^2` times the variance of
/// a standard normal truncated at +-2, `1 - 4 phi(2)/(2 Phi(2) - 1) = 0.7737413`.
///
/// ```rust
/// use normscope_core::branch::Init;
///
/// assert_eq!(Init::Xavier.variance(4.0, 4.0), 0.25);
/// assert_eq!(Init::Xavier.fan_in_gain(4.0, 4.0), 1.0);
/// assert_eq!(Init::He.fan_in_gain(4.0, 16.0), 2.0);
/// assert!((Init::TorchDefault.fan_in_gain(4.0, 4.0) - 1.0 / 3.0).abs() < 1e-15);
/// assert!((Init::Bert.variance(4.0, 4.0) / 0.0004 - 0.7737413).abs() < 1e-7);
/// assert_eq!(Init::parse("Glorot")?, Init::Xavier);
/// assert_eq!(Init::parse("kaiming")?.name(), "he");
/// assert_eq!(Init::TorchDefault.label(), "PyTorch default");
/// assert!(Init::parse("orthogonal").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Xavier/Glorot (normal or uniform): `Var = 2/(fan_in + fan_out)` (Glorot and Bengio 2010).
    Xavier,
    /// He/Kaiming normal, fan-in mode, ReLU gain: `Var = 2/fan_in` (He et al. 2015).
    He,
    /// PyTorch's `nn.Linear` default, `kaiming_uniform_(a = sqrt 5)`, i.e.
    /// `U(-1/sqrt(fan_in), 1/sqrt(fan_in))`: `Var = 1/(3 fan_in)`.
    TorchDefault,
    /// BERT: normal with std 0.02 truncated at two standard deviations (Devlin et al. 2019,
    /// TensorFlow `truncated_normal_initializer`): `Var = 0.02^2 (1 - 4 phi(2)/(2 Phi(2) - 1))`.
    /// Not scale-free: the gain depends on the width d.
    Bert,
}

/// Standard deviation of BERT's initializer before truncation.
pub const BERT_STD: f64 = 0.02;

impl Init {
    /// Names accepted by `--init`.
    pub const NAMES: &'static str = "xavier, he, torch-default, bert";

    /// Every scheme, in help-text order.
    pub const ALL: [Init; 4] = [Init::Xavier, Init::He, Init::TorchDefault, Init::Bert];

    /// Other names `--init` accepts for this scheme.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Init::Xavier => &["glorot"],
            Init::He => &["kaiming"],
            Init::TorchDefault => &["torch"],
            Init::Bert => &[],
        }
    }

    /// Parses a name or alias, ignoring ASCII case (`He`, `Xavier`, `Glorot`).
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|i| i.name() == lower || i.aliases().contains(&lower.as_str()))
            .ok_or_else(|| Error::Unknown {
                kind: "init",
                name: s.to_string(),
                valid: Self::NAMES.to_string(),
            })
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Init::Xavier => "xavier",
            Init::He => "he",
            Init::TorchDefault => "torch-default",
            Init::Bert => "bert",
        }
    }

    /// Typeset name for tables and captions, e.g. `He`.
    pub fn label(self) -> &'static str {
        match self {
            Init::Xavier => "Xavier",
            Init::He => "He",
            Init::TorchDefault => "PyTorch default",
            Init::Bert => "BERT",
        }
    }

    /// Entry variance of a `fan_in -> fan_out` matrix.
    pub fn variance(self, fan_in: f64, fan_out: f64) -> f64 {
        match self {
            Init::Xavier => 2.0 / (fan_in + fan_out),
            Init::He => 2.0 / fan_in,
            Init::TorchDefault => 1.0 / (3.0 * fan_in),
            Init::Bert => BERT_STD * BERT_STD * truncation_factor(2.0),
        }
    }

    /// Fan-in gain `sigma^2 = Var * fan_in`.
    pub fn fan_in_gain(self, fan_in: f64, fan_out: f64) -> f64 {
        self.variance(fan_in, fan_out) * fan_in
    }
}

/// Variance of a standard normal truncated to `[-a, a]`: `1 - 2 a phi(a) / (2 Phi(a) - 1)`.
pub(crate) fn truncation_factor(a: f64) -> f64 {
    let n = Normal::standard();
    1.0 - 2.0 * a * n.pdf(a) / (2.0 * n.cdf(a) - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_normal_variance_matches_reference() {
        // Var of N(0,1) truncated at +-2 is 0.7737413... (Johnson, Kotz, Balakrishnan 1994,
        // eq. 13.134 with a = -b = 2).
        assert!(
            (truncation_factor(2.0) - 0.773_741_3).abs()
                < normscope_numeric::tolerance::PRINTED_7_DIGITS
        );
    }

    #[test]
    fn xavier_square_matrix_has_unit_gain() {
        assert!(
            (Init::Xavier.fan_in_gain(512.0, 512.0) - 1.0).abs()
                < normscope_numeric::tolerance::ROUNDING
        );
        assert!(
            (Init::He.fan_in_gain(512.0, 2048.0) - 2.0).abs()
                < normscope_numeric::tolerance::ROUNDING
        );
    }
}
