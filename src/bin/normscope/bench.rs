//! `normscope bench`: the reference workload against plain PyTorch, in one run on the same
//! machine, dtype (f64) and thread count, next to the machine's GEMM rate measured in the same
//! run.
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
use normscope::monte_carlo::{self, McConfig, RawMc};
use normscope::{Error, Result};
use rayon::prelude::*;
use std::time::Instant;

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

    /// Nominal GEMM FLOPs of the whole workload (three presets).
    pub fn flops(&self) -> f64 {
        let (d, n) = (self.width as f64, self.tokens as f64);
        3.0 * self.samples as f64 * self.depth as f64 * 12.0 * 4.0 * d * d * n
    }
}

/// GFLOP/s of f64 GEMMs of the workload's shape `(4d x d)(d x n)`, one product stream per
/// thread on `threads` threads at once (how the engine uses the cores).
pub fn gemm_rate(w: Workload, threads: usize) -> f64 {
    let (d, n) = (w.width, w.tokens);
    let a = DMatrix::from_fn(4 * d, d, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let b = DMatrix::from_fn(d, n, |i, j| ((i + j * 5) % 13) as f64 - 6.0);
    let reps = (2e10 / (8.0 * (d * d * n) as f64)).ceil().max(3.0) as usize;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let start = Instant::now();
    let sink: f64 = pool.install(|| {
        (0..threads)
            .into_par_iter()
            .map(|_| (0..reps).map(|_| (&a * &b)[(0, 0)]).sum::<f64>())
            .sum()
    });
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    (threads * reps) as f64 * 2.0 * (4 * d * d * n) as f64 / secs / 1e9
}

/// Runs the workload with normscope's Monte Carlo engine; returns seconds.
pub fn normscope_seconds(w: Workload) -> Result<f64> {
    let raw = RawModel {
        depth: w.depth,
        branch: "relu-mlp".into(),
        width: w.width,
        tokens: w.tokens,
        ..RawModel::default()
    };
    let cfg = McConfig::new(
        &raw,
        &RawMc {
            samples: w.samples,
            ..RawMc::default()
        },
    )?;
    let metrics = Metric::parse_list("stream_sq,corr,coef,branch_weight,grad_sq,weight_grad_sq")?;
    let presets: Vec<String> = ["pre", "post", "deepnorm"].map(String::from).to_vec();
    let start = Instant::now();
    let engine = monte_carlo::MonteCarlo {
        cfg: &cfg,
        progress: &(),
    };
    let plan = Plan::new(&metrics, LayerSpec::All);
    let rows = normscope::tables::rows(&engine, &cfg.model, &presets, &plan, &mut Vec::new())?;
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(rows);
    Ok(secs)
}

/// Runs `python script args...` and parses its standard output as one JSON value; `what`
/// names the script in errors (a failed run reports its last line of standard error).
pub fn python_json(
    python: &str,
    script: &std::path::Path,
    args: &[impl AsRef<std::ffi::OsStr>],
    what: &str,
) -> Result<serde_json::Value> {
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| Error::Io {
            path: python.to_string(),
            source: e,
        })?;
    if !out.status.success() {
        return Err(Error::Unsupported(format!(
            "{what} did not run ({}); install it with `pip install torch` or pass --python",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no output")
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Unsupported(format!("unreadable output of {what}: {e}")))
}

/// Runs `benches/torch_reference.py` with `python`; returns seconds and the torch version.
pub fn torch_seconds(
    python: &str,
    script: &std::path::Path,
    w: Workload,
    threads: usize,
) -> Result<(f64, String)> {
    let mut args = vec!["--threads".to_string(), threads.to_string()];
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
