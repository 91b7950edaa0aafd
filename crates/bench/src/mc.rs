//! `normscope-bench`: the reference workload against plain PyTorch, in one run on the same
//! machine, dtype (f64 and f32) and thread count, next to the machine's GEMM rates
//! (matrixmultiply and faer, each called directly, and in f64 the engine's own kernel,
//! [`normscope::numeric::exact_dgemm`], where it runs; the engine's f32 products are
//! faer's, [`normscope::numeric::gemm`]) measured in the same run, in `--repeats` rounds
//! judged on their median, and the peak memory of one network against the bound.
//!
//! Workload (issue "Monte Carlo engine"): presets pre, post, deepnorm; ReLU-MLP branch with
//! hidden ratio 4; d = 512, n = 128 tokens, L = 32 blocks, 8 networks each; forward with
//! stream statistics and the decomposition, plus one backward pass for a random output
//! gradient giving `grad_sq` and `weight_grad_sq` per layer. Nominal FLOPs are the GEMMs:
//! `12 r d^2 n` per block (2 forward, 2 input-gradient and 2 weight-gradient products).

use nalgebra::DMatrix;
use normscope::engine::Plan;
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::RawModel;
use normscope::monte_carlo::{self, McConfig, Precision, RawMc};
use normscope::numeric::gemm;
use normscope::spec::StackSpec;
use normscope::{Error, Result};
use rayon::prelude::*;
use std::time::Instant;

use crate::common::{VERDICT_STATISTIC, names, precisions, python_json, statistic, verdict};
use crate::summary::Outcome;

/// The target: PyTorch eager time / normscope time in f32 at least this.
pub const TARGET_F32_VS_TORCH: f64 = 2.0;
/// The target: PyTorch eager time / normscope time in f64 at least this.
pub const TARGET_F64_VS_TORCH: f64 = 3.0;
/// The target: normscope's GFLOP/s at least this share of the better GEMM rate.
pub const TARGET_GEMM_SHARE: f64 = 0.8;
/// The target: peak resident memory of one network at most this factor of
/// `8 (d^2 r + L d n)` bytes ([`TARGET_MEMORY_BYTES`] per value, in both precisions).
pub const TARGET_MEMORY_FACTOR: f64 = 2.0;

/// Bytes per value in the bound `8 (d^2 r + L d n)`, as the issue writes it for both
/// precisions; an f32 network is also compared, for information, with `4 (d^2 r + L d n)`,
/// the size of its own values.
pub const TARGET_MEMORY_BYTES: usize = 8;

/// The workload's metrics (forward statistics, decomposition, backward).
pub const METRICS: &str = "stream_sq,corr,coef,branch_weight,grad_sq,weight_grad_sq";

/// Hidden ratio r of the workload's ReLU-MLP branch.
pub const RATIO: usize = 4;

/// Bytes as `12.3 MB` below a gigabyte, else `1.23 GB` (decimal units).
pub fn size(bytes: f64) -> String {
    if bytes < 1e9 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.2} GB", bytes / 1e9)
    }
}

/// Workload size.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Width d.
    pub width: usize,
    /// Tokens n.
    pub tokens: usize,
    /// Blocks L.
    pub depth: usize,
    /// Networks per preset.
    pub samples: usize,
}

impl Workload {
    /// The reference size.
    pub const REFERENCE: Workload = Workload {
        width: 512,
        tokens: 128,
        depth: 32,
        samples: 8,
    };
    /// A small size for smoke tests.
    pub const QUICK: Workload = Workload {
        width: 128,
        tokens: 32,
        depth: 8,
        samples: 4,
    };

    /// The reference size, or the small one for `--quick`.
    pub fn of(quick: bool) -> Workload {
        if quick { Self::QUICK } else { Self::REFERENCE }
    }

    /// Nominal GEMM FLOPs of the whole workload (three presets).
    pub fn flops(&self) -> f64 {
        let (d, n) = (self.width as f64, self.tokens as f64);
        3.0 * self.samples as f64 * self.depth as f64 * 12.0 * RATIO as f64 * d * d * n
    }

    /// Depths of the memory measurement by default: the 32, 256 and 1000 at the
    /// reference size, small ones for `--quick`.
    pub fn memory_depths(quick: bool) -> Vec<usize> {
        if quick {
            vec![2, 8, 32]
        } else {
            vec![32, 256, 1000]
        }
    }
}

/// GEMM rates (GFLOP/s) of one precision at the workload's shape.
#[derive(Clone, Copy, Debug)]
pub struct GemmRates {
    /// matrixmultiply's `dgemm`/`sgemm`, called directly.
    pub matrixmultiply: f64,
    /// faer's `matmul` with `Par::Seq`.
    pub faer: f64,
    /// The engine's own f64 kernel ([`normscope::numeric::exact_dgemm`]) through the
    /// engine's product, when the engine uses it (f64 on an AVX-512 machine); the engine's f32
    /// kernel is faer's, measured above.
    pub own: Option<f64>,
}

/// The name [`GemmRates::best`] gives the engine's own f64 kernel.
pub const OWN_KERNEL_NAME: &str = "normscope's dgemm kernel";

impl GemmRates {
    /// The best of the rates measured, with its name.
    pub fn best(&self) -> (&'static str, f64) {
        let mut best = ("matrixmultiply", self.matrixmultiply);
        for (name, rate) in [("faer", Some(self.faer)), (OWN_KERNEL_NAME, self.own)] {
            if let Some(r) = rate.filter(|&r| r > best.1) {
                best = (name, r);
            }
        }
        best
    }

    /// `, normscope's dgemm kernel R GFLOP/s` when it was measured, else nothing.
    pub fn own_text(&self) -> String {
        self.own
            .map(|r| format!(", {OWN_KERNEL_NAME} {r:.1} GFLOP/s"))
            .unwrap_or_default()
    }
}

/// The GEMM the engine's products use in `precision`: f64 with matrixmultiply's `dgemm`
/// arithmetic ([`normscope::numeric::exact_dgemm::kernel_name`]), f32 faer's
/// ([`gemm::Real::KERNEL`]).
pub fn engine_kernel(precision: Precision) -> &'static str {
    match precision {
        Precision::F64 => normscope::numeric::exact_dgemm::kernel_name(),
        Precision::F32 => <f32 as gemm::Real>::KERNEL,
    }
}

/// GFLOP/s of `threads` threads at once, each running its own stream of `product` (one
/// single-threaded product of `flops` FLOPs per call, returning a value to keep), for about
/// `seconds` of wall time.
fn stream_rate(
    threads: usize,
    seconds: f64,
    flops: f64,
    product: &(dyn Fn() -> f64 + Sync),
) -> f64 {
    let t = Instant::now();
    std::hint::black_box(product());
    let one = t.elapsed().as_secs_f64().max(1e-7);
    let reps = ((seconds / one).ceil() as usize).max(3);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let start = Instant::now();
    let sink: f64 = pool.install(|| {
        (0..threads)
            .into_par_iter()
            .map(|_| (0..reps).map(|_| product()).sum::<f64>())
            .sum()
    });
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    (threads * reps) as f64 * flops / secs / 1e9
}

/// Operand value (i, j) of the left and right GEMM operands: small integers, exact in f32.
fn lhs(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 3) % 11) as f64 - 5.0
}
fn rhs(i: usize, j: usize) -> f64 {
    ((i + j * 5) % 13) as f64 - 6.0
}

/// matrixmultiply's GEMM (`dgemm` or `sgemm`, through the numeric layer's `$gemm`) in the given float type,
/// called directly (one single-threaded product per call, into a new matrix as faer's is).
macro_rules! matrixmultiply_rate {
    ($t:ty, $gemm:ident, $w:expr, $threads:expr, $seconds:expr) => {{
        let (d, n) = ($w.width, $w.tokens);
        let (m, k) = (RATIO * d, d);
        let a = DMatrix::<$t>::from_fn(m, k, |i, j| lhs(i, j) as $t);
        let b = DMatrix::<$t>::from_fn(k, n, |i, j| rhs(i, j) as $t);
        let flops = 2.0 * (m * k * n) as f64;
        stream_rate($threads, $seconds, flops, &|| {
            let c = normscope::numeric::gemm::$gemm(&a, &b);
            f64::from(c[(0, 0)])
        })
    }};
}

/// faer's GEMM in the given float type (one sequential product per call).
macro_rules! faer_rate {
    ($t:ty, $w:expr, $threads:expr, $seconds:expr) => {{
        let (d, n) = ($w.width, $w.tokens);
        let a = faer::Mat::<$t>::from_fn(RATIO * d, d, |i, j| lhs(i, j) as $t);
        let b = faer::Mat::<$t>::from_fn(d, n, |i, j| rhs(i, j) as $t);
        let flops = 2.0 * (RATIO * d * d * n) as f64;
        stream_rate($threads, $seconds, flops, &|| {
            let mut c = faer::Mat::<$t>::zeros(RATIO * d, n);
            faer::linalg::matmul::matmul(
                c.as_mut(),
                faer::Accum::Replace,
                a.as_ref(),
                b.as_ref(),
                1.0,
                faer::Par::Seq,
            );
            f64::from(c[(0, 0)])
        })
    }};
}

/// The engine's f64 product ([`gemm::nn`], the kernel its passes use) at the workload's shape.
fn engine_rate(w: Workload, threads: usize, seconds: f64) -> f64 {
    let (d, n) = (w.width, w.tokens);
    let a = DMatrix::<f64>::from_fn(RATIO * d, d, lhs);
    let b = DMatrix::<f64>::from_fn(d, n, rhs);
    let flops = 2.0 * (RATIO * d * d * n) as f64;
    stream_rate(threads, seconds, flops, &|| gemm::nn(&a, &b)[(0, 0)])
}

/// GEMM rates of the workload's shape `(4d x d)(d x n)` in `precision`, one single-threaded
/// product stream per thread on `threads` threads at once (how the engine uses the cores);
/// each kernel runs for about `seconds`.
pub fn gemm_rates(w: Workload, threads: usize, precision: Precision, seconds: f64) -> GemmRates {
    match precision {
        Precision::F64 => GemmRates {
            matrixmultiply: matrixmultiply_rate!(f64, matrixmultiply_f64, w, threads, seconds),
            faer: faer_rate!(f64, w, threads, seconds),
            own: normscope::numeric::exact_dgemm::active()
                .then(|| engine_rate(w, threads, seconds)),
        },
        Precision::F32 => GemmRates {
            matrixmultiply: matrixmultiply_rate!(f32, matrixmultiply_f32, w, threads, seconds),
            faer: faer_rate!(f32, w, threads, seconds),
            own: None,
        },
    }
}

/// The workload's Monte Carlo configuration at `depth` with `samples` networks.
fn workload_config(
    w: Workload,
    depth: usize,
    samples: usize,
    precision: Precision,
    memory: monte_carlo::Memory,
) -> Result<McConfig> {
    let raw = RawModel {
        depth,
        branch: "relu-mlp".into(),
        width: w.width,
        tokens: w.tokens,
        ..RawModel::default()
    };
    let mc = RawMc {
        samples,
        precision,
        memory,
        ..RawMc::default()
    };
    McConfig::new(&raw, &mc)
}

/// Runs the workload with normscope's Monte Carlo engine in `precision`; returns seconds.
pub fn normscope_seconds(w: Workload, precision: Precision) -> Result<EngineRun> {
    let cfg = workload_config(w, w.depth, w.samples, precision, monte_carlo::Memory::Auto)?;
    let metrics = Metric::parse_list(METRICS)?;
    let presets = normscope::model::parse_presets("pre,post,deepnorm")?;
    let engine = monte_carlo::MonteCarlo {
        cfg: &cfg,
        progress: &(),
    };
    let plan = Plan::new(&metrics, LayerSpec::All);
    gemm::count_products(true);
    let start = Instant::now();
    let rows = normscope::tables::rows(&engine, &cfg.model, &presets, &plan, &mut Vec::new());
    let seconds = start.elapsed().as_secs_f64();
    gemm::count_products(false);
    std::hint::black_box(rows?);
    let (flops, product_seconds) = gemm::product_totals();
    let concurrent = rayon::current_num_threads().min(cfg.samples);
    let memory = cfg
        .memory
        .resolve(&cfg, w.depth, &metrics, concurrent)
        .name();
    Ok(EngineRun {
        seconds,
        flops,
        product_seconds,
        pass_seconds: gemm::pass_seconds(),
        draw_seconds: gemm::draw_seconds(),
        memory,
    })
}

/// One timed run of the engine on the workload.
#[derive(Clone, Copy, Debug)]
pub struct EngineRun {
    /// Wall time of the whole run.
    pub seconds: f64,
    /// FLOPs the engine's products performed (`2 m k n` each; the held engine skips the
    /// gradients of the first MLP matrix, which nothing reads: 10 of the nominal 12 units).
    pub flops: f64,
    /// Seconds spent inside products, summed over threads.
    pub product_seconds: f64,
    /// Seconds of the forward and backward passes less their weight drawing, summed over
    /// threads ([`gemm::pass_seconds`]).
    pub pass_seconds: f64,
    /// Seconds of drawing the blocks' weights, summed over threads ([`gemm::draw_seconds`]).
    pub draw_seconds: f64,
    /// The memory mode `--memory auto` chose (`held` or `streamed`).
    pub memory: &'static str,
}

impl EngineRun {
    /// GFLOP/s of the products while they ran, over `threads` threads (the kernel alone, at
    /// the engine's shapes).
    pub fn product_rate(&self, threads: usize) -> f64 {
        self.flops / (self.product_seconds / threads as f64) / 1e9
    }

    /// GFLOP/s of the forward and backward passes (products, norms, activations,
    /// decomposition and statistics; weight drawing excluded), over `threads` threads: the
    /// engine's GEMM-dominated phases, comparable with [`gemm_rates`].
    pub fn pass_rate(&self, threads: usize) -> f64 {
        self.flops / (self.pass_seconds / threads as f64) / 1e9
    }

    /// Share of the wall time spent in products (per thread).
    pub fn product_share(&self, threads: usize) -> f64 {
        self.product_seconds / threads as f64 / self.seconds
    }

    /// Share of the wall time spent drawing weights (per thread).
    pub fn draw_share(&self, threads: usize) -> f64 {
        self.draw_seconds / threads as f64 / self.seconds
    }
}

/// The memory bound per network, `b (d^2 r + L d n)` bytes with `b` bytes per value:
/// one weight matrix plus every layer's stream.
pub fn memory_formula_bytes(d: usize, n: usize, depth: usize, r: usize, b: usize) -> f64 {
    b as f64 * ((d * d * r) as f64 + (depth * d * n) as f64)
}

/// The memory probe's network: preset post, the workload's branch, width and tokens, depth
/// `depth`, in `precision`, streamed (`--memory streamed`: the bounded mode the target is
/// about; `--memory auto` holds networks that fit in memory, for speed).
fn probe_config(w: Workload, depth: usize, precision: Precision) -> Result<(McConfig, StackSpec)> {
    let cfg = workload_config(w, depth, 2, precision, monte_carlo::Memory::Streamed)?;
    let spec = cfg
        .model
        .stack(normscope::model::parse_presets("post")?[0])?;
    Ok((cfg, spec))
}

/// Estimated peak bytes of the probe's streamed network
/// ([`normscope::monte_carlo::size::mc_network_floats`]), used to refuse a probe that would not fit.
pub fn engine_bytes_estimate(w: Workload, depth: usize, precision: Precision) -> Result<f64> {
    let (cfg, spec) = probe_config(w, depth, precision)?;
    let metrics = Metric::parse_list(METRICS)?;
    let floats = normscope::monte_carlo::size::mc_network_floats(&cfg, spec.depth, &metrics, false);
    Ok(floats as f64 * precision.bytes() as f64)
}

/// Refuses a `--memory-probe` depth whose network cannot fit or would take more than
/// [`normscope::budget::MAX_WORK`], before anything is allocated: the same estimates as `mc`
/// for one streamed network writing every layer, plus the probe's layer flags.
fn check_probe(cfg: &McConfig, depth: usize) -> Result<()> {
    use normscope::budget;
    let metrics = Metric::parse_list(METRICS)?;
    let all = monte_carlo::size::Selected::all(depth);
    let floats = monte_carlo::size::mc_network_floats(cfg, depth, &metrics, false);
    let bytes = floats
        .saturating_mul(cfg.precision.bytes() as u128)
        .saturating_add(monte_carlo::size::mc_network_extra_bytes(
            cfg, depth, &metrics, &all,
        ))
        .saturating_add(depth as u128 + 1);
    let what = format!("--memory-probe {depth} (one streamed network of depth {depth})");
    budget::check(bytes, &what, "--memory-probe")?;
    budget::check_work(
        monte_carlo::size::mc_network_work(cfg, depth, &metrics, &all),
        &what,
        "--memory-probe",
    )
}

/// A `kB` field of `/proc/self/status` (or `/proc/meminfo`) in bytes.
fn proc_kb(file: &str, field: &str) -> Result<f64> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::Io {
        path: file.to_string(),
        source: e,
    })?;
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(field)?.strip_prefix(':')?;
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map(|kb| kb * 1024.0)
        .ok_or_else(|| Error::Unsupported(format!("no {field} in {file}")))
}

/// The hidden `bench --memory-probe L`: samples and measures ONE streamed network
/// ([`probe_config`]) with the workload's metrics, with
/// [`monte_carlo::measure_network`] and prints, as one JSON line, the resident set before
/// sampling (`baseline`, the binary itself), the high-water mark after (`hwm`), and their
/// difference (`peak`), in bytes. The parent runs it with `RAYON_NUM_THREADS=1`.
pub fn memory_probe(w: Workload, depth: usize, precision: Precision) -> Result<()> {
    let baseline = proc_kb("/proc/self/status", "VmRSS")?;
    let (cfg, spec) = probe_config(w, depth, precision)?;
    check_probe(&cfg, depth)?;
    let plan = monte_carlo::measure::NetworkPlan {
        metrics: Metric::parse_list(METRICS)?,
        selected: vec![true; depth + 1],
        path_max: cfg.path_max,
    };
    let values = monte_carlo::measure_network(&spec, &cfg, &plan, 0);
    std::hint::black_box(values);
    let hwm = proc_kb("/proc/self/status", "VmHWM")?;
    outln!(
        "{}",
        serde_json::json!({
            "depth": depth,
            "precision": precision.name(),
            "baseline": baseline,
            "hwm": hwm,
            "peak": hwm - baseline,
        })
    )?;
    Ok(())
}

/// The result of one memory measurement in the parent.
#[derive(Clone, Debug)]
pub enum Memory {
    /// Peak bytes of the network (high-water mark minus the binary's own resident size).
    Measured(f64),
    /// Why it was not run.
    Skipped(String),
    /// The probe ran and failed: its exit status and the last line it wrote.
    Failed(String),
}

/// Runs the memory probe for `depth` in a child process (Linux only), unless the current
/// engine's estimate exceeds the available memory.
pub fn memory_peak(w: Workload, quick: bool, depth: usize, precision: Precision) -> Result<Memory> {
    if !cfg!(target_os = "linux") {
        return Ok(Memory::Skipped("not measured on this OS".into()));
    }
    let estimate = engine_bytes_estimate(w, depth, precision)?;
    let available = proc_kb("/proc/meminfo", "MemAvailable")?;
    if estimate > available {
        return Ok(Memory::Skipped(format!(
            "skipped: estimated {} > available {}",
            size(estimate),
            size(available)
        )));
    }
    let exe = std::env::current_exe().map_err(|e| Error::Io {
        path: "current executable".into(),
        source: e,
    })?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--memory-probe", &depth.to_string()])
        .args(["--precision", precision.name()])
        .env("RAYON_NUM_THREADS", "1");
    if quick {
        cmd.arg("--quick");
    }
    let out = cmd.output().map_err(|e| Error::Io {
        path: exe.display().to_string(),
        source: e,
    })?;
    if !out.status.success() {
        return Ok(Memory::Failed(format!(
            "probe failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no output")
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Unsupported(format!("unreadable output of the memory probe: {e}")))?;
    v["peak"]
        .as_f64()
        .map(Memory::Measured)
        .ok_or_else(|| Error::Unsupported("no peak in the memory probe's output".into()))
}

/// Runs `benches/torch_reference.py` with `python` in `precision`'s dtype; returns seconds and
/// the torch version.
pub fn torch_seconds(
    python: &str,
    script: &std::path::Path,
    w: Workload,
    threads: usize,
    precision: Precision,
) -> Result<(f64, String)> {
    let dtype = precision.torch_dtype();
    let mut args = vec!["--threads".to_string(), threads.to_string()];
    args.extend(["--dtype".to_string(), dtype.to_string()]);
    for (flag, v) in [
        ("--width", w.width),
        ("--tokens", w.tokens),
        ("--depth", w.depth),
        ("--samples", w.samples),
    ] {
        args.extend([flag.to_string(), v.to_string()]);
    }
    let v = python_json(python, script, &args, "the PyTorch reference")?;
    let secs = v["seconds"]
        .as_f64()
        .ok_or_else(|| Error::Unsupported("no seconds in reference output".into()))?;
    Ok((secs, v["torch"].as_str().unwrap_or("?").to_string()))
}

/// One round of the Monte Carlo bench in precision `p`: the GEMM rates ([`gemm_rates`]),
/// then normscope's run ([`normscope_seconds`]), each printed after `label`; returns the run
/// and its passes' share of the better GEMM rate.
fn round(
    w: Workload,
    threads: usize,
    p: Precision,
    gemm_seconds: f64,
    label: &str,
) -> Result<(EngineRun, f64)> {
    let name = p.name();
    let g = gemm_rates(w, threads, p, gemm_seconds);
    let (best_name, best) = g.best();
    outln!(
        "{label}gemm rate ({name}, {threads} threads, one product stream per thread): matrixmultiply {:.1} GFLOP/s, faer {:.1} GFLOP/s{}, better: {best_name} {best:.1} GFLOP/s (normscope's {name} products use {})",
        g.matrixmultiply,
        g.faer,
        g.own_text(),
        engine_kernel(p)
    )?;
    let run = normscope_seconds(w, p)?;
    let gf = w.flops() / 1e9;
    outln!(
        "{label}normscope ({name}, --memory auto: {}): {:.2} s, {:.1} nominal GFLOP/s; its products ran {:.1} GFLOP of {:.1} nominal, {:.0}% of the wall time, at {:.1} GFLOP/s",
        run.memory,
        run.seconds,
        gf / run.seconds,
        run.flops / 1e9,
        gf,
        100.0 * run.product_share(threads),
        run.product_rate(threads)
    )?;
    let (products, draws) = (run.product_share(threads), run.draw_share(threads));
    outln!(
        "{label}normscope's wall time ({name}): products {:.1}%, weight drawing {:.1}%, the rest (norms, activations, statistics, memory, waiting) {:.1}%",
        100.0 * products,
        100.0 * draws,
        100.0 * (1.0 - products - draws)
    )?;
    let rate = run.pass_rate(threads);
    let share = rate / best;
    outln!(
        "{label}normscope's forward and backward passes ({name}, the GEMM-dominated phases, weight drawing excluded): {rate:.1} GFLOP/s, {:.1}% of the better GEMM rate",
        100.0 * share
    )?;
    Ok((run, share))
}

/// Runs `normscope-bench` on the Monte Carlo workload: per precision `--repeats` rounds of
/// the GEMM rates and normscope's run ([`round`]; the share's verdict on the
/// [`VERDICT_STATISTIC`] of the rounds' shares, because the machine's better GEMM rate moved
/// by up to 20% between single 2-second measurements: 197-239 GFLOP/s in f64 on the README's
/// machine), PyTorch's run once (unless `--no-torch`; against the [`VERDICT_STATISTIC`] of
/// normscope's times) and the peak memory of one streamed network, each line printed as it is
/// measured; returns one [`Outcome`] per target (the PyTorch ratio, the GEMM share, the memory
/// bound at each depth) for `bench --all`'s summary.
pub fn monte_carlo(a: &crate::args::BenchArgs) -> Result<Vec<Outcome>> {
    crate::train::check(a)?;
    let repeats = a.repeats;
    let w = Workload::of(a.quick);
    let precisions = precisions(a.precision);
    let mut outcomes = Vec::new();
    let depths = if a.memory_depths.is_empty() {
        Workload::memory_depths(a.quick)
    } else {
        a.memory_depths.clone()
    };
    let threads = rayon::current_num_threads();
    errln!(
        "workload: pre, post, deepnorm x {} networks; relu-mlp (ratio {}), d = {}, n = {}, L = {}; {}; {threads} threads",
        w.samples,
        RATIO,
        w.width,
        w.tokens,
        w.depth,
        names(&precisions)
    );
    let gf = w.flops() / 1e9;
    let gemm_seconds = if a.quick { 0.2 } else { 2.0 };
    for &p in &precisions {
        let name = p.name();
        let target = match p {
            Precision::F64 => TARGET_F64_VS_TORCH,
            Precision::F32 => TARGET_F32_VS_TORCH,
        };
        outln!("== {name} ==")?;
        outln!(
            "{repeats} rounds, each the GEMM rates then normscope's run; the GEMM share's verdict is the {VERDICT_STATISTIC} of the rounds' shares, the PyTorch ratio's uses the {VERDICT_STATISTIC} of normscope's times"
        )?;
        let mut shares = Vec::with_capacity(repeats);
        let mut seconds = Vec::with_capacity(repeats);
        for r in 1..=repeats {
            let (run, share) = round(w, threads, p, gemm_seconds, &format!("[{r}/{repeats}] "))?;
            shares.push(share);
            seconds.push(run.seconds);
        }
        let share = statistic(&shares);
        outln!(
            "normscope's passes / better GEMM rate ({name}): {VERDICT_STATISTIC} of {repeats} rounds {:.1}% (rounds {}) (target >= {:.0}%: {})",
            100.0 * share,
            shares
                .iter()
                .map(|s| format!("{:.1}%", 100.0 * s))
                .collect::<Vec<_>>()
                .join(", "),
            100.0 * TARGET_GEMM_SHARE,
            verdict(share >= TARGET_GEMM_SHARE)
        )?;
        outcomes.push(Outcome::measured(
            format!("Monte Carlo passes / better GEMM rate ({name}, {VERDICT_STATISTIC} of {repeats} rounds)"),
            format!(">= {:.0}%", 100.0 * TARGET_GEMM_SHARE),
            format!("{:.1}%", 100.0 * share),
            share >= TARGET_GEMM_SHARE,
        ));
        let ours = statistic(&seconds);
        let torch_what = format!("Monte Carlo pytorch / normscope ({name})");
        let torch_target = format!(">= {target:.1}x");
        if a.no_torch {
            outln!(
                "ratio pytorch / normscope ({name}): not measured (--no-torch) (target >= {target:.1}x)"
            )?;
            outcomes.push(Outcome::not_measured(
                torch_what,
                torch_target,
                "--no-torch",
            ));
        } else {
            let (theirs, version) = torch_seconds(&a.python, &a.script, w, threads, p)?;
            outln!(
                "pytorch {version} ({name}, eager, autograd): {theirs:.2} s, {:.1} GFLOP/s",
                gf / theirs
            )?;
            let ratio = theirs / ours;
            outln!(
                "ratio pytorch / normscope ({name}): {ratio:.2}x (target >= {target:.1}x: {})",
                verdict(ratio >= target)
            )?;
            outcomes.push(Outcome::measured(
                torch_what,
                torch_target,
                format!("{ratio:.2}x"),
                ratio >= target,
            ));
        }
        outln!(
            "peak memory of one streamed network (--memory streamed; {name}; post, relu-mlp r = {}, d = {}, n = {}; 1 thread) against {} (d^2 r + L d n) bytes:",
            RATIO,
            w.width,
            w.tokens,
            TARGET_MEMORY_BYTES
        )?;
        for &depth in &depths {
            let formula = |b| memory_formula_bytes(w.width, w.tokens, depth, RATIO, b);
            let bound = formula(TARGET_MEMORY_BYTES);
            let what = format!("peak memory / 8 (d^2 r + L d n), L = {depth} ({name})");
            let memory_target = format!("<= {TARGET_MEMORY_FACTOR:.1}x");
            match memory_peak(w, a.quick, depth, p)? {
                Memory::Measured(peak) => {
                    let ratio = peak / bound;
                    let own = if p.bytes() == TARGET_MEMORY_BYTES {
                        String::new()
                    } else {
                        let b = p.bytes();
                        format!(
                            "; against {b} (d^2 r + L d n) = {}, {:.2}x",
                            size(formula(b)),
                            peak / formula(b)
                        )
                    };
                    outln!(
                        "  memory L = {depth} ({name}): peak {}, formula {}, ratio {ratio:.2}x (target <= {:.1}x: {}){own}",
                        size(peak),
                        size(bound),
                        TARGET_MEMORY_FACTOR,
                        verdict(ratio <= TARGET_MEMORY_FACTOR)
                    )?;
                    outcomes.push(Outcome::measured(
                        what,
                        memory_target,
                        format!("{ratio:.2}x"),
                        ratio <= TARGET_MEMORY_FACTOR,
                    ));
                }
                Memory::Skipped(why) => {
                    outln!(
                        "  memory L = {depth} ({name}): {why}; formula {} (target <= {:.1}x)",
                        size(bound),
                        TARGET_MEMORY_FACTOR
                    )?;
                    outcomes.push(Outcome::not_measured(what, memory_target, &why));
                }
                Memory::Failed(why) => {
                    outln!(
                        "  memory L = {depth} ({name}): {why}; formula {} (target <= {:.1}x: not met)",
                        size(bound),
                        TARGET_MEMORY_FACTOR
                    )?;
                    outcomes.push(Outcome::measured(what, memory_target, why, false));
                }
            }
        }
    }
    Ok(outcomes)
}
