//! `normscope-bench --train`: training throughput against plain PyTorch eager on the same
//! machine, dtype and thread count, in both precisions:
//! normscope f64 against PyTorch float64 and normscope f32 (`--precision f32`) against
//! PyTorch float32, or only the one `--precision` names.
//!
//! Workload: decoder-only Transformers (`--branch transformer`: attention and ReLU-MLP blocks
//! alternating), Pre-LN and Post-LN, d = 64, 4 heads, L = 12 blocks, 32 tokens per sequence,
//! 16 sequences per batch, next-token prediction on the teacher-lm task (vocabulary 16),
//! Adam at 1e-3 for 200 updates, learnable LayerNorm affine maps, seed 0.
//!
//! - normscope: both runs through [`normscope::train::run::run`], in parallel on rayon (one run
//!   per thread), timed whole: the teacher's context-free estimate (once, on both threads,
//!   before the runs), initial weights, the task's batches, the training loop, and the
//!   evaluation and logging at step 0 and at the end only (`eval_every = log_every = steps`,
//!   one evaluation batch).
//! - PyTorch: `benches/torch_train_reference.py --bench` trains each run from normscope's
//!   `--dump-init` of it (same weights, same batches), one run after the other, with
//!   `torch.set_num_threads(threads)` and `--dtype float64` or `float32` (the f64 dump rounded
//!   as it loads: the f32 run's weights); it times its training loops alone (building the
//!   model and loading the JSON excluded).
//!
//! Steps/s counts the updates of both runs over the wall time. Each side is timed
//! `--repeats` times (default [`crate::common::DEFAULT_REPEATS`]), normscope and PyTorch alternating, and the
//! verdict compares the two medians ([`VERDICT_STATISTIC`]); the ratios of the paired runs are
//! printed beside it as their range.

use crate::common::{VERDICT_STATISTIC, statistic};
use crate::summary::Outcome;
use normscope::model::RawModel;
use normscope::monte_carlo::{Precision, RawMc};
use normscope::spec::NormKind;
use normscope::stats::bootstrap::median;
use normscope::train::config::{RawTrain, TrainConfig};
use normscope::train::task::{TaskConfig, TaskKind};
use normscope::{Error, Result};
use std::path::Path;
use std::time::Instant;

/// The presets both sides train.
pub const PRESETS: [&str; 2] = ["pre", "post"];

/// Training workload size.
#[derive(Clone, Copy, Debug)]
pub struct TrainWorkload {
    /// Width d.
    pub width: usize,
    /// Attention heads.
    pub heads: usize,
    /// Blocks L (a Transformer layer is two blocks).
    pub depth: usize,
    /// Tokens per sequence.
    pub seq: usize,
    /// Sequences per batch.
    pub batch: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// Adam updates per run.
    pub steps: u64,
}

impl TrainWorkload {
    /// The reference size.
    pub const REFERENCE: TrainWorkload = TrainWorkload {
        width: 64,
        heads: 4,
        depth: 12,
        seq: 32,
        batch: 16,
        vocab: 16,
        steps: 200,
    };

    /// A small size for smoke tests.
    pub const QUICK: TrainWorkload = TrainWorkload {
        width: 32,
        heads: 4,
        depth: 4,
        seq: 16,
        batch: 8,
        vocab: 16,
        steps: 20,
    };

    /// The checked training request of both presets, computed in `precision`.
    pub fn config(&self, precision: Precision) -> Result<TrainConfig> {
        RawTrain {
            presets: PRESETS.join(","),
            model: RawModel {
                depth: self.depth,
                branch: "transformer".into(),
                init: "xavier".into(),
                hidden_ratio: 4.0,
                width: self.width,
                norm: NormKind::Layer,
                ..RawModel::default()
            },
            mc: RawMc {
                eps: 1e-5,
                heads: self.heads,
                precision,
                ..RawMc::default()
            },
            affine: true,
            task: TaskConfig {
                kind: TaskKind::TeacherLm,
                vocab: self.vocab,
                seq: self.seq,
                ..TaskConfig::default()
            },
            optimizer: "adam".into(),
            lr: 1e-3,
            schedule: "constant".into(),
            warmup: 0,
            steps: self.steps,
            batch: self.batch,
            seeds: "0".into(),
            eval_every: self.steps,
            eval_batches: 1,
            log_every: self.steps,
            ..RawTrain::default()
        }
        .check()
    }

    /// Updates of both runs together.
    pub fn updates(&self) -> u64 {
        self.steps * PRESETS.len() as u64
    }
}

/// Trains both presets with normscope (in `cfg.mc.precision`); returns the wall time in
/// seconds.
pub fn normscope_seconds(cfg: &TrainConfig) -> Result<f64> {
    let start = Instant::now();
    let records = normscope::train::run::run(cfg, &())?;
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(records);
    Ok(secs)
}

/// PyTorch's side: what the reference script reports.
#[derive(Clone, Debug)]
pub struct TorchTiming {
    /// Seconds in the training loops.
    pub seconds: f64,
    /// Updates made.
    pub steps: u64,
    /// `torch.__version__`.
    pub version: String,
}

/// Each preset's `--dump-init` (the f64 weights and batches; the dump does not depend on the
/// precision), written once to a temporary folder for every PyTorch repetition.
pub struct TorchDumps {
    /// Keeps the folder until the dumps are no longer needed.
    _dir: tempfile::TempDir,
    /// One file per preset.
    paths: Vec<std::path::PathBuf>,
}

impl TorchDumps {
    /// Writes the dumps of `cfg`'s presets (its first seed).
    pub fn write(cfg: &TrainConfig) -> Result<TorchDumps> {
        let dir = tempfile::tempdir().map_err(|e| Error::Io {
            path: std::env::temp_dir().display().to_string(),
            source: e,
        })?;
        let task = normscope::train::task::build(&cfg.task)?;
        // The dump is made in f64 (`dump` refuses another precision); the script rounds it.
        let mut f64_cfg = cfg.clone();
        f64_cfg.mc.precision = Precision::F64;
        let mut paths = Vec::new();
        for &preset in &cfg.presets {
            let path = dir.path().join(format!("{preset}.json"));
            let text = normscope::train::dump::dump(&f64_cfg, task.as_ref(), preset, cfg.seeds[0])?;
            normscope::output::atomic::write_bytes(&path, text.as_bytes())?;
            paths.push(path);
        }
        Ok(TorchDumps { _dir: dir, paths })
    }
}

/// Trains from `dumps` with the reference script `script` run by `python` on `threads`
/// threads, in the dtype of `precision`.
pub fn torch_seconds(
    dumps: &TorchDumps,
    precision: Precision,
    python: &str,
    script: &Path,
    threads: usize,
) -> Result<TorchTiming> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--bench".into(),
        "--threads".into(),
        threads.to_string().into(),
        "--dtype".into(),
        precision.torch_dtype().into(),
    ];
    args.extend(dumps.paths.iter().map(|p| p.as_os_str().to_owned()));
    let v = crate::common::python_json(python, script, &args, "the PyTorch training reference")?;
    let field = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| Error::Unsupported(format!("no {k} in the reference output")))
    };
    Ok(TorchTiming {
        seconds: field("seconds")?,
        steps: field("steps")? as u64,
        version: v["torch"].as_str().unwrap_or("?").to_string(),
    })
}

/// The ratio the target is judged on: normscope's median steps/s over PyTorch's, each over
/// its repetitions ([`VERDICT_STATISTIC`]). PyTorch's time moved by up to 1.4x between single
/// runs on this machine, so one pair of runs could meet or miss the target by that noise
/// alone.
pub fn verdict_ratio(ours: &[f64], theirs: &[f64]) -> f64 {
    statistic(ours) / statistic(theirs)
}

/// `min-max` of `xs` with `decimals` decimals, followed by `unit`.
fn range(xs: &[f64], decimals: usize, unit: &str) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.decimals$}-{hi:.decimals$}{unit}")
}

/// The target: normscope's training steps per second at least this multiple of
/// PyTorch eager's, in each precision (f64 against float64, f32 against float32).
pub const TARGET_TRAIN_VS_TORCH: f64 = 2.0;

/// The summary's name of the training target in `p`, and its threshold as printed.
pub fn target(p: Precision) -> (String, String) {
    (
        format!(
            "training normscope {} / pytorch {} ({VERDICT_STATISTIC}s)",
            p.name(),
            p.torch_dtype()
        ),
        format!(">= {TARGET_TRAIN_VS_TORCH:.1}x"),
    )
}

/// The most repetitions a bench takes (each repeats whole workloads of seconds to minutes).
pub const MAX_REPEATS: usize = 1000;

/// Refuses a bad `--repeats` (0) before anything is timed: the training bench calls it first,
/// and so does the Monte Carlo bench ([`crate::mc::monte_carlo`], plain `bench` and the
/// start of `bench --all`).
pub fn check(a: &crate::args::BenchArgs) -> Result<()> {
    if !(1..=MAX_REPEATS).contains(&a.repeats) {
        return Err(Error::invalid(
            "--repeats",
            a.repeats,
            format!("at least 1 and at most {MAX_REPEATS}"),
        ));
    }
    Ok(())
}

/// Runs `normscope-bench --train`: refuses bad input first, then sets glibc's `malloc` as
/// `normscope train` has it (`normscope::numeric::sys::keep_freed_memory`) and says so, then times; pushes the
/// target's [`Outcome`] to `outcomes` as each precision finishes (for `bench --all`'s summary),
/// so a failure in f32 leaves f64's result there.
pub fn bench(a: &crate::args::BenchArgs, outcomes: &mut Vec<Outcome>) -> Result<()> {
    check(a)?;
    let kept = normscope::numeric::sys::keep_freed_memory();
    errln!(
        "malloc: {}",
        if kept {
            format!(
                "glibc keeps freed memory (mmap threshold {} MiB, trim threshold {} MiB)",
                normscope::numeric::sys::MMAP_THRESHOLD_BYTES >> 20,
                normscope::numeric::sys::TRIM_THRESHOLD_BYTES >> 20
            )
        } else {
            "the system allocator's defaults (not glibc, or glibc refused mallopt)".into()
        }
    );
    let repeats = a.repeats;
    let w = if a.quick {
        TrainWorkload::QUICK
    } else {
        TrainWorkload::REFERENCE
    };
    let threads = rayon::current_num_threads();
    let precisions = crate::common::precisions(a.precision);
    errln!(
        "workload: {} x seed 0; transformer (attention + ReLU MLP, ratio 4), d = {}, {} heads, L = {}, seq {}, batch {}, teacher-lm (vocab {}); Adam, {} steps each; {}, {threads} threads",
        PRESETS.join(", "),
        w.width,
        w.heads,
        w.depth,
        w.seq,
        w.batch,
        w.vocab,
        w.steps,
        crate::common::names(&precisions)
    );
    if a.no_torch {
        errln!(
            "{repeats} repetitions of normscope's runs (--no-torch: no PyTorch run, no verdict)"
        );
    } else {
        errln!(
            "{repeats} repetitions, normscope and PyTorch alternating; the verdict compares the {VERDICT_STATISTIC} steps/s of each side (target >= {TARGET_TRAIN_VS_TORCH:.1}x)"
        );
    }
    // The dumps are f64 whatever the precision (the script rounds them as it loads).
    let dumps = if a.no_torch {
        None
    } else {
        Some(TorchDumps::write(&w.config(Precision::F64)?)?)
    };
    for p in precisions {
        let (what, target) = target(p);
        let cfg = w.config(p)?;
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut version = String::new();
        for r in 1..=repeats {
            let secs = normscope_seconds(&cfg)?;
            let ours_rate = w.updates() as f64 / secs;
            outln!(
                "[{r}/{repeats}] normscope {}: {} steps in {secs:.2} s: {ours_rate:.1} steps/s",
                p.name(),
                w.updates()
            )?;
            ours.push(ours_rate);
            let Some(dumps) = &dumps else { continue };
            let t = torch_seconds(dumps, p, &a.python, &a.train_script, threads)?;
            let theirs_rate = t.steps as f64 / t.seconds;
            outln!(
                "[{r}/{repeats}] pytorch {} eager {}: {} steps in {:.2} s: {theirs_rate:.1} steps/s",
                t.version,
                p.torch_dtype(),
                t.steps,
                t.seconds
            )?;
            theirs.push(theirs_rate);
            ratios.push(ours_rate / theirs_rate);
            version = t.version;
        }
        outln!(
            "normscope {}: median {:.1} steps/s (range {})",
            p.name(),
            median(&ours),
            range(&ours, 1, "")
        )?;
        if theirs.is_empty() {
            outcomes.push(Outcome::not_measured(what, target, "--no-torch"));
            continue;
        }
        outln!(
            "pytorch {version} eager {}: median {:.1} steps/s (range {})",
            p.torch_dtype(),
            median(&theirs),
            range(&theirs, 1, "")
        )?;
        let ratio = verdict_ratio(&ours, &theirs);
        outln!(
            "ratio normscope {} / pytorch {}: {ratio:.2}x of the medians (paired runs {}; target >= {TARGET_TRAIN_VS_TORCH:.1}x: {})",
            p.name(),
            p.torch_dtype(),
            range(&ratios, 2, "x"),
            crate::common::verdict(ratio >= TARGET_TRAIN_VS_TORCH)
        )?;
        outcomes.push(Outcome::measured(
            what,
            target,
            format!("{ratio:.2}x"),
            ratio >= TARGET_TRAIN_VS_TORCH,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_compares_medians_not_means_or_the_last_pair() {
        // Means would give 40 / 3.67 = 10.9x and the last pair 100x.
        let (ours, theirs) = ([10.0, 10.0, 100.0], [5.0, 5.0, 1.0]);
        assert_eq!(verdict_ratio(&ours, &theirs).to_bits(), 2.0f64.to_bits());
    }

    #[test]
    fn range_prints_the_extremes() {
        assert_eq!(range(&[1.66, 1.71, 1.64], 2, "x"), "1.64-1.71x");
        assert_eq!(range(&[50.04, 51.6], 1, ""), "50.0-51.6");
    }
}
