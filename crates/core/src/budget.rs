//! Sizes checked before anything is allocated: an estimate of the peak memory of a run, refused
//! with the estimate, the machine's available memory and the settings to lower when it cannot
//! fit ([`crate::Error::TooLarge`], exit status 2).
//!
//! The estimates are upper bounds of the large buffers (f64 matrices and per-network tables);
//! small bookkeeping is left out.
//!
//! The memory a run may use ([`available`]) is the least of what can be read of
//!
//! | bound | source |
//! |---|---|
//! | [`SOURCE_MEMINFO`] | the machine's `MemAvailable` (`/proc/meminfo`) |
//! | [`SOURCE_RLIMIT_AS`] | `RLIMIT_AS` (`ulimit -v`, `prlimit --as`) less `VmSize` (`/proc/self/status`) |
//! | [`SOURCE_CGROUP_V2`] | `memory.max` less `memory.current` of the process's cgroup and its ancestors |
//! | [`SOURCE_CGROUP_V1`] | `memory.limit_in_bytes` less `memory.usage_in_bytes`, likewise |
//!
//! and the refusal names the bound that is exceeded. Every file is read with
//! [`crate::input::read_text`] (bounded, regular files only).
//!
//! Work is checked too: a Monte Carlo run ([`check_mc_work`]), a training request
//! ([`crate::train::config::TrainConfig::check_work`]) or a `bench --memory-probe` estimated at
//! more than [`MAX_WORK`] floating-point operations (three days at [`WORK_RATE`], 1e11 per
//! second) is refused with its estimate, in operations and days, and the flags that lower it.
//! There is no flag to raise the cap: split the work instead (fewer networks or seeds per
//! run, `reproduce --shard`).

use crate::branch::Block;
use crate::metrics::{Metric, Needs};
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

/// One bound on the memory this process may still allocate, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Bytes left under this bound.
    pub bytes: u128,
    /// The bound, in words, for error messages (e.g. `the address-space limit RLIMIT_AS ...`).
    pub source: &'static str,
}

/// The machine's free memory: `MemAvailable` of `/proc/meminfo` (what the kernel estimates
/// can be allocated without swapping, page cache included).
pub const SOURCE_MEMINFO: &str = "MemAvailable of /proc/meminfo";

/// The process's address-space limit: `RLIMIT_AS` (`ulimit -v`, `prlimit --as`) minus the
/// virtual memory it already maps (`VmSize` of `/proc/self/status`). The limit counts virtual
/// memory, reserved or touched, so the space left is the limit less `VmSize`, not less the
/// resident set.
pub const SOURCE_RLIMIT_AS: &str =
    "the address-space limit RLIMIT_AS (ulimit -v) less this process's VmSize";

/// The process's cgroup v2 limit: `memory.max` less `memory.current` of its cgroup (the
/// `0::PATH` line of `/proc/self/cgroup`) and of every ancestor, under `/sys/fs/cgroup` or,
/// on hybrid hierarchies, `/sys/fs/cgroup/unified`; the tightest of them.
pub const SOURCE_CGROUP_V2: &str = "the cgroup v2 memory.max less memory.current";

/// The process's cgroup v1 limit: `memory.limit_in_bytes` less `memory.usage_in_bytes` of its
/// memory cgroup (the `N:memory:PATH` line of `/proc/self/cgroup`) and of every ancestor, under
/// `/sys/fs/cgroup/memory`; the tightest of them. Limits of [`CGROUP_V1_UNLIMITED`] or more
/// mean none.
pub const SOURCE_CGROUP_V1: &str = "the cgroup v1 memory.limit_in_bytes less memory.usage_in_bytes";

/// cgroup v1 writes "no limit" as the largest page-aligned `i64` (9223372036854771712); any
/// limit from 2^62 bytes up is taken as none.
pub const CGROUP_V1_UNLIMITED: u128 = 1 << 62;

/// The value of a `kB` field of `/proc/meminfo` or `/proc/self/status` (`Name:   123 kB`),
/// in bytes.
pub fn parse_kb_field(text: &str, field: &str) -> Option<u128> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?.trim();
        let kb: u128 = rest
            .strip_suffix("kB")
            .unwrap_or(rest)
            .trim()
            .parse()
            .ok()?;
        kb.checked_mul(1024)
    })
}

/// A cgroup limit or usage file's value: bytes, or `None` for `max` (no limit) and text that
/// is not a number.
pub fn parse_cgroup_value(text: &str) -> Option<u128> {
    text.trim().parse().ok()
}

/// The cgroup path of `/proc/self/cgroup` text: the unified (v2) hierarchy's (`0::PATH`) with
/// `v2`, else the memory controller's v1 hierarchy (`N:...memory...:PATH`).
pub fn parse_cgroup_path(text: &str, v2: bool) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if v2 {
            id == "0" && controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "memory")
        };
        (hit && path.starts_with('/')).then(|| path.to_string())
    })
}

/// The space left under the tightest of the limits `(limit, usage)` read for a cgroup and its
/// ancestors (a missing usage counts as 0; limits of [`CGROUP_V1_UNLIMITED`] and up are none).
pub fn cgroup_room(levels: &[(Option<u128>, Option<u128>)]) -> Option<u128> {
    levels
        .iter()
        .filter_map(|&(limit, usage)| {
            let limit = limit.filter(|&l| l < CGROUP_V1_UNLIMITED)?;
            Some(limit.saturating_sub(usage.unwrap_or(0)))
        })
        .min()
}

/// The space left under an address-space limit `limit` with `vm_size` bytes already mapped
/// (`None`, unknown, counts as nothing mapped).
pub fn address_space_room(limit: u128, vm_size: Option<u128>) -> u128 {
    limit.saturating_sub(vm_size.unwrap_or(0))
}

/// The text of a /proc or /sys file (bounded, regular files only: [`crate::input::read_text`]).
fn read_sys(path: &str) -> Option<String> {
    crate::input::read_text(std::path::Path::new(path)).ok()
}

/// The soft `RLIMIT_AS` in bytes, or `None` if unlimited (or not known).
fn rlimit_as() -> Option<u128> {
    normscope_numeric::sys::address_space_limit()
}

/// The cgroup `path` and its ancestors, innermost first, as suffixes of the hierarchy's mount
/// point: `/a/b` gives `/a/b`, `/a` and `` (the root).
pub fn cgroup_ancestors(path: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut dir = path.trim_end_matches('/');
    loop {
        dirs.push(dir.to_string());
        match dir.rfind('/') {
            Some(i) => dir = &dir[..i],
            None => break,
        }
    }
    dirs
}

/// The cgroup room of the hierarchy mounted at `root` for the cgroup `path`: the `limit` and
/// `usage` files of the cgroup and of every ancestor ([`cgroup_room`]).
fn cgroup_levels(root: &str, path: &str, limit: &str, usage: &str) -> Option<u128> {
    let value = |dir: &str, file: &str| {
        read_sys(&format!("{root}{dir}/{file}")).and_then(|t| parse_cgroup_value(&t))
    };
    let levels: Vec<_> = cgroup_ancestors(path)
        .iter()
        .map(|dir| (value(dir, limit), value(dir, usage)))
        .collect();
    cgroup_room(&levels)
}

/// Every bound on the memory this process may still allocate that can be read here (none on
/// systems without `/proc`): [`SOURCE_MEMINFO`], [`SOURCE_RLIMIT_AS`], [`SOURCE_CGROUP_V2`],
/// [`SOURCE_CGROUP_V1`].
pub fn limits() -> Vec<Limit> {
    let mut out = Vec::new();
    let mut push = |bytes: Option<u128>, source| {
        if let Some(bytes) = bytes {
            out.push(Limit { bytes, source });
        }
    };
    push(
        read_sys("/proc/meminfo").and_then(|t| parse_kb_field(&t, "MemAvailable")),
        SOURCE_MEMINFO,
    );
    push(
        rlimit_as().map(|limit| {
            let vm = read_sys("/proc/self/status").and_then(|t| parse_kb_field(&t, "VmSize"));
            address_space_room(limit, vm)
        }),
        SOURCE_RLIMIT_AS,
    );
    if let Some(cgroups) = read_sys("/proc/self/cgroup") {
        let v2 = parse_cgroup_path(&cgroups, true).and_then(|p| {
            ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .iter()
                .filter_map(|root| cgroup_levels(root, &p, "memory.max", "memory.current"))
                .min()
        });
        push(v2, SOURCE_CGROUP_V2);
        let v1 = parse_cgroup_path(&cgroups, false).and_then(|p| {
            cgroup_levels(
                "/sys/fs/cgroup/memory",
                &p,
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        });
        push(v1, SOURCE_CGROUP_V1);
    }
    out
}

/// The tightest of [`limits`], or `None` where none is known (then nothing is refused).
pub fn tightest() -> Option<Limit> {
    limits().into_iter().min_by_key(|l| l.bytes)
}

/// Bytes this process may still allocate: the least of the machine's `MemAvailable`, the room
/// under its address-space limit and under its cgroup's memory limit ([`limits`]), or `None`
/// where none is known (then nothing is refused).
pub fn available() -> Option<u128> {
    tightest().map(|l| l.bytes)
}

fn gb(bytes: u128) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Refuses a run whose estimated peak `bytes` exceeds the memory this process may use
/// ([`tightest`]), naming the bound it exceeds.
pub fn check(bytes: u128, what: &str, lower: &str) -> Result<()> {
    match tightest() {
        Some(limit) if bytes > limit.bytes => Err(Error::TooLarge(format!(
            "{what} needs about {} of memory, more than the {} this process may use ({}): lower {lower}",
            gb(bytes),
            gb(limit.bytes),
            limit.source
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
    network_bytes_for(cfg, depth, Metric::needs(metrics))
}

/// [`network_bytes`] for a network computing `needs`.
pub fn network_bytes_for(cfg: &McConfig, depth: usize, needs: Needs) -> u128 {
    let (d, n, _) = sizes(cfg);
    let depth = (depth as u128).min(1 << 40);
    let stream = (depth + 1) * d * n;
    let weights = per_depth(cfg, depth, weight_floats);
    let acts = per_depth(cfg, depth, activation_floats);
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
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Selected {
    /// Layers written.
    pub count: u128,
    /// Their `l + 1` summed: the sources of the decomposition kept at each, and the length
    /// classes of an exact path law.
    pub sources: u128,
    /// [`path_law_width`] summed over them: the lengths a factorized path law carries.
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
pub fn path_law_width(l: u128) -> f64 {
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
/// that cannot fit: [`mc_bytes`] with the table's rows, plus every network in flight's
/// [`mc_network_extra_bytes`].
pub fn check_mc_selected(
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
        "Monte Carlo at width {}, {} tokens, depth {depth}, {} networks",
        cfg.model.branch.width, cfg.model.branch.tokens, cfg.samples
    )
}

fn mc_lower(cfg: &McConfig) -> &'static str {
    if cfg.memory == crate::monte_carlo::Memory::Held {
        "--width, --tokens, --depth, --hidden-ratio, --samples, or the metrics and --layers written, or stream the networks (--memory streamed or auto)"
    } else {
        "--width, --tokens, --depth, --hidden-ratio, --samples, or the metrics and --layers written"
    }
}

/// The rate, in floating-point operations per second on the whole machine, at which work
/// estimates are read as time: about the engine's f64 forward and backward passes on the
/// project's 2-core machine (docs/performance.md: 187 GFLOP/s on the reference workload),
/// rounded down. Small matrices run far below it, so the times it gives are optimistic.
pub const WORK_RATE: f64 = 1e11;

/// The longest run accepted: three days at [`WORK_RATE`] ([`MAX_WORK`]). There is no flag to
/// go beyond it: split the work (fewer networks per run and several seeds, or `reproduce
/// --shard`).
pub const MAX_WORK_SECONDS: f64 = 3.0 * 86_400.0;

/// The most work one command may ask for, in floating-point operations (and their
/// equivalents below): [`MAX_WORK_SECONDS`] at [`WORK_RATE`], 2.6e16.
pub const MAX_WORK: f64 = WORK_RATE * MAX_WORK_SECONDS;

/// Work charged per standard normal drawn (a Ziggurat draw of f64, in flop-equivalents: ~2 ns
/// on one core at half of [`WORK_RATE`]).
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
        _ => 0.0,
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
pub fn body_forward_work(cfg: &McConfig, depth: usize, batch: f64) -> f64 {
    let l = depth as f64;
    let (odd, even) = ((l / 2.0).ceil(), (l / 2.0).floor());
    batch * (odd * block_flops(cfg, 1) + even * block_flops(cfg, 2)) + l * BLOCK_VISIT_WORK
}

/// The weights of a body of `depth` blocks (trained parameters, without norms and ends).
pub fn body_weights(cfg: &McConfig, depth: usize) -> u128 {
    per_depth(cfg, (depth as u128).min(1 << 40), weight_floats)
}

/// [`block_work`] summed over `blocks` blocks of the stack (odd and even blocks alternate).
fn blocks_work(cfg: &McConfig, blocks: f64) -> f64 {
    (blocks / 2.0).ceil() * block_work(cfg, 1) + (blocks / 2.0).floor() * block_work(cfg, 2)
}

/// Work of one sampled network of `depth` blocks measuring `metrics` at the layers
/// `selected` (flop-equivalents, [`WORK_RATE`]): the forward pass with its decomposition
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

/// `seconds` in words: hours below two days, else days.
fn duration(seconds: f64) -> String {
    let hours = seconds / 3600.0;
    if hours < 48.0 {
        format!("{hours:.0} hours")
    } else if hours / 24.0 < 1e6 {
        format!("{:.0} days", hours / 24.0)
    } else {
        format!("{:.1e} days", hours / 24.0)
    }
}

/// Refuses work estimated at more than [`MAX_WORK`] (a NaN estimate too): `what` is the run,
/// `lower` the flags that bring it down.
pub fn check_work(work: f64, what: &str, lower: &str) -> Result<()> {
    if work <= MAX_WORK {
        return Ok(());
    }
    Err(Error::TooLarge(format!(
        "{what} is about {work:.1e} floating-point operations, about {} at {WORK_RATE:.0e} per second, more than the {MAX_WORK:.1e} ({}) a run may take: lower {lower}",
        duration(work / WORK_RATE),
        duration(MAX_WORK_SECONDS)
    )))
}

/// Refuses a Monte Carlo run of `presets` stacks of `depth` blocks whose work
/// ([`mc_network_work`] per network) exceeds [`MAX_WORK`].
pub fn check_mc_work(
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
        "--samples, --depth, --width, --tokens, --hidden-ratio, --heads, --path-max, or the metrics and --layers written",
    )
}

/// Bytes of the stack `preset` builds at `depth`: a placement file whose scales depend on
/// the block index builds one segment per block (a built-in preset, at most a few). Estimated
/// without building it: the stack at two small depths gives the segments' growth, extended to
/// `depth` (at most one per block); three times the vector, for its growth.
pub fn stack_bytes(preset: &str, depth: usize) -> Result<u128> {
    const PROBE: usize = 1024;
    let p = crate::placement::find(preset)?;
    let segments = |l: usize| p.stack(l).map(|s| s.segments.len() as u128);
    let count = if p.file().is_none() || depth <= 2 * PROBE {
        if p.file().is_none() {
            segments(depth.clamp(1, 2 * PROBE))?
        } else {
            segments(depth.max(1))?
        }
    } else {
        let (a, b) = (segments(PROBE)?, segments(2 * PROBE)?);
        let growth = b.saturating_sub(a);
        b.saturating_add(
            growth
                .saturating_mul((depth - 2 * PROBE) as u128)
                .div_ceil(PROBE as u128),
        )
        .min(depth as u128)
    };
    Ok(3 * count.saturating_mul(std::mem::size_of::<crate::spec::Segment>() as u128))
}

/// The largest [`stack_bytes`] of `presets` at `depth`.
pub fn stacks_bytes(presets: &[String], depth: usize) -> Result<u128> {
    presets
        .iter()
        .map(|p| stack_bytes(p, depth))
        .try_fold(0, |m, b| Ok(b?.max(m)))
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
    check(
        closed_form_plan_bytes(depth, keep, kept),
        &format!("the closed form at depth {depth}"),
        "--depth, or --layers and the metrics (coef, branch_weight, path_len and eff_depth keep every layer)",
    )
}

/// Peak bytes of a closed form of `depth` blocks: what `keep` holds per layer, the `kept`
/// layers, and the square-root checkpoints.
pub fn closed_form_plan_bytes(depth: usize, keep: &crate::theory::Keep, kept: u128) -> u128 {
    let sqrt = ((depth as f64 + 1.0).sqrt().ceil()) as u128;
    let len = depth as u128 + 1;
    // Kept layers: dense vectors over every layer when they are a quarter or more of them
    // (Keep::dense), else B-tree entries at about three times a slot's bytes each.
    let kept_bytes = if kept.saturating_mul(4) >= len {
        CLOSED_FORM_PER_LAYER * len
    } else {
        SPARSE_PER_KEPT_LAYER * kept
    };
    keep.bytes_per_layer()
        .saturating_mul(len)
        .saturating_add(kept_bytes)
        .saturating_add(CLOSED_FORM_PER_LAYER * sqrt)
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
    fn kb_fields_of_meminfo_and_status_are_read_in_bytes() {
        let meminfo =
            "MemTotal:       24684096 kB\nMemFree:         1000 kB\nMemAvailable:   22118144 kB\n";
        assert_eq!(
            parse_kb_field(meminfo, "MemAvailable"),
            Some(22118144 * 1024)
        );
        // A prefix of another field's name does not match it.
        assert_eq!(parse_kb_field(meminfo, "Mem"), None);
        let status = "Name:\tnormscope\nVmPeak:\t  200000 kB\nVmSize:\t  123456 kB\n";
        assert_eq!(parse_kb_field(status, "VmSize"), Some(123456 * 1024));
        assert_eq!(parse_kb_field(status, "VmRSS"), None);
        assert_eq!(parse_kb_field("VmSize:\tlots kB\n", "VmSize"), None);
    }

    #[test]
    fn cgroup_paths_limits_and_rooms_are_parsed() {
        let hybrid = "12:pids:/\n4:memory:/jobs/a7\n1:cpu,cpuacct:/\n0::/user.slice/run-1.scope\n";
        assert_eq!(
            parse_cgroup_path(hybrid, true).as_deref(),
            Some("/user.slice/run-1.scope")
        );
        assert_eq!(
            parse_cgroup_path(hybrid, false).as_deref(),
            Some("/jobs/a7")
        );
        let joined = "3:cpu,memory,blkio:/batch\n";
        assert_eq!(parse_cgroup_path(joined, false).as_deref(), Some("/batch"));
        assert_eq!(parse_cgroup_path(joined, true), None);
        assert_eq!(parse_cgroup_path("0::/\n", true).as_deref(), Some("/"));
        assert_eq!(
            cgroup_ancestors("/a/b"),
            vec!["/a/b".to_string(), "/a".into(), "".into()]
        );
        assert_eq!(cgroup_ancestors("/"), vec![String::new()]);
        assert_eq!(parse_cgroup_value("max\n"), None);
        assert_eq!(parse_cgroup_value("8589934592\n"), Some(8 << 30));
        // The tightest level wins; v1's "unlimited" and v2's "max" are no limit.
        let gib = 1u128 << 30;
        let levels = [
            (None, Some(gib)),
            (Some(9223372036854771712), Some(gib)),
            (Some(8 * gib), Some(3 * gib)),
            (Some(6 * gib), None),
        ];
        assert_eq!(cgroup_room(&levels), Some(5 * gib));
        assert_eq!(cgroup_room(&levels[..2]), None);
        // Usage above the limit leaves nothing.
        assert_eq!(cgroup_room(&[(Some(gib), Some(2 * gib))]), Some(0));
        assert_eq!(address_space_room(8 * gib, Some(gib)), 7 * gib);
        assert_eq!(address_space_room(gib, Some(2 * gib)), 0);
        assert_eq!(address_space_room(gib, None), gib);
    }

    #[test]
    fn the_tightest_limit_is_the_one_available_and_named() {
        let all = limits();
        if let Some(t) = tightest() {
            assert!(all.iter().all(|l| l.bytes >= t.bytes));
            assert_eq!(available(), Some(t.bytes));
            let e = check(t.bytes + 1, "this", "--x").unwrap_err().to_string();
            assert!(e.contains(t.source) && e.contains("lower --x"), "{e}");
            assert!(check(t.bytes, "this", "--x").is_ok());
        }
    }

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
    fn a_stack_with_a_segment_per_block_is_sized_by_its_depth() {
        let builtin = stack_bytes("pre", 1_000_000_000).unwrap();
        assert!(builtin < 1000, "{builtin}");
        crate::placement::load_text(
            "[[placement]]\nname = \"budget-test-decay\"\nlabel = \"x\"\nequation = \"x\"\nsource = \"x\"\nfinal_norm = \"layer\"\n[[placement.segment]]\ninput = \"layer\"\nbranch = \"1/sqrt(l)\"\n",
            "budget-test.toml",
        )
        .unwrap();
        let per_block = stack_bytes("budget-test-decay", 1_000_000_000).unwrap();
        let segment = std::mem::size_of::<crate::spec::Segment>() as u128;
        assert_eq!(per_block, 3 * segment * 1_000_000_000);
        let small = stack_bytes("budget-test-decay", 100).unwrap();
        assert_eq!(small, 3 * segment * 100);
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
