//! Sizes checked before anything is allocated: an estimate of the peak memory of a run, refused
//! with the estimate, the machine's available memory and the settings to lower when it cannot
//! fit ([`crate::Error::TooLarge`], exit status 2).
//!
//! The estimates are upper bounds of the large buffers (f64 matrices and per-network tables);
//! small bookkeeping is left out.

use crate::branch::Block;
use crate::metrics::Metric;
use crate::monte_carlo::McConfig;
use crate::{Error, Result};

/// Bytes per f64.
const F64: u128 = 8;

/// Bytes per value kept for the estimator (one f64 per network and row, in
/// [`crate::monte_carlo::Columns`]).
const COLUMN_ENTRY: u128 = 8;

/// Bytes per entry of a per-network table in flight (`BTreeMap<(Metric, usize, Option<usize>),
/// f64>`: key, value and node overhead); at most
/// [`crate::monte_carlo::BATCH_PER_THREAD`] tables per thread are alive at once.
const TABLE_ENTRY: u128 = 64;

/// Bytes the closed form keeps per layer (about 20 f64 sequences over depth, some in double-
/// double or log-magnitude form; measured ~220 bytes per layer).
pub const CLOSED_FORM_PER_LAYER: u128 = 256;

/// Bytes per kept layer when the closed form keeps few layers (B-tree entries, leaves about
/// half full: about three times [`CLOSED_FORM_PER_LAYER`]).
pub const SPARSE_PER_KEPT_LAYER: u128 = 3 * CLOSED_FORM_PER_LAYER;

/// Bytes this process may use: `MemAvailable` of `/proc/meminfo`, or `None` where it is not
/// known (then nothing is refused).
pub fn available() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn gb(bytes: u128) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Refuses a run whose estimated peak `bytes` exceeds the available memory.
pub fn check(bytes: u128, what: &str, lower: &str) -> Result<()> {
    match available() {
        Some(avail) if bytes > avail => Err(Error::TooLarge(format!(
            "{what} needs about {} of memory, more than the {} this machine has available: lower {lower}",
            gb(bytes),
            gb(avail)
        ))),
        _ => Ok(()),
    }
}

/// The largest width, token count or hidden width the estimates use: any size above it needs
/// more memory than any machine has, so capping it keeps every product below u128's range
/// (2^31 per factor, at most four factors and a depth below 2^40) while still refusing it.
const SIZE_CAP: u128 = 1 << 31;

/// Width d, tokens n and hidden width h of the branch, each capped at [`SIZE_CAP`].
fn sizes(cfg: &McConfig) -> (u128, u128, u128) {
    let d = (cfg.model.branch.width as u128).min(SIZE_CAP);
    let n = (cfg.model.branch.tokens as u128).min(SIZE_CAP);
    // `as` saturates a huge float; the cap then applies.
    let h = ((cfg.model.branch.hidden_ratio * d as f64).round().max(1.0) as u128).min(SIZE_CAP);
    (d, n, h)
}

/// Floats of block l's weight matrices.
fn weight_floats(cfg: &McConfig, l: usize) -> u128 {
    let (d, _, h) = sizes(cfg);
    match cfg.block(l) {
        Block::Linear => d * d,
        Block::Mlp(_) => 2 * h * d,
        Block::Attention { uniform: true } => 2 * d * d,
        Block::Attention { uniform: false } => 4 * d * d,
        Block::CrossAttention => 2 * d * d + d,
    }
}

/// Floats block l keeps from the forward pass: its input, output and up to three norm
/// caches, plus the branch's own intermediates.
fn activation_floats(cfg: &McConfig, l: usize) -> u128 {
    let (d, n, h) = sizes(cfg);
    let own = match cfg.block(l) {
        Block::Linear => 0,
        Block::Mlp(_) => 2 * h * n,
        Block::Attention { .. } => 4 * d * n + (cfg.heads as u128).min(SIZE_CAP) * n * n,
        Block::CrossAttention => d,
    };
    5 * d * n + own
}

/// `f` summed over `depth` blocks. A stack's blocks repeat with period at most 2 (odd and even
/// blocks of a transformer), so depth 10^12 costs two evaluations, not 10^12.
fn per_depth(cfg: &McConfig, depth: u128, f: fn(&McConfig, usize) -> u128) -> u128 {
    let (odd, even) = (depth.div_ceil(2), depth / 2);
    odd.saturating_mul(f(cfg, 1))
        .saturating_add(even.saturating_mul(f(cfg, 2)))
}

/// Peak bytes of one network of depth `depth` held whole in f64 with every gradient (the
/// training engine's model; the Monte Carlo engine's is [`mc_network_bytes`]).
pub fn network_bytes(cfg: &McConfig, depth: usize, metrics: &[Metric]) -> u128 {
    let (d, n, _) = sizes(cfg);
    let depth = (depth as u128).min(1 << 40);
    let stream = (depth + 1) * d * n;
    let weights = per_depth(cfg, depth, weight_floats);
    let acts = per_depth(cfg, depth, activation_floats);
    let needs = Metric::needs(metrics);
    // The input's n x n token covariance and its Cholesky factor.
    let tokens = 2 * n * n;
    // Saturating: a total beyond u128 is refused like any other that does not fit.
    let mut floats = weights
        .saturating_add(acts)
        .saturating_add(stream)
        .saturating_add(tokens);
    if needs.backward {
        floats = floats.saturating_add(stream).saturating_add(weights);
    }
    if needs.paths && depth <= cfg.path_max as u128 {
        floats = floats.saturating_add(stream.saturating_mul(2));
    }
    F64.saturating_mul(floats)
}

/// Floats of one sampled network as the Monte Carlo engine keeps it
/// ([`crate::monte_carlo::Memory`]): `held`, every block's weights and forward cache;
/// streamed, one block regenerated at a time (counted twice: the block and the transient
/// matrices of its pass). Both keep the streams `x_0..x_L`, the input's token covariance, the
/// tangents of the exact path polynomial, and during the backward pass one gradient and one
/// block's last weight gradient (the engine reduces each to its squared norm as it goes).
pub fn mc_network_floats(cfg: &McConfig, depth: usize, metrics: &[Metric], held: bool) -> u128 {
    let (d, n, _) = sizes(cfg);
    let depth = (depth as u128).min(1 << 40);
    let stream = (depth + 1) * d * n;
    let block = |l| weight_floats(cfg, l).saturating_add(activation_floats(cfg, l));
    let blocks = if held {
        per_depth(cfg, depth, weight_floats).saturating_add(per_depth(
            cfg,
            depth,
            activation_floats,
        ))
    } else {
        block(1).max(block(2)).saturating_mul(2)
    };
    let needs = Metric::needs(metrics);
    let mut floats = blocks.saturating_add(stream).saturating_add(2 * n * n);
    if needs.backward {
        let grad = weight_floats(cfg, 1).max(weight_floats(cfg, 2));
        floats = floats.saturating_add(grad).saturating_add(2 * d * n);
    }
    if needs.paths && depth <= cfg.path_max as u128 {
        floats = floats.saturating_add(stream.saturating_mul(2));
    }
    floats
}

/// Peak bytes of one sampled network in the engine's memory mode and precision: held or
/// streamed as [`crate::monte_carlo::Memory::holds`] decides for the networks running at once.
pub fn mc_network_bytes(cfg: &McConfig, depth: usize, metrics: &[Metric]) -> u128 {
    let size = cfg.precision.bytes() as u128;
    let concurrent = rayon::current_num_threads().min(cfg.samples).max(1);
    let held = cfg.memory.holds(cfg, depth, metrics, concurrent);
    size.saturating_mul(mc_network_floats(cfg, depth, metrics, held))
}

/// Peak bytes of a Monte Carlo run of one stack: the networks in flight (one per thread), the
/// per-network tables of one batch, and one f64 per network and row for the estimator (`rows`
/// per network, an upper bound).
pub fn mc_bytes(cfg: &McConfig, depth: usize, metrics: &[Metric], rows: u128) -> u128 {
    let threads = rayon::current_num_threads().min(cfg.samples).max(1) as u128;
    let batch = (threads * crate::monte_carlo::BATCH_PER_THREAD as u128).min(cfg.samples as u128);
    // Saturating: a sum beyond u128 is refused like any other that does not fit.
    mc_network_bytes(cfg, depth, metrics)
        .saturating_mul(threads)
        .saturating_add(batch.saturating_mul(rows).saturating_mul(TABLE_ENTRY))
        .saturating_add(
            (cfg.samples as u128)
                .saturating_mul(rows)
                .saturating_mul(COLUMN_ENTRY),
        )
}

/// Refuses a Monte Carlo run of `depth` blocks that cannot fit.
pub fn check_mc(cfg: &McConfig, depth: usize, metrics: &[Metric], rows: u128) -> Result<()> {
    check(
        mc_bytes(cfg, depth, metrics, rows),
        &format!(
            "Monte Carlo at width {}, {} tokens, depth {depth}, {} networks",
            cfg.model.branch.width, cfg.model.branch.tokens, cfg.samples
        ),
        if cfg.memory == crate::monte_carlo::Memory::Held {
            "--width, --tokens, --depth, --hidden-ratio, --samples, or the metrics and --layers written, or stream the networks (--memory streamed or auto)"
        } else {
            "--width, --tokens, --depth, --hidden-ratio, --samples, or the metrics and --layers written"
        },
    )
}

/// Blocks per second one preset's closed form streams through (measured: 3 presets at depth
/// 3e7 in 14 s on the project's 2-core machine, about 6e6 per second each; GELU and attention
/// are slower, so this is optimistic by up to ~3x).
pub const CLOSED_FORM_BLOCKS_PER_SECOND: f64 = 6e6;

/// The longest closed-form run accepted without asking for fewer blocks: one hour.
pub const CLOSED_FORM_MAX_SECONDS: f64 = 3600.0;

/// Refuses a closed form that cannot fit or would run for hours, before anything runs:
/// memory from what `keep` holds per layer plus the kept layers (`kept` of them), work from
/// the blocks streamed (twice when the backward pass recomputes the forward recursion).
pub fn check_closed_form_plan(
    depth: usize,
    keep: &crate::theory::Keep,
    kept: u128,
    presets: usize,
) -> Result<()> {
    let passes = if keep.backward { 2.0 } else { 1.0 };
    let seconds = depth as f64 * presets as f64 * passes / CLOSED_FORM_BLOCKS_PER_SECOND;
    if seconds > CLOSED_FORM_MAX_SECONDS {
        return Err(Error::TooLarge(format!(
            "the closed form at depth {depth} for {presets} preset(s) streams about {:.0} hours of blocks (at ~{CLOSED_FORM_BLOCKS_PER_SECOND:.0e} blocks/s; the limit is {:.0} hour); lower --depth or the presets",
            seconds / 3600.0,
            CLOSED_FORM_MAX_SECONDS / 3600.0
        )));
    }
    let sqrt = ((depth as f64 + 1.0).sqrt().ceil()) as u128;
    let len = depth as u128 + 1;
    // Kept layers: dense vectors over every layer when they are a quarter or more of them
    // (Keep::dense), else B-tree entries at about three times a slot's bytes each.
    let kept_bytes = if kept.saturating_mul(4) >= len {
        CLOSED_FORM_PER_LAYER * len
    } else {
        SPARSE_PER_KEPT_LAYER * kept
    };
    check(
        keep.bytes_per_layer() * len + kept_bytes + CLOSED_FORM_PER_LAYER * sqrt,
        &format!("the closed form at depth {depth}"),
        "--depth, or --layers and the metrics (coef, branch_weight, path_len and eff_depth keep every layer)",
    )
}

/// Refuses a closed form of `depth` blocks with every sequence kept that cannot fit.
pub fn check_closed_form(depth: usize) -> Result<()> {
    check(
        CLOSED_FORM_PER_LAYER * (depth as u128 + 1),
        &format!("the closed form at depth {depth}"),
        "--depth",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RawModel;
    use crate::monte_carlo::{Memory, Precision, RawMc};

    #[test]
    fn a_streamed_network_is_sized_by_its_streams_not_its_weights() {
        // DeepNet scale: L = 1000, d = 512, n = 128, ReLU-MLP of ratio 4, with gradients.
        let raw = RawModel {
            width: 512,
            tokens: 128,
            depth: 1000,
            branch: "relu-mlp".into(),
            ..RawModel::default()
        };
        let m = [Metric::GradSq, Metric::WeightGradSq];
        let cfg = |memory, precision| {
            let mc = RawMc {
                memory,
                precision,
                ..RawMc::default()
            };
            McConfig::new(&raw, &mc).unwrap()
        };
        let (f64, f32) = (Precision::F64, Precision::F32);
        let held = mc_network_floats(&cfg(Memory::Held, f64), 1000, &m, true);
        let streamed = mc_network_floats(&cfg(Memory::Streamed, f64), 1000, &m, false);
        let streams: u128 = 1001 * 512 * 128;
        // Held: 1000 blocks of 2 x 4 d^2 weights dominate; streamed: the streams do.
        assert!(held > 1000 * 2 * 4 * 512 * 512, "{held}");
        assert!(streamed >= streams && streamed < 2 * streams, "{streamed}");
        let bytes = |memory, precision| mc_network_bytes(&cfg(memory, precision), 1000, &m);
        assert_eq!(bytes(Memory::Streamed, f64), 8 * streamed);
        assert_eq!(bytes(Memory::Streamed, f32), 4 * streamed);
        assert_eq!(bytes(Memory::Held, f64), 8 * held);
    }

    #[test]
    fn the_estimate_grows_with_every_size_and_counts_the_weights() {
        let raw = |width, depth| RawModel {
            width,
            depth,
            branch: "relu-mlp".into(),
            ..RawModel::default()
        };
        let cfg = |w, l| McConfig::new(&raw(w, l), &RawMc::default()).unwrap();
        let m = [Metric::GradSq];
        let small = network_bytes(&cfg(64, 8), 8, &m);
        // Weights and their gradients alone: 2 x 8 blocks x 2 (4d x d) f64 matrices.
        assert!(small >= 2 * 8 * 2 * 4 * 64 * 64 * 8);
        assert!(network_bytes(&cfg(128, 8), 8, &m) > small);
        assert!(network_bytes(&cfg(64, 16), 16, &m) > small);
        // The reported case: d = 100000 is ~1.3 TB per 2-block network, refused on any machine
        // this project runs on.
        let huge = cfg(100_000, 2);
        assert!(network_bytes(&huge, 2, &m) > 1_000_000_000_000);
    }
}
