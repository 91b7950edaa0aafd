//! The branch F of a block and its closed-form summary (THEORY.md section 3).
//!
//! A branch is summarized by the fan-in gains `sigma^2` of its matrices (see [`init`]) and its
//! *pair kernel*: for two inputs a, b (sequences of tokens) pushed through the same weights,
//! the per-coordinate output moments `E<F(a)_i, F(b)_i>/d` (same token) and
//! `E<F(a)_i, F(b)_k>/d` (different tokens), as functions of the input moments. The forward
//! gain g, the correlation map kappa and the seeds' merge error all come from this one kernel:
//!
//! | branch | same-token output moment | cross-token |
//! |---|---|---|
//! | `linear` `W u` | `s m_same` | `s m_cross` |
//! | `relu-mlp`, `gelu-mlp` `W2 phi(W1 u)` | `s2 E[phi(x)phi(y)]`, `Cov = s1 m_same` | same with `m_cross` |
//! | `uniform-attention` `W_O W_V mean_k u_k` | `sV sO (m_same/n + (1-1/n) m_cross)` | the same |
//! | `cross-attention` `W_O W_V mean_k mem_k` | `sV sO q0 (c0 + (1-c0)/n)` | the same |
//!
//! Branches have no biases. Cross-attention attends uniformly to a fixed memory of n tokens
//! distributed like the input (second moment q0, correlation c0), so it does not depend on the
//! stream.
//!
//! Jacobians act on a tangent (or gradient) of n tokens through its *split*: the token-mean
//! part and the fluctuation around it ([`BranchModel::jacobian_split`]). At infinite width a
//! norm, the skip and a linear branch act on every token alike and keep the split; uniform
//! attention passes only the mean part (gain `sV sO`) and removes the fluctuation;
//! cross-attention passes nothing. An MLP's `D_t` differs per token and mixes the parts, but
//! scales the total by `g_b` whatever the split, and the closed form runs stacks of one branch
//! kind, where the split of an MLP's output is never read.

pub mod activation;
pub mod init;
pub mod quadrature;

pub use activation::Activation;
pub use init::Init;

use crate::{Error, Result};

/// Which function the branch computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchKind {
    /// `F(u) = W u`, one d x d matrix.
    Linear,
    /// `F(u) = W2 relu(W1 u)`, hidden width `ratio * d`.
    ReluMlp,
    /// `F(u) = W2 gelu(W1 u)`, hidden width `ratio * d`.
    GeluMlp,
    /// Self-attention with `W_Q = W_K = 0`: every token gets `W_O W_V` of the token mean.
    UniformAttention,
    /// Attention to a fixed memory sequence, independent of the stream.
    CrossAttention,
}

impl BranchKind {
    /// Names accepted by `--branch` in the closed form.
    pub const NAMES: &'static str =
        "linear, relu-mlp, gelu-mlp, uniform-attention, cross-attention";

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "linear" => BranchKind::Linear,
            "relu-mlp" | "mlp" => BranchKind::ReluMlp,
            "gelu-mlp" => BranchKind::GeluMlp,
            "uniform-attention" => BranchKind::UniformAttention,
            "cross-attention" => BranchKind::CrossAttention,
            _ => {
                return Err(Error::Unknown {
                    kind: "branch",
                    name: s.to_string(),
                    valid: Self::NAMES.to_string(),
                });
            }
        })
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        match self {
            BranchKind::Linear => "linear",
            BranchKind::ReluMlp => "relu-mlp",
            BranchKind::GeluMlp => "gelu-mlp",
            BranchKind::UniformAttention => "uniform-attention",
            BranchKind::CrossAttention => "cross-attention",
        }
    }

    /// Number of matrices DeepNet's beta scales (FFN: both; attention: V and O; linear: one).
    pub fn beta_matrices(self) -> i32 {
        match self {
            BranchKind::Linear => 1,
            _ => 2,
        }
    }

    /// Whether `E||F(u)||^2 / ||u||^2` is the same constant g for every input, so that the
    /// exact symbolic expansion can use one symbol g (linear and ReLU branches are positively
    /// homogeneous; GELU is not, and attention's gain depends on the token correlation).
    pub fn has_constant_gain(self) -> bool {
        matches!(self, BranchKind::Linear | BranchKind::ReluMlp)
    }
}

/// How the branch is built: kind, init, widths and an optional gain override.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BranchConfig {
    /// What the branch computes.
    pub kind: BranchKind,
    /// Init scheme of every matrix.
    pub init: Init,
    /// MLP hidden width / d.
    pub hidden_ratio: f64,
    /// Overrides the derived gain g of the unscaled branch at unit input second moment
    /// (`--gain`); the output matrix is rescaled, the nonlinearity's regime is kept.
    pub gain: Option<f64>,
    /// Width d (only BERT's init depends on it).
    pub width: usize,
    /// Tokens n (attention branches only).
    pub tokens: usize,
}

impl Default for BranchConfig {
    fn default() -> Self {
        BranchConfig {
            kind: BranchKind::Linear,
            init: Init::Xavier,
            hidden_ratio: 4.0,
            gain: None,
            width: 256,
            tokens: 32,
        }
    }
}

/// A branch reduced to its mean-field summary, with DeepNet's beta already applied.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchModel {
    /// What the branch computes.
    pub kind: BranchKind,
    /// Fan-in gain of the first matrix (`W1` or `W_V`; unused for linear).
    pub first: f64,
    /// Fan-in gain of the last matrix (`W2`, `W_O` or the linear `W`), including any
    /// `--gain` rescaling.
    pub last: f64,
    /// MLP hidden ratio.
    pub ratio: f64,
    /// Tokens n.
    pub tokens: f64,
    /// Second moment of the memory mean for cross-attention, `q0 (c0 + (1 - c0)/n)`.
    pub memory_mean_sq: f64,
    /// Gain g of the unscaled branch at unit input second moment (the symbol g).
    pub nominal_gain: f64,
}

impl BranchModel {
    /// Builds the summary from a config, DeepNet's beta (if any), and the input law (q0, c0)
    /// which cross-attention's memory shares.
    pub fn new(cfg: &BranchConfig, beta: Option<f64>, q0: f64, c0: f64) -> Self {
        let d = cfg.width as f64;
        let r = cfg.hidden_ratio;
        let (mut first, mut last) = match cfg.kind {
            BranchKind::Linear => (1.0, cfg.init.fan_in_gain(d, d)),
            BranchKind::ReluMlp | BranchKind::GeluMlp => (
                cfg.init.fan_in_gain(d, r * d),
                cfg.init.fan_in_gain(r * d, d),
            ),
            BranchKind::UniformAttention | BranchKind::CrossAttention => {
                (cfg.init.fan_in_gain(d, d), cfg.init.fan_in_gain(d, d))
            }
        };
        let n = cfg.tokens as f64;
        let mut m = BranchModel {
            kind: cfg.kind,
            first,
            last,
            ratio: r,
            tokens: n,
            memory_mean_sq: q0 * (c0 + (1.0 - c0) / n),
            nominal_gain: 0.0,
        };
        let unit = m.unit_gain();
        if let Some(g) = cfg.gain {
            last = if unit > 0.0 { last * g / unit } else { last };
            m.last = last;
        }
        m.nominal_gain = m.unit_gain();
        if let Some(b) = beta {
            let b2 = b * b;
            if cfg.kind.beta_matrices() == 2 {
                first *= b2;
                m.first = first;
            }
            m.last *= b2;
        }
        m
    }

    /// Gain at unit input second moment (attention: the weight gain `sV sO`).
    fn unit_gain(&self) -> f64 {
        match self.kind {
            BranchKind::Linear => self.last,
            BranchKind::ReluMlp | BranchKind::GeluMlp => self.mlp_moment(1.0, 1.0, 1.0),
            BranchKind::UniformAttention | BranchKind::CrossAttention => self.first * self.last,
        }
    }

    fn activation(&self) -> Option<Activation> {
        match self.kind {
            BranchKind::ReluMlp => Some(Activation::Relu),
            BranchKind::GeluMlp => Some(Activation::Gelu),
            _ => None,
        }
    }

    /// `s2 E[phi(x) phi(y)]` with `Var x = s1 qa`, `Var y = s1 qb`, `Cov = s1 m`.
    fn mlp_moment(&self, qa: f64, qb: f64, m: f64) -> f64 {
        let act = self.activation().expect("MLP branch");
        self.last * act.pair_moment(self.first * qa, self.first * qb, self.first * m)
    }

    /// The pair kernel: output moments `(same token, different tokens)` per coordinate for two
    /// inputs with second moments `qa`, `qb` and cross moments `m_same`, `m_cross`.
    pub fn pair(&self, qa: f64, qb: f64, m_same: f64, m_cross: f64) -> (f64, f64) {
        match self.kind {
            BranchKind::Linear => (self.last * m_same, self.last * m_cross),
            BranchKind::ReluMlp | BranchKind::GeluMlp => (
                self.mlp_moment(qa, qb, m_same),
                self.mlp_moment(qa, qb, m_cross),
            ),
            BranchKind::UniformAttention => {
                let n = self.tokens;
                let v = self.first * self.last * (m_same / n + (1.0 - 1.0 / n) * m_cross);
                (v, v)
            }
            BranchKind::CrossAttention => {
                let v = self.first * self.last * self.memory_mean_sq;
                (v, v)
            }
        }
    }

    /// Output second moment and token correlation for an input of second moment q and token
    /// correlation c: `(q_F, kappa)`.
    pub fn forward(&self, q: f64, c: f64) -> (f64, f64) {
        let (same, cross) = self.pair(q, q, q, q * c);
        let kappa = if same > 0.0 { cross / same } else { c };
        (same, kappa)
    }

    /// Backward gain `g_b = E||J_F^T h||^2/||h||^2` at input second moment q, for h with
    /// independent tokens (for uniform attention `sV sO / n`: only the token mean passes).
    pub fn backward_gain(&self, q: f64) -> f64 {
        match self.kind {
            BranchKind::Linear => self.last,
            BranchKind::ReluMlp | BranchKind::GeluMlp => {
                let act = self.activation().expect("MLP branch");
                self.first * self.last * act.deriv_second_moment(self.first * q)
            }
            BranchKind::UniformAttention => self.first * self.last / self.tokens,
            BranchKind::CrossAttention => 0.0,
        }
    }

    /// Whether the branch acts through the token mean (uniform and cross-attention) rather than
    /// on each token separately.
    pub fn mixes_tokens(&self) -> bool {
        matches!(
            self.kind,
            BranchKind::UniformAttention | BranchKind::CrossAttention
        )
    }

    /// Mean-square gains of the input Jacobian on the token-mean part and on the fluctuation of
    /// a tangent: `(g_b, g_b)` for per-token branches, `(sV sO, 0)` for uniform attention
    /// (`J_F T = W_O W_V mean_t(T_t)` for every token), `(0, 0)` for cross-attention.
    pub fn jacobian_split(&self, q: f64) -> (f64, f64) {
        match self.kind {
            BranchKind::UniformAttention => (self.first * self.last, 0.0),
            BranchKind::CrossAttention => (0.0, 0.0),
            _ => {
                let g = self.backward_gain(q);
                (g, g)
            }
        }
    }

    /// `||a||^2 / d` for the input a of the last matrix (weight gradients are `delta a^T`).
    pub fn last_input_sq(&self, q: f64, c: f64) -> f64 {
        let n = self.tokens;
        match self.kind {
            BranchKind::Linear => q,
            BranchKind::ReluMlp | BranchKind::GeluMlp => {
                let act = self.activation().expect("MLP branch");
                self.ratio * act.second_moment(self.first * q)
            }
            BranchKind::UniformAttention => self.first * q * (c + (1.0 - c) / n),
            BranchKind::CrossAttention => self.first * self.memory_mean_sq,
        }
    }

    /// Per-coordinate second moment of the first-order output change when every matrix W of
    /// the branch gets an independent perturbation with entry variance `eps^2 Var(W_ij)`,
    /// divided by `eps^2`.
    pub fn perturbation_sq(&self, q: f64, c: f64) -> f64 {
        let (out, _) = self.forward(q, c);
        match self.kind {
            BranchKind::Linear => out,
            BranchKind::ReluMlp | BranchKind::GeluMlp => {
                let act = self.activation().expect("MLP branch");
                let v = self.first * q;
                out + self.last * act.deriv_second_moment(v) * v
            }
            BranchKind::UniformAttention | BranchKind::CrossAttention => 2.0 * out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(kind: BranchKind, init: Init) -> BranchModel {
        let cfg = BranchConfig {
            kind,
            init,
            ..BranchConfig::default()
        };
        BranchModel::new(&cfg, None, 1.0, 0.0)
    }

    #[test]
    fn derived_gains_match_hand_values() {
        // Xavier ReLU MLP, ratio r: s1 = 2/(1+r), s2 = 2r/(1+r), g = s1 s2 / 2 = 2r/(1+r)^2.
        let m = model(BranchKind::ReluMlp, Init::Xavier);
        assert!((m.nominal_gain - 8.0 / 25.0).abs() < 1e-15);
        // He ReLU MLP: s1 = s2 = 2, g = 2.
        assert!((model(BranchKind::ReluMlp, Init::He).nominal_gain - 2.0).abs() < 1e-15);
        // Xavier linear d x d: g = 1; torch default: 1/3.
        assert!((model(BranchKind::Linear, Init::Xavier).nominal_gain - 1.0).abs() < 1e-15);
        let t = model(BranchKind::Linear, Init::TorchDefault).nominal_gain;
        assert!((t - 1.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn gain_override_and_beta() {
        let cfg = BranchConfig {
            kind: BranchKind::ReluMlp,
            gain: Some(1.5),
            ..BranchConfig::default()
        };
        let m = BranchModel::new(&cfg, Some(0.5), 1.0, 0.0);
        assert!((m.nominal_gain - 1.5).abs() < 1e-14);
        // Two matrices scaled by beta: forward gain g beta^4.
        let (q, _) = m.forward(1.0, 0.0);
        assert!((q - 1.5 * 0.5f64.powi(4)).abs() < 1e-14);
    }

    #[test]
    fn relu_backward_gain_equals_forward_gain() {
        let m = model(BranchKind::ReluMlp, Init::Xavier);
        assert!((m.backward_gain(3.0) - m.nominal_gain).abs() < 1e-15);
    }
}
