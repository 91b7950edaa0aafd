//! The Monte Carlo engine's sizes, checked before anything is allocated: the peak memory of a
//! network held or streamed ([`mc_network_floats`], `mc_bytes`) and the work of a run
//! ([`mc_network_work`]), refused through [`crate::budget::check`] and
//! [`crate::budget::check_work`] with the settings to lower.

use super::McConfig;
use super::memory::Memory;
use crate::Result;
use crate::branch::Block;
use crate::budget::{check, check_work};
use crate::metrics::Metric;

/// Bytes per value kept for the estimator (one f64 per network and row, in
/// [`crate::monte_carlo::Columns`]).
const COLUMN_ENTRY: u128 = 8;

/// Bytes per entry of a per-network table in flight (`BTreeMap<(Metric, usize, Option<usize>),
/// f64>`: key, value and node overhead); at most
/// [`crate::monte_carlo::BATCH_PER_THREAD`] tables per thread are alive at once.
const TABLE_ENTRY: u128 = 64;

/// The largest width, token count or hidden width the estimates use: any size above it needs
/// more memory than any machine has, so capping it keeps every product below u128's range
/// (2^31 per factor, at most four factors and a depth below 2^40) while still refusing it.
const SIZE_CAP: u128 = 1 << 31;

/// Width d, tokens n and hidden width h of the branch, each capped at [`SIZE_CAP`].
fn sizes(cfg: &McConfig) -> (u128, u128, u128) {
    let d = (cfg.model.branch.width as u128).min(SIZE_CAP);
    let n = (cfg.columns() as u128).min(SIZE_CAP);
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
pub(crate) fn mc_network_bytes(cfg: &McConfig, depth: usize, metrics: &[Metric]) -> u128 {
    let size = cfg.precision.bytes() as u128;
    let concurrent = rayon::current_num_threads().min(cfg.samples).max(1);
    let held = cfg.memory.holds(cfg, depth, metrics, concurrent);
    size.saturating_mul(mc_network_floats(cfg, depth, metrics, held))
}

/// Peak bytes of a Monte Carlo run of one stack: the networks in flight (one per thread), the
/// per-network tables of one batch, and one f64 per network and row for the estimator (`rows`
/// per network, an upper bound).
pub(crate) fn mc_bytes(cfg: &McConfig, depth: usize, metrics: &[Metric], rows: u128) -> u128 {
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
        &mc_what(cfg, depth),
        mc_lower(cfg),
    )
}

/// Bytes of the per-block bookkeeping a sampled network keeps beyond its matrices: the
/// weight standard deviations and Admin's omega of every block, the generator state saved
/// before its draws (streamed), and the `Option<f64>` quantities per layer the engine fills
/// (nine of them); a generous round figure.
pub const MC_BYTES_PER_BLOCK: u128 = 512;

/// Bytes per source and token of the per-token decomposition `x_l = sum_j C_{l,j} B~_j` the
/// engine carries through every forward pass (coefficients and two source energies, f64),
/// plus [`MC_BYTES_PER_SOURCE`] per source for their vectors.
pub const MC_BYTES_PER_SOURCE_TOKEN: u128 = 3 * 8;

/// Bytes per source of the decomposition's three vectors and flag.
pub const MC_BYTES_PER_SOURCE: u128 = 3 * 24 + 1;

/// What the estimates need of the layers a table writes: how many, and sums over them.
///
/// # Examples
///
/// Layers 0, 2 and 4 keep `1 + 3 + 5 = 9` sources; every layer of a depth-3 stack (0..=3)
/// keeps `1 + 2 + 3 + 4 = 10`:
///
/// ```rust
/// use normscope_core::monte_carlo::size::Selected;
///
/// let some = Selected::of(&[0, 2, 4]);
/// assert_eq!((some.count, some.sources), (3, 9));
/// let all = Selected::all(3);
/// assert_eq!((all.count, all.sources), (4, 10));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Selected {
    /// Layers written.
    pub count: u128,
    /// Their `l + 1` summed: the sources of the decomposition kept at each, and the length
    /// classes of an exact path law.
    pub sources: u128,
    /// `path_law_width` summed over them: the lengths a factorized path law carries.
    pub law_width: f64,
}

impl Selected {
    /// The sums over the layers `layers`.
    pub fn of(layers: &[usize]) -> Self {
        Selected {
            count: layers.len() as u128,
            sources: layers.iter().map(|&l| l as u128 + 1).sum(),
            law_width: layers.iter().map(|&l| path_law_width(l as u128)).sum(),
        }
    }

    /// Every layer `0..=depth` (in closed form, without listing them).
    pub fn all(depth: usize) -> Self {
        let n = depth as u128 + 1;
        let sources = n.saturating_mul(n + 1) / 2;
        // sum_l min(l + 1, c sqrt(l) + 2) <= n * 2 + c (2/3) n^1.5.
        let c = law_width_factor();
        let bound = 2.0 * n as f64 + c * 2.0 / 3.0 * (n as f64).powf(1.5);
        Selected {
            count: n,
            sources,
            law_width: bound.min(sources as f64),
        }
    }
}

fn law_width_factor() -> f64 {
    (2.0 * (2.0 / crate::theory::paths::PMF_FLOOR).ln()).sqrt()
}

/// An upper bound on the path lengths a factorized path law carries at layer `l`: the
/// Poisson-binomial law of `l` blocks is sub-Gaussian (Hoeffding: `P(|K - mean| >= t) <= 2
/// exp(-2 t^2 / l)`), so every length it keeps above [`crate::theory::paths::PMF_FLOOR`] lies
/// within `sqrt(l ln(2 / floor) / 2)` of the mean: at most `sqrt(2 l ln(2 / floor)) + 2`
/// lengths, and never more than `l + 1`.
pub(crate) fn path_law_width(l: u128) -> f64 {
    (law_width_factor() * (l as f64).sqrt() + 2.0).min(l as f64 + 1.0)
}

/// Bytes one sampled network keeps besides [`mc_network_floats`], in f64 whatever the
/// precision: the per-block bookkeeping ([`MC_BYTES_PER_BLOCK`]), the per-token decomposition
/// of every source ([`MC_BYTES_PER_SOURCE_TOKEN`], [`MC_BYTES_PER_SOURCE`]), and at the
/// layers written the decomposition's coefficients and weights (coef, branch_weight: two f64
/// per source) and the path-length law (path_len, eff_depth: a length and a share each).
pub fn mc_network_extra_bytes(
    cfg: &McConfig,
    depth: usize,
    metrics: &[Metric],
    selected: &Selected,
) -> u128 {
    let (_, n, _) = sizes(cfg);
    let len = (depth as u128).min(1 << 40) + 1;
    let needs = Metric::needs(metrics);
    let mut bytes = len
        .saturating_mul(MC_BYTES_PER_BLOCK + MC_BYTES_PER_SOURCE)
        .saturating_add(
            len.saturating_mul(n)
                .saturating_mul(MC_BYTES_PER_SOURCE_TOKEN),
        );
    if needs.decomposition {
        bytes = bytes.saturating_add(selected.sources.saturating_mul(16));
    }
    if needs.paths {
        let lengths = if depth <= cfg.path_max {
            selected.sources as f64
        } else {
            selected.law_width
        };
        bytes = bytes.saturating_add((lengths * 16.0).min(u128::MAX as f64 / 2.0) as u128);
    }
    bytes
}

/// Refuses a Monte Carlo run of one stack of `depth` blocks writing the layers `selected`
/// that cannot fit: `mc_bytes` with the table's rows, plus every network in flight's
/// [`mc_network_extra_bytes`].
pub(crate) fn check_mc_selected(
    cfg: &McConfig,
    depth: usize,
    metrics: &[Metric],
    rows: u128,
    selected: &Selected,
) -> Result<()> {
    let threads = rayon::current_num_threads().min(cfg.samples).max(1) as u128;
    let extra = mc_network_extra_bytes(cfg, depth, metrics, selected).saturating_mul(threads);
    check(
        mc_bytes(cfg, depth, metrics, rows).saturating_add(extra),
        &mc_what(cfg, depth),
        mc_lower(cfg),
    )
}

fn mc_what(cfg: &McConfig, depth: usize) -> String {
    format!(
        "Monte Carlo at width {}, {} tokens{}, depth {depth}, {} networks",
        cfg.model.branch.width,
        cfg.model.branch.tokens,
        match cfg.batch {
            1 => String::new(),
            b => format!(" x batch {b}"),
        },
        cfg.samples
    )
}

fn mc_lower(cfg: &McConfig) -> &'static str {
    if cfg.memory == crate::monte_carlo::Memory::Held {
        "--width, --tokens, --batch, --depth, --hidden-ratio, --samples, or the metrics and --layers written, or stream the networks (--memory streamed or auto)"
    } else {
        "--width, --tokens, --batch, --depth, --hidden-ratio, --samples, or the metrics and --layers written"
    }
}

/// Work charged per standard normal drawn (a Ziggurat draw of f64, in flop-equivalents: ~2 ns
/// on one core at half of [`WORK_RATE`](crate::budget::WORK_RATE)).
pub const DRAW_WORK: f64 = 100.0;

/// Work charged per block each pass visits beyond its products: norms, activations and the
/// per-block allocations (~40 ns measured on one core at width 4).
pub const BLOCK_VISIT_WORK: f64 = 2000.0;

/// Work charged per (block, earlier source) of the per-token decomposition every forward pass
/// carries (each block rescales every earlier source: O(L^2) per network whatever the
/// metrics), plus [`DECOMPOSITION_TOKEN_WORK`] per token. Measured on one core: 2.8 ns per
/// source and 0.5 ns per token (depth 20000, width 4, 2 and 8 tokens), about 100 and 25
/// flop-equivalents.
pub const DECOMPOSITION_SOURCE_WORK: f64 = 100.0;

/// Work charged per (block, earlier source, token) of the decomposition
/// ([`DECOMPOSITION_SOURCE_WORK`]).
pub const DECOMPOSITION_TOKEN_WORK: f64 = 20.0;

/// Work charged per sampled network (its input, generator and tables): ~5 us measured.
pub const NETWORK_WORK: f64 = 250_000.0;

/// Floating-point operations of block l's forward pass over one sequence of the
/// configuration's tokens: its products (2 flops per weight and token), attention's scores
/// and mixing (and a softmax per head), and the norms (~10 per value, three slots).
fn block_flops(cfg: &McConfig, l: usize) -> f64 {
    let (d, n, _) = sizes(cfg);
    let (d, n) = (d as f64, n as f64);
    let w = weight_floats(cfg, l) as f64;
    let heads = (cfg.heads as f64).max(1.0);
    let mix = match cfg.block(l) {
        Block::Attention { uniform: false } => 4.0 * n * n * d + 10.0 * heads * n * n,
        Block::Attention { uniform: true } => 2.0 * n * n * d,
        // No token mixing; cross-attention adds its memory's mean, computed once per network.
        Block::Linear | Block::Mlp(_) | Block::CrossAttention => 0.0,
    };
    2.0 * n * w + mix + 3.0 * 10.0 * d * n
}

/// Work of one forward pass through block l of a sampled network: [`block_flops`], the
/// weights' draws ([`DRAW_WORK`] each) and [`BLOCK_VISIT_WORK`].
fn block_work(cfg: &McConfig, l: usize) -> f64 {
    block_flops(cfg, l) + DRAW_WORK * weight_floats(cfg, l) as f64 + BLOCK_VISIT_WORK
}

/// Work of one forward pass of a trained body of `depth` blocks over `batch` sequences of
/// `cfg`'s tokens (its width, hidden ratio, heads and branch): the products, attention and
/// norms of each block per sequence, and [`BLOCK_VISIT_WORK`] per block.
pub(crate) fn body_forward_work(cfg: &McConfig, depth: usize, batch: f64) -> f64 {
    let l = depth as f64;
    let (odd, even) = ((l / 2.0).ceil(), (l / 2.0).floor());
    batch * (odd * block_flops(cfg, 1) + even * block_flops(cfg, 2)) + l * BLOCK_VISIT_WORK
}

/// The weights of a body of `depth` blocks (trained parameters, without norms and ends).
pub(crate) fn body_weights(cfg: &McConfig, depth: usize) -> u128 {
    per_depth(cfg, (depth as u128).min(1 << 40), weight_floats)
}

/// Floats a trained body of `depth` blocks keeps from its forward pass over one sequence of
/// `cfg`'s tokens for the backward pass: every block's input, output, norm caches and branch
/// intermediates, and the stream.
pub(crate) fn body_activation_floats(cfg: &McConfig, depth: usize) -> u128 {
    let (d, n, _) = sizes(cfg);
    let depth = (depth as u128).min(1 << 40);
    per_depth(cfg, depth, activation_floats).saturating_add((depth + 1).saturating_mul(d * n))
}

/// [`block_work`] summed over `blocks` blocks of the stack (odd and even blocks alternate).
fn blocks_work(cfg: &McConfig, blocks: f64) -> f64 {
    (blocks / 2.0).ceil() * block_work(cfg, 1) + (blocks / 2.0).floor() * block_work(cfg, 2)
}

/// Work of one sampled network of `depth` blocks measuring `metrics` at the layers
/// `selected` (flop-equivalents, [`WORK_RATE`](crate::budget::WORK_RATE)): the forward pass with its decomposition
/// (O(L^2) sources); one tangent per block for the gains (at the layers written, or every
/// block for a factorized path law); `merge_error` at the layers written; the output change
/// (a tangent and a weight perturbation per block); the backward pass (twice a forward); the
/// exact path polynomial up to `--path-max` (up to l + 1 tangents through block l: O(L^2)
/// blocks); the factorized path law's updates; and [`NETWORK_WORK`].
pub fn mc_network_work(
    cfg: &McConfig,
    depth: usize,
    metrics: &[Metric],
    selected: &Selected,
) -> f64 {
    let (_, n, _) = sizes(cfg);
    let l = depth as f64;
    let sel = (selected.count as f64).min(l);
    let needs = Metric::needs(metrics);
    let exact = needs.paths && depth <= cfg.path_max;
    let factorized = needs.paths && !exact;
    let mut blocks = l; // the forward pass
    if needs.gains || factorized {
        blocks += if factorized { l } else { sel };
    }
    if needs.merge {
        blocks += sel;
    }
    if needs.perturbation {
        blocks += 2.0 * l;
    }
    if needs.backward {
        blocks += 2.0 * l;
    }
    if exact {
        blocks += l * (l + 1.0) / 2.0;
    }
    let sources = l * (l + 1.0) / 2.0;
    let mut work = blocks_work(cfg, blocks)
        + sources * (DECOMPOSITION_SOURCE_WORK + DECOMPOSITION_TOKEN_WORK * n as f64)
        + NETWORK_WORK;
    if needs.decomposition {
        work += selected.sources as f64 * 3.0 * n as f64;
    }
    if factorized {
        work += 4.0 * Selected::all(depth).law_width + 2.0 * selected.law_width;
    }
    work
}

/// Refuses a Monte Carlo run of `presets` stacks of `depth` blocks whose work
/// ([`mc_network_work`] per network) exceeds [`MAX_WORK`](crate::budget::MAX_WORK).
pub(crate) fn check_mc_work(
    cfg: &McConfig,
    depth: usize,
    metrics: &[Metric],
    selected: &Selected,
    presets: usize,
) -> Result<()> {
    let work = mc_network_work(cfg, depth, metrics, selected) * cfg.samples as f64 * presets as f64;
    check_work(
        work,
        &format!("{} for {presets} preset(s)", mc_what(cfg, depth)),
        "--samples, --depth, --width, --tokens, --batch, --hidden-ratio, --heads, --path-max, or the metrics and --layers written",
    )
}

/// Bytes assumed available when the system does not say (not Linux): 4 GiB.
pub const DEFAULT_AVAILABLE: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// Share of the available memory that held networks may take together.
pub const HELD_SHARE: f64 = 0.5;

impl Memory {
    /// Whether a network of depth `depth` under `cfg` measuring `metrics` is held when
    /// `concurrent` networks run at once: always for [`Memory::Held`], never for
    /// [`Memory::Streamed`], and for [`Memory::Auto`] when `concurrent` held networks
    /// ([`super::size::mc_network_floats`] in `cfg.precision`) fit in `held_budget`.
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
                let floats = super::size::mc_network_floats(cfg, depth, metrics, true);
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
}

/// [`HELD_SHARE`] of the memory available now (`MemAvailable` of `/proc/meminfo`), or of
/// [`DEFAULT_AVAILABLE`] where that cannot be read.
pub(crate) fn held_budget() -> f64 {
    HELD_SHARE
        * crate::budget::available()
            .map(|b| b as f64)
            .unwrap_or(DEFAULT_AVAILABLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RawModel;
    use crate::monte_carlo::{Memory, Precision, RawMc};

    #[test]
    fn work_counts_the_quadratic_decomposition_and_every_size() {
        let cfg = |width, tokens, depth, samples| {
            let raw = RawModel {
                width,
                tokens,
                depth,
                ..RawModel::default()
            };
            let mc = RawMc {
                samples,
                ..RawMc::default()
            };
            McConfig::new(&raw, &mc).unwrap()
        };
        let m = [Metric::StreamSq];
        let last = |depth: usize| Selected::of(&[depth]);
        let w = |c: &McConfig| mc_network_work(c, c.model.depth, &m, &last(c.model.depth));
        // Tiny matrices: the O(L^2) decomposition dominates, so 10x the depth is ~100x.
        let (a, b) = (w(&cfg(4, 2, 10_000, 2)), w(&cfg(4, 2, 100_000, 2)));
        assert!(b > 90.0 * a && b < 110.0 * a, "{a} {b}");
        assert!(w(&cfg(4, 8, 10_000, 2)) > a);
        assert!(w(&cfg(64, 2, 10_000, 2)) > a);
        // The report's depth 1e7, width 16, 4 tokens, 4 networks: refused.
        let huge = cfg(16, 4, 10_000_000, 4);
        let e = check_mc_work(&huge, 10_000_000, &m, &last(10_000_000), 3).unwrap_err();
        assert!(e.to_string().contains("floating-point operations"), "{e}");
        // A small run is far below the cap.
        let small = cfg(64, 8, 64, 32);
        assert!(check_mc_work(&small, 64, Metric::ALL, &Selected::all(64), 3).is_ok());
        // Selected::all agrees with listing the layers.
        let listed: Vec<usize> = (0..=300).collect();
        let (x, y) = (Selected::all(300), Selected::of(&listed));
        assert_eq!((x.count, x.sources), (y.count, y.sources));
        assert!(
            x.law_width >= y.law_width,
            "{} {}",
            x.law_width,
            y.law_width
        );
        assert!(path_law_width(10) <= 11.0 && path_law_width(1 << 40) < 1e9);
    }

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
        let held = |c: &McConfig, l| 8 * mc_network_floats(c, l, &m, true);
        let small = held(&cfg(64, 8), 8);
        // The weights alone: 8 blocks x 2 (4d x d) f64 matrices.
        assert!(small >= 8 * 2 * 4 * 64 * 64 * 8);
        assert!(held(&cfg(128, 8), 8) > small);
        assert!(held(&cfg(64, 16), 16) > small);
        // The reported case: d = 100000 is ~1.3 TB per 2-block network, refused on any machine
        // this project runs on.
        assert!(held(&cfg(100_000, 2), 2) > 1_000_000_000_000);
    }
}
