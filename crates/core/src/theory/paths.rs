//! Path lengths (Veit et al. 2016, "Residual Networks Behave Like Ensembles of Relatively
//! Shallow Networks"). Expanding the end-to-end Jacobian of blocks `1..=l` into its `2^l`
//! paths, the share of its mean-square norm carried by paths through exactly k branches is, in
//! the mean field, a Poisson-binomial law with success probabilities `p_i = b_i^2/(a_i^2+b_i^2)`
//! (docs/theory.md, "The metrics"). `eff_depth_l = sum_{i<=l} p_i` is its mean.
//!
//! Where a branch treats the token-mean part of a tangent differently from its fluctuation
//! (uniform attention), a path's weight depends on which branches came before, and the law is
//! the split recursion of [`SplitPaths`]: per path length k, the pair (mean, fluct) energy,
//! `T'_k = a^2 T_k + (b_mean^2, b_fluct^2) T_{k-1}`. With `b_mean^2 = b_fluct^2` it is the
//! Poisson-binomial law above.

/// Entries below this probability are dropped from the edges of the distribution (they are
/// below what a CSV row can usefully carry and would make deep sweeps quadratic in depth).
pub const PMF_FLOOR: f64 = 1e-300;

/// Largest layer for which `path_len` is computed: the exact recursion costs
/// O(l * width of the distribution).
pub const MAX_PATH_LAYER: usize = 100_000;

/// The Poisson-binomial distribution of path lengths, updated one block at a time.
#[derive(Clone, Debug)]
pub(crate) struct PathLengths {
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
        let lead = self.pmf.iter().take_while(|&&v| v < PMF_FLOOR).count();
        if lead > 0 && lead < self.pmf.len() {
            self.pmf.drain(..lead);
            self.offset += lead;
        }
        while self.pmf.len() > 1 && *self.pmf.last().unwrap() < PMF_FLOOR {
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

    /// Mean path length (the tests' check of the law; the engines stream
    /// [`SplitPaths::mean_length`]).
    #[cfg(test)]
    pub(crate) fn mean(&self) -> f64 {
        self.iter().map(|(k, v)| k as f64 * v).sum()
    }
}

/// Path lengths with split (token-mean, fluctuation) energies, renormalized after every block
/// (only shares are reported, so depth cannot overflow or underflow them).
///
/// # Examples
///
/// One block with skip gain 1 and branch gain 1 on both parts: half of the energy takes the
/// branch, so the mean path length is 1/2.
///
/// ```rust
/// use normscope_core::theory::paths::SplitPaths;
/// let mut p = SplitPaths::new(0.25);
/// assert_eq!((p.offset, p.pmf.clone()), (0, vec![(0.25, 0.75)]));
/// let mut q = p.clone();
/// q.push_mean(1.0, 1.0, 1.0);
/// assert_eq!(q.mean_length(), 0.5);
/// p.push(1.0, 1.0, 1.0);
/// assert_eq!(p.pmf, vec![(0.125, 0.375), (0.125, 0.375)]);
/// ```
#[derive(Clone, Debug)]
pub struct SplitPaths {
    /// Index of `pmf[0]`.
    pub offset: usize,
    /// `(mean, fluct)` energy of the paths of each length, summing to 1.
    pub pmf: Vec<(f64, f64)>,
    /// For the mean length without the O(l) table: `s = sum_k T_k` (normalized), the
    /// deviation `dev = sum_k k T_k - mean s`, and the mean as a Neumaier-compensated sum of
    /// its per-block increments (exactly p_l when the gains are equal).
    s: (f64, f64),
    dev: (f64, f64),
    mean: (f64, f64),
}

impl SplitPaths {
    /// Starts from a tangent whose energy has share `mean` in the token mean.
    pub fn new(mean: f64) -> Self {
        SplitPaths {
            offset: 0,
            pmf: vec![(mean, 1.0 - mean)],
            s: (mean, 1.0 - mean),
            dev: (0.0, 0.0),
            mean: (0.0, 0.0),
        }
    }

    /// Updates only the mean path length: with J the block's Jacobian and B its branch part,
    /// `S' = J S` and `Q' = J Q + B S` for `Q = sum_k k T_k = mean S + dev`, so the mean grows
    /// by `(|J dev| + |B S|)/|J S|` (|.| the total of both parts). O(1) per block.
    pub fn push_mean(&mut self, a2: f64, bm: f64, bf: f64) {
        let (sm, sf) = self.s;
        let (dm, df) = self.dev;
        let js = ((a2 + bm) * sm, (a2 + bf) * sf);
        let z = js.0 + js.1;
        let jd = ((a2 + bm) * dm, (a2 + bf) * df);
        let bs = (bm * sm, bf * sf);
        let inc = (jd.0 + jd.1 + bs.0 + bs.1) / z;
        self.dev = (
            (jd.0 + bs.0 - inc * js.0) / z,
            (jd.1 + bs.1 - inc * js.1) / z,
        );
        self.s = (js.0 / z, js.1 / z);
        let (acc, comp) = self.mean;
        let t = acc + inc;
        let c = if acc.abs() >= inc.abs() {
            (acc - t) + inc
        } else {
            (inc - t) + acc
        };
        self.mean = (t, comp + c);
    }

    /// Mean path length from [`SplitPaths::push_mean`].
    pub fn mean_length(&self) -> f64 {
        self.mean.0 + self.mean.1
    }

    /// Updates the whole distribution (O(width) per block), pruning edge lengths whose share
    /// falls below [`PMF_FLOOR`].
    pub fn push(&mut self, a2: f64, bm: f64, bf: f64) {
        let n = self.pmf.len();
        self.pmf.push((0.0, 0.0));
        for k in (0..=n).rev() {
            let stay = if k < n { self.pmf[k] } else { (0.0, 0.0) };
            let step = if k > 0 { self.pmf[k - 1] } else { (0.0, 0.0) };
            self.pmf[k] = (a2 * stay.0 + bm * step.0, a2 * stay.1 + bf * step.1);
        }
        let z: f64 = self.pmf.iter().map(|p| p.0 + p.1).sum();
        for p in self.pmf.iter_mut() {
            *p = (p.0 / z, p.1 / z);
        }
        let lead = self
            .pmf
            .iter()
            .take_while(|p| p.0 + p.1 < PMF_FLOOR)
            .count();
        if lead > 0 && lead < self.pmf.len() {
            self.pmf.drain(..lead);
            self.offset += lead;
        }
        while self.pmf.len() > 1 && self.pmf.last().is_some_and(|p| p.0 + p.1 < PMF_FLOOR) {
            self.pmf.pop();
        }
    }

    /// `(k, share of paths of length k)`.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.pmf
            .iter()
            .enumerate()
            .map(move |(i, p)| (self.offset + i, p.0 + p.1))
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
            assert!((a - b).abs() < normscope_numeric::tolerance::ACCUMULATED);
        }
        assert!((d.mean() - 2.0).abs() < normscope_numeric::tolerance::ACCUMULATED);
    }

    #[test]
    fn split_paths_reduce_to_poisson_binomial() {
        // Equal gains on both parts: the law is Poisson-binomial with p = b^2/(a^2 + b^2).
        let (mut s, mut p) = (SplitPaths::new(0.1), PathLengths::default());
        for (a2, b2) in [(0.5, 0.5), (1.0, 0.25), (0.3, 0.9)] {
            s.push(a2, b2, b2);
            s.push_mean(a2, b2, b2);
            p.push(b2 / (a2 + b2));
        }
        for ((k1, v1), (k2, v2)) in s.iter().zip(p.iter()) {
            assert_eq!(k1, k2);
            assert!((v1 - v2).abs() < normscope_numeric::tolerance::ROUNDING);
        }
        assert!((s.mean_length() - p.mean()).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN);
    }

    #[test]
    fn uniform_attention_paths_keep_only_the_mean() {
        // Two uniform-attention blocks with skip a^2 = 1, mean gain g, fluct gain 0, starting
        // from share m in the mean: length 0 carries 1, length 1 carries 2 m g, length 2 m g^2
        // (one path through both branches keeps the mean part), before normalization.
        let (m, g) = (0.25, 2.0);
        let mut s = SplitPaths::new(m);
        s.push(1.0, g, 0.0);
        s.push(1.0, g, 0.0);
        let raw = [1.0, 2.0 * m * g, m * g * g];
        let z: f64 = raw.iter().sum();
        for ((_, v), want) in s.iter().zip(raw) {
            assert!((v - want / z).abs() < normscope_numeric::tolerance::ROUNDING);
        }
        let mut t = SplitPaths::new(m);
        t.push_mean(1.0, g, 0.0);
        t.push_mean(1.0, g, 0.0);
        assert!(
            (t.mean_length() - (2.0 * m * g + 2.0 * m * g * g) / z).abs()
                < normscope_numeric::tolerance::ROUNDING_CHAIN
        );
    }

    #[test]
    fn deep_distribution_stays_normalized_and_pruned() {
        let mut d = PathLengths::default();
        for _ in 0..20_000 {
            d.push(0.5);
        }
        let total: f64 = d.iter().map(|x| x.1).sum();
        assert!((total - 1.0).abs() < normscope_numeric::tolerance::PMF_TOTAL);
        assert!(d.pmf.len() < 20_000);
        assert!((d.mean() - 10_000.0).abs() < normscope_numeric::tolerance::PMF_MEAN);
    }
}
