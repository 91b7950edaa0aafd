//! The metric registry: the same names in both engines (THEORY.md section 5). Each entry says
//! what it measures and how rows are indexed (`layer` l, and `source` where the metric has one).

use crate::{Error, Result};

/// A measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// `q_l = E||x_l||^2 / d`, l = 0..=L.
    StreamSq,
    /// Token (or two-input) correlation `c_l`, l = 0..=L.
    Corr,
    /// `C_{l,j}` in `x_l = sum_j C_{l,j} B_j`; source j = 0..=l (0 = x_0).
    Coef,
    /// Share of `E||x_l||^2` carried by source j, `C_{l,j}^2 E||B_j||^2 / E||x_l||^2`.
    BranchWeight,
    /// Skip-path gain `a_l^2` of block l (including the norm Jacobians on the path), l >= 1.
    SkipGain,
    /// Branch-path gain `b_l^2` of block l, l >= 1.
    BranchGain,
    /// Mean-square gradient at x_l per coordinate for an output gradient of unit per-coordinate
    /// variance, l = 0..=L.
    GradSq,
    /// `E||d loss/d W||_F^2 / d^2` of block l's last weight matrix, for one token, l >= 1.
    WeightGradSq,
    /// Share of the mean-square Jacobian of blocks 1..=l carried by paths of length k
    /// (source = k).
    PathLen,
    /// Mean path length of blocks 1..=l.
    EffDepth,
    /// `||x_l - x_{l-1}|| / ||x_{l-1}||`, l >= 1.
    RelUpdate,
    /// `cos(x_l, x_{l-1})`, l >= 1.
    CosPrev,
    /// `arccos(cos_prev) / pi`, l >= 1.
    AngularDist,
    /// `||F_{l+1}(N(x_l)) - F_{l+1}(N(x_{l-1}))||^2 / ||F_{l+1}(N(x_l))||^2`, l = 1..=L-1.
    MergeError,
    /// `E||f_l(W + delta) - f_l(W)||^2 / (d eps^2)` for independent perturbations of every
    /// branch weight with entry variance `eps^2 Var(W_ij)`, `f_l` the depth-l network's output
    /// (x_l, through the final Norm if the preset has one), in the limit eps -> 0.
    OutputChange,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 15] = [
        Metric::StreamSq,
        Metric::Corr,
        Metric::Coef,
        Metric::BranchWeight,
        Metric::SkipGain,
        Metric::BranchGain,
        Metric::GradSq,
        Metric::WeightGradSq,
        Metric::PathLen,
        Metric::EffDepth,
        Metric::RelUpdate,
        Metric::CosPrev,
        Metric::AngularDist,
        Metric::MergeError,
        Metric::OutputChange,
    ];

    /// The name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            Metric::StreamSq => "stream_sq",
            Metric::Corr => "corr",
            Metric::Coef => "coef",
            Metric::BranchWeight => "branch_weight",
            Metric::SkipGain => "skip_gain",
            Metric::BranchGain => "branch_gain",
            Metric::GradSq => "grad_sq",
            Metric::WeightGradSq => "weight_grad_sq",
            Metric::PathLen => "path_len",
            Metric::EffDepth => "eff_depth",
            Metric::RelUpdate => "rel_update",
            Metric::CosPrev => "cos_prev",
            Metric::AngularDist => "angular_dist",
            Metric::MergeError => "merge_error",
            Metric::OutputChange => "output_change",
        }
    }

    /// Whether rows carry a `source` column value (j for coefficients, k for path lengths).
    pub fn has_source(self) -> bool {
        matches!(self, Metric::Coef | Metric::BranchWeight | Metric::PathLen)
    }

    /// The metric with table name `name`.
    pub fn from_name(name: &str) -> Option<Metric> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// Parses `all` or a comma-separated list of names.
    pub fn parse_list(s: &str) -> Result<Vec<Metric>> {
        if s.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let m = Self::from_name(part).ok_or_else(|| Error::Unknown {
                kind: "metric",
                name: part.to_string(),
                valid: format!("all, {}", Self::ALL.map(|m| m.name()).join(", ")),
            })?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        Ok(out)
    }
}
