//! How much of a sampled network the Monte Carlo engine keeps (`--memory`): the whole network
//! (every block's weights and forward cache, the fastest), or only its streams `x_l` with each
//! block regenerated when a pass needs it (`measure::Blocks`: the weights from the
//! generator state saved before their draws, the forward step from `x_{l-1}`), which bounds
//! a network to `O(d^2 r + L d n)` values. The numbers are bit-identical either way
//! (`tests/it/mc_memory.rs`), so the choice is about speed and memory alone and is not part of the
//! configuration that seeds the networks. Which one `auto` picks is decided in
//! [`super::size`], from the network's estimated size.

/// Whether a sampled network is held whole or streamed.
///
/// # Examples
///
/// ```rust
/// use normscope_core::monte_carlo::Memory;
///
/// assert_eq!(Memory::default(), Memory::Auto);
/// assert_eq!(Memory::Streamed.name(), "streamed");
/// let all = [Memory::Auto, Memory::Held, Memory::Streamed];
/// assert_eq!(all.map(Memory::name), ["auto", "held", "streamed"]);
/// ```
///
/// The values do not depend on it: a held and a streamed network give the same bits.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::measure::NetworkPlan;
/// use normscope_core::monte_carlo::{McConfig, Memory, RawMc, measure_network_with};
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "relu-mlp".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let spec = cfg.model.stack(normscope_core::placement::find("pre")?)?;
/// let plan = NetworkPlan { metrics: vec![Metric::GradSq], selected: vec![true; 3], path_max: 8 };
/// let held = measure_network_with(&spec, &cfg, &plan, 1, Memory::Held);
/// let streamed = measure_network_with(&spec, &cfg, &plan, 1, Memory::Streamed);
/// assert_eq!(held, streamed);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Memory {
    /// Held when the networks running at once fit in half the memory available
    /// (`size::held_budget`), streamed otherwise (the default).
    #[default]
    Auto,
    /// Every block's weights and forward cache kept (fastest).
    Held,
    /// Only the streams `x_l` kept; each block regenerated per pass (its weights drawn again
    /// and its forward step recomputed, an MLP's first matrix twice in the backward pass): the
    /// time it costs on the reference workload is measured in docs/performance.md.
    Streamed,
}

impl Memory {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Memory::Auto => "auto",
            Memory::Held => "held",
            Memory::Streamed => "streamed",
        }
    }
}
