//! What a block of the closed form costs in time, by branch kind and by norm slot: the time
//! preflight of `theory` and `compare` (`budget::check_closed_form_plan`) reads each stack's
//! cost per block from here.
//!
//! A block's forward recursion is a few dozen f64 operations for every branch and for the norms
//! whose map is closed (LayerNorm, RMSNorm, GroupNorm, the column norms, the identity): a
//! million blocks per second or more. DyT has no closed form: each of its slots evaluates
//! Gaussian integrals of `tanh` by quadrature ([`crate::norms::dyt_moments`]), the token
//! correlation's pair moment about half a second, once per slot and block (a map is
//! remembered, so a stream at a fixed point costs less; the estimate assumes no map is reused).
//! The pair moment is skipped where the correlation is exactly 0 or +-1 (it maps to itself),
//! which a linear branch keeps from its input (`--c0`): there DyT costs its two second
//! moments alone.
//!
//! Measured on the project's 2-core machine with other builds running (docs/performance.md,
//! "Closed-form cost"), and charged at about half the slowest rate:
//!
//! | block | measured blocks/s | charged ([`block_seconds`]) |
//! |---|---|---|
//! | any closed norm, linear, ReLU MLP, attention branches | 1.8e6 to 3.9e6 | [`CLOSED_BLOCK_SECONDS`] |
//! | any closed norm, GELU MLP | 1.1e6 to 1.8e6 | [`GELU_BLOCK_SECONDS`] |
//! | DyT, correlation 0 or +-1 kept (linear branch) | 570 | + [`DYT_MOMENT_SECONDS`] per DyT slot |
//! | DyT, any other | 1.7 to 3.3 | + [`DYT_SLOT_SECONDS`] per DyT slot |

use crate::Result;
use crate::branch::BranchKind;
use crate::model::ModelConfig;
use crate::placement::Preset;
use crate::spec::{NormStatistic, StackSpec};

/// Seconds per block of the recursion with a closed-form norm and a branch of closed moments
/// (linear, ReLU MLP, the attention branches): measured at 1.8e6 blocks per second and up,
/// charged at 1e6.
pub const CLOSED_BLOCK_SECONDS: f64 = 1e-6;

/// Seconds per block with a GELU MLP, whose kernel is evaluated from its series and
/// asymptotes ([`crate::branch::activation`]): measured at 1.1e6 blocks per second and up,
/// charged at 5e5.
pub const GELU_BLOCK_SECONDS: f64 = 2e-6;

/// Seconds per DyT slot and block with the token correlation's pair moment: measured 0.3 to
/// 0.6 s (1.7 to 3.3 blocks per second, whatever the branch), charged at 1 s.
pub const DYT_SLOT_SECONDS: f64 = 1.0;

/// Seconds per DyT slot and block without the pair moment (its two second moments alone):
/// measured 1.8 ms (570 blocks per second), charged at 4 ms.
pub const DYT_MOMENT_SECONDS: f64 = 4e-3;

/// Seconds per block of the recursion for a `branch` with norms of closed maps.
pub fn branch_seconds(branch: BranchKind) -> f64 {
    match branch {
        BranchKind::GeluMlp => GELU_BLOCK_SECONDS,
        BranchKind::Linear
        | BranchKind::ReluMlp
        | BranchKind::Attention
        | BranchKind::UniformAttention
        | BranchKind::CrossAttention
        | BranchKind::Transformer => CLOSED_BLOCK_SECONDS,
    }
}

/// Seconds per block one norm slot of `spec` adds to [`branch_seconds`] with a `branch` and
/// inputs of token correlation `c0`: nothing for a norm whose map is closed; for DyT
/// [`DYT_MOMENT_SECONDS`] where a linear branch keeps a correlation of exactly 0 or +-1, else
/// [`DYT_SLOT_SECONDS`].
#[allow(clippy::float_cmp)] // the exact ends c0 = +-1 and 0, which DyT's map keeps
pub fn slot_seconds(spec: &StackSpec, branch: BranchKind, c0: f64) -> f64 {
    match spec.norm.statistic() {
        NormStatistic::Tanh if branch == BranchKind::Linear && (c0 == 0.0 || c0.abs() == 1.0) => {
            DYT_MOMENT_SECONDS
        }
        NormStatistic::Tanh => DYT_SLOT_SECONDS,
        NormStatistic::Token
        | NormStatistic::Sequence
        | NormStatistic::Batch
        | NormStatistic::Groups
        | NormStatistic::Identity => 0.0,
    }
}

/// Seconds per block of `spec`'s recursion with a `branch` and inputs of token correlation
/// `c0`: [`branch_seconds`] plus [`slot_seconds`] for each norm slot of its block with the
/// most.
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::BranchKind;
/// use normscope_core::closed_form::cost::{self, CLOSED_BLOCK_SECONDS, DYT_SLOT_SECONDS};
/// use normscope_core::placement::{Overrides, build};
/// use normscope_core::spec::NormKind;
/// let pre = build("pre", 8, &Overrides::default())?;
/// assert_eq!(cost::block_seconds(&pre, BranchKind::ReluMlp, 0.0), CLOSED_BLOCK_SECONDS);
/// // DyT's slot (Pre-Norm has one per block) is integrated by quadrature.
/// let dyt = pre.with_norm(NormKind::Dyt);
/// let slow = cost::block_seconds(&dyt, BranchKind::ReluMlp, 0.0);
/// assert_eq!(slow, CLOSED_BLOCK_SECONDS + DYT_SLOT_SECONDS);
/// // A linear branch keeps an uncorrelated input uncorrelated: no pair moment.
/// assert!(cost::block_seconds(&dyt, BranchKind::Linear, 0.0) < slow / 100.0);
/// assert_eq!(cost::block_seconds(&dyt, BranchKind::Linear, 0.5), slow);
/// // A sandwich block has two slots.
/// let sandwich = build("sandwich", 8, &Overrides::default())?.with_norm(NormKind::Dyt);
/// let two = cost::block_seconds(&sandwich, BranchKind::ReluMlp, 0.0);
/// assert_eq!(two, CLOSED_BLOCK_SECONDS + 2.0 * DYT_SLOT_SECONDS);
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn block_seconds(spec: &StackSpec, branch: BranchKind, c0: f64) -> f64 {
    let slots = spec
        .segments
        .iter()
        .map(|s| {
            [s.block.n_in, s.block.n_br, s.block.n_out]
                .iter()
                .filter(|slot| slot.is_norm())
                .count()
        })
        .max()
        .unwrap_or(0);
    branch_seconds(branch) + slots as f64 * slot_seconds(spec, branch, c0)
}

/// Blocks of a stack built to learn its cost ([`presets_block_seconds`]): a placement file
/// whose scales depend on the block index builds one segment per block.
const PROBE_DEPTH: usize = 1024;

/// [`block_seconds`] of each preset's stack under `model` (its norm, branch and inputs), from
/// the stack at depth `min(model.depth, 1024)`: the same blocks and norm, without building a
/// deep one.
pub(crate) fn presets_block_seconds(model: &ModelConfig, presets: &[&Preset]) -> Result<Vec<f64>> {
    let mut probe = model.clone();
    probe.depth = model.depth.clamp(1, PROBE_DEPTH);
    presets
        .iter()
        .map(|p| {
            let spec = probe.stack(p)?;
            Ok(block_seconds(&spec, model.branch.kind, model.inputs.c0))
        })
        .collect()
}
