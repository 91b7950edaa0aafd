//! How much of a sampled network the Monte Carlo engine keeps (`--memory`): the whole network
//! (every block's weights and forward cache, the fastest), or only its streams `x_l` with each
//! block regenerated when a pass needs it ([`super::measure::Blocks`]: the weights from the
//! generator state saved before their draws, the forward step from `x_{l-1}`), which bounds
//! a network to `O(d^2 r + L d n)` values. The numbers are bit-identical either way
//! (`tests/mc_memory.rs`), so the choice is about speed and memory alone and is not part of the
//! configuration that seeds the networks.

use super::gemm::Real;
use super::sampler;
use super::sampling::McConfig;
use crate::branch::Block;
use crate::spec::StackSpec;

/// Whether a sampled network is held whole or streamed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Memory {
    /// Held when the networks running at once fit in half the memory available
    /// ([`held_budget`]), streamed otherwise (the default).
    #[default]
    Auto,
    /// Every block's weights and forward cache kept (fastest).
    Held,
    /// Only the streams `x_l` kept; each block regenerated per pass (a second draw of its
    /// weights and a recomputed forward step: measured 1.5-1.7x the held time on the
    /// reference workload).
    Streamed,
}

/// Bytes assumed available when the system does not say (not Linux): 4 GiB.
pub const DEFAULT_AVAILABLE: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// Share of the available memory that held networks may take together.
pub const HELD_SHARE: f64 = 0.5;

impl Memory {
    /// Whether a network of `spec` under `cfg` in float type `T` is held when `concurrent`
    /// networks run at once: always for [`Memory::Held`], never for [`Memory::Streamed`], and
    /// for [`Memory::Auto`] when `concurrent` held networks ([`held_bytes`]) fit in
    /// [`held_budget`].
    pub fn holds<T: Real>(self, spec: &StackSpec, cfg: &McConfig, concurrent: usize) -> bool {
        match self {
            Memory::Held => true,
            Memory::Streamed => false,
            Memory::Auto => held_bytes::<T>(spec, cfg) * concurrent.max(1) as f64 <= held_budget(),
        }
    }

    /// [`Memory::Held`] or [`Memory::Streamed`], resolved once for a run of `concurrent`
    /// networks at a time.
    pub fn resolve<T: Real>(self, spec: &StackSpec, cfg: &McConfig, concurrent: usize) -> Self {
        if self.holds::<T>(spec, cfg, concurrent) {
            Memory::Held
        } else {
            Memory::Streamed
        }
    }
}

/// [`HELD_SHARE`] of the memory available now (`MemAvailable` of `/proc/meminfo`), or of
/// [`DEFAULT_AVAILABLE`] where that cannot be read.
pub fn held_budget() -> f64 {
    HELD_SHARE * available_bytes().unwrap_or(DEFAULT_AVAILABLE)
}

/// `MemAvailable` in bytes, on Linux.
pub fn available_bytes() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// Estimated bytes of one block held whole in float type `T`: its weight matrices and its
/// forward cache (the norms' outputs, the branch's inputs and hidden activations: `(4 + 2 r) d
/// n` values for an MLP of hidden ratio r, `6 d n + 2 h n^2` for attention with h heads, `4 d
/// n` for the rest), averaged over a stack's period (a Transformer alternates two blocks).
pub fn block_bytes<T: Real>(spec: &StackSpec, cfg: &McConfig) -> f64 {
    let (d, n) = (
        cfg.model.branch.width as f64,
        cfg.model.branch.tokens as f64,
    );
    let h = sampler::hidden(cfg) as f64;
    let period = spec.depth.clamp(1, 2);
    let values: f64 = (1..=period)
        .map(|l| match cfg.block(l) {
            Block::Linear => d * d + 4.0 * d * n,
            Block::Mlp(_) => 2.0 * h * d + (4.0 * d + 2.0 * h) * n,
            Block::Attention { .. } => 4.0 * d * d + 6.0 * d * n + 2.0 * cfg.heads as f64 * n * n,
            Block::CrossAttention => 2.0 * d * d + 4.0 * d * n,
        })
        .sum();
    values / period as f64 * std::mem::size_of::<T>() as f64
}

/// Estimated bytes of a network held whole: L blocks ([`block_bytes`]).
pub fn held_bytes<T: Real>(spec: &StackSpec, cfg: &McConfig) -> f64 {
    spec.depth as f64 * block_bytes::<T>(spec, cfg)
}

/// Estimated bytes a streamed network allocates at most: its streams `x_0..=x_L` and a few
/// d x n tangents, plus one block regenerated with its weight gradient (1.5 blocks).
pub fn streamed_bytes<T: Real>(spec: &StackSpec, cfg: &McConfig) -> f64 {
    let (d, n) = (
        cfg.model.branch.width as f64,
        cfg.model.branch.tokens as f64,
    );
    let size = std::mem::size_of::<T>() as f64;
    (spec.depth as f64 + 5.0) * d * n * size + 1.5 * block_bytes::<T>(spec, cfg)
}
