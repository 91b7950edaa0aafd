//! How much of a sampled network the Monte Carlo engine keeps (`--memory`): the whole network
//! (every block's weights and forward cache, the fastest), or only its streams `x_l` with each
//! block regenerated when a pass needs it ([`super::measure::Blocks`]: the weights from the
//! generator state saved before their draws, the forward step from `x_{l-1}`), which bounds
//! a network to `O(d^2 r + L d n)` values. The numbers are bit-identical either way
//! (`tests/it/mc_memory.rs`), so the choice is about speed and memory alone and is not part of the
//! configuration that seeds the networks.

use super::sampling::McConfig;
use crate::metrics::Metric;

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
    /// Only the streams `x_l` kept; each block regenerated per pass (its weights drawn again
    /// and its forward step recomputed, an MLP's first matrix twice in the backward pass): the
    /// time it costs on the reference workload is measured in docs/performance.md.
    Streamed,
}

/// Bytes assumed available when the system does not say (not Linux): 4 GiB.
pub const DEFAULT_AVAILABLE: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// Share of the available memory that held networks may take together.
pub const HELD_SHARE: f64 = 0.5;

impl Memory {
    /// Whether a network of depth `depth` under `cfg` measuring `metrics` is held when
    /// `concurrent` networks run at once: always for [`Memory::Held`], never for
    /// [`Memory::Streamed`], and for [`Memory::Auto`] when `concurrent` held networks
    /// ([`crate::budget::mc_network_floats`] in `cfg.precision`) fit in [`held_budget`].
    pub fn holds(
        self,
        cfg: &McConfig,
        depth: usize,
        metrics: &[Metric],
        concurrent: usize,
    ) -> bool {
        match self {
            Memory::Held => true,
            Memory::Streamed => false,
            Memory::Auto => {
                let floats = crate::budget::mc_network_floats(cfg, depth, metrics, true);
                let bytes = floats as f64 * cfg.precision.bytes() as f64;
                bytes * concurrent.max(1) as f64 <= held_budget()
            }
        }
    }

    /// [`Memory::Held`] or [`Memory::Streamed`], resolved once for a run of `concurrent`
    /// networks at a time.
    pub fn resolve(
        self,
        cfg: &McConfig,
        depth: usize,
        metrics: &[Metric],
        concurrent: usize,
    ) -> Self {
        if self.holds(cfg, depth, metrics, concurrent) {
            Memory::Held
        } else {
            Memory::Streamed
        }
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Memory::Auto => "auto",
            Memory::Held => "held",
            Memory::Streamed => "streamed",
        }
    }
}

/// [`HELD_SHARE`] of the memory available now (`MemAvailable` of `/proc/meminfo`), or of
/// [`DEFAULT_AVAILABLE`] where that cannot be read.
pub fn held_budget() -> f64 {
    HELD_SHARE
        * crate::budget::available()
            .map(|b| b as f64)
            .unwrap_or(DEFAULT_AVAILABLE)
}
