//! Gauss-Hermite quadrature for the standard normal, `E[f(Z)] ~ sum_i w_i f(z_i)`, by the
//! Golub-Welsch method: the nodes are the eigenvalues of the Jacobi matrix of the probabilists'
//! Hermite polynomials (off-diagonal `sqrt(k)`), the weights the squared first components of
//! its eigenvectors (Golub and Welsch 1969).

use nalgebra::DMatrix;
use std::sync::OnceLock;

/// Nodes and weights of an n-point rule; the weights sum to 1.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Nodes z_i.
    pub nodes: Vec<f64>,
    /// Weights w_i.
    pub weights: Vec<f64>,
}

impl Rule {
    /// Builds the n-point rule (exact for polynomials of degree < 2n).
    pub fn new(n: usize) -> Self {
        let mut j = DMatrix::<f64>::zeros(n, n);
        for k in 1..n {
            let b = (k as f64).sqrt();
            j[(k - 1, k)] = b;
            j[(k, k - 1)] = b;
        }
        let eig = j.symmetric_eigen();
        let mut pairs: Vec<(f64, f64)> = (0..n)
            .map(|i| (eig.eigenvalues[i], eig.eigenvectors[(0, i)].powi(2)))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        Rule {
            nodes: pairs.iter().map(|p| p.0).collect(),
            weights: pairs.iter().map(|p| p.1 / total).collect(),
        }
    }

    /// `E[f(Z)]` for `Z ~ N(0, 1)`.
    pub fn expect(&self, f: impl Fn(f64) -> f64) -> f64 {
        self.nodes
            .iter()
            .zip(&self.weights)
            .map(|(&z, &w)| w * f(z))
            .sum()
    }
}

/// Number of nodes of the shared rule.
pub const NODES: usize = 96;

/// The shared 96-point rule, built once.
pub fn standard() -> &'static Rule {
    static RULE: OnceLock<Rule> = OnceLock::new();
    RULE.get_or_init(|| Rule::new(NODES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_moments_are_exact() {
        // E Z^2 = 1, E Z^4 = 3, E Z^6 = 15: exact for degree < 2n.
        let r = Rule::new(10);
        assert!((r.expect(|z| z * z) - 1.0).abs() < crate::tolerance::ACCUMULATED);
        assert!((r.expect(|z| z.powi(4)) - 3.0).abs() < crate::tolerance::QUADRATURE_Z4);
        assert!((r.expect(|z| z.powi(6)) - 15.0).abs() < crate::tolerance::QUADRATURE_Z6);
        assert!(r.expect(|z| z.powi(3)).abs() < crate::tolerance::ACCUMULATED);
    }
}
