//! Path lengths (Veit et al. 2016, "Residual Networks Behave Like Ensembles of Relatively
//! Shallow Networks"). Expanding the end-to-end Jacobian of blocks `1..=l` into its `2^l`
//! paths, the share of its mean-square norm carried by paths through exactly k branches is, in
//! the mean field, a Poisson-binomial law with success probabilities `p_i = b_i^2/(a_i^2+b_i^2)`
//! (THEORY.md section 5). `eff_depth_l = sum_{i<=l} p_i` is its mean.

/// Entries below this probability are dropped from the edges of the distribution (they are
/// below what a CSV row can usefully carry and would make deep sweeps quadratic in depth).
pub const PRUNE: f64 = 1e-300;

/// Largest layer for which `path_len` is computed: the exact recursion costs
/// O(l * width of the distribution).
pub const MAX_PATH_LAYER: usize = 100_000;

/// The Poisson-binomial distribution of path lengths, updated one block at a time.
#[derive(Clone, Debug)]
pub struct PathLengths {
    /// Index of `pmf[0]`: the shortest path length still carried.
    pub offset: usize,
    /// Probabilities of lengths `offset..offset + pmf.len()`.
    pub pmf: Vec<f64>,
}

impl Default for PathLengths {
    fn default() -> Self {
        PathLengths {
            offset: 0,
            pmf: vec![1.0],
        }
    }
}

impl PathLengths {
    /// Adds one block whose branch is taken with probability p:
    /// `P'(k) = (1 - p) P(k) + p P(k - 1)`.
    pub fn push(&mut self, p: f64) {
        let q = 1.0 - p;
        let n = self.pmf.len();
        self.pmf.push(0.0);
        for k in (0..=n).rev() {
            let stay = if k < n { q * self.pmf[k] } else { 0.0 };
            let step = if k > 0 { p * self.pmf[k - 1] } else { 0.0 };
            self.pmf[k] = stay + step;
        }
        let lead = self.pmf.iter().take_while(|&&v| v < PRUNE).count();
        if lead > 0 && lead < self.pmf.len() {
            self.pmf.drain(..lead);
            self.offset += lead;
        }
        while self.pmf.len() > 1 && *self.pmf.last().unwrap() < PRUNE {
            self.pmf.pop();
        }
    }

    /// `(k, P(K = k))` for the carried lengths.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.pmf
            .iter()
            .enumerate()
            .map(move |(i, &v)| (self.offset + i, v))
    }

    /// Mean path length.
    pub fn mean(&self) -> f64 {
        self.iter().map(|(k, v)| k as f64 * v).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_case() {
        // p = 1/2 for 4 blocks: Binomial(4, 1/2) = (1, 4, 6, 4, 1)/16.
        let mut d = PathLengths::default();
        for _ in 0..4 {
            d.push(0.5);
        }
        let v: Vec<f64> = d.iter().map(|x| x.1 * 16.0).collect();
        assert_eq!(v.len(), 5);
        for (a, b) in v.iter().zip([1.0, 4.0, 6.0, 4.0, 1.0]) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!((d.mean() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn deep_distribution_stays_normalized_and_pruned() {
        let mut d = PathLengths::default();
        for _ in 0..20_000 {
            d.push(0.5);
        }
        let total: f64 = d.iter().map(|x| x.1).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert!(d.pmf.len() < 20_000);
        assert!((d.mean() - 10_000.0).abs() < 1e-6);
    }
}
