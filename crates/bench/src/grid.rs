//! `normscope-bench --train-grid`: one cell of the training analyses' Transformer tier (ten
//! paired seeds of one preset, depth and learning rate) against the PyTorch a competent user
//! would write for it, looping over the seeds in eager mode or training them all at once as a
//! `torch.vmap` ensemble (`benches/torch_ensemble.py`, `torch.func.stack_module_state`); the
//! ratio is taken to the better of the two.
//!
//! Workload ([`GridWorkload::REFERENCE`]): the LM tier's cell (`analyses::tier::Tier::lm`):
//! Post-LN decoder-only Transformer, 12 blocks (6 layers), d = 32, 4 heads, 16 tokens, batch
//! 16, teacher-lm (vocabulary 16), Adam (0.9, 0.98) at lr 1e-3, 300 updates, seeds 0..10.
//!
//! - normscope: the ten runs as [`normscope::train::sweep::run_jobs`] trains them (what the
//!   training analyses run: the runs of a cell in parallel on rayon, one single-threaded run
//!   per thread), timed as the PyTorch script times its own: the training alone (the initial
//!   weights, the training loops, and an evaluation at step 0 and at the end, one batch,
//!   `eval_every = steps`), with the teacher's context-free estimate, the evaluation set and
//!   every batch but each seed's first (drawn with its initial weights) drawn before the clock
//!   starts.
//! - PyTorch: `benches/torch_ensemble.py --mode both` on each seed's `--dump-init` (same
//!   weights, same batches, the f64 dumps rounded to float32 as they load), with
//!   `torch.set_num_threads(threads)`; it times its training loops alone.
//!
//! Each side is timed `--repeats` times, alternating, and the verdict compares normscope's
//! median time with the median time of PyTorch's faster mode (target
//! [`TARGET_GRID_VS_TORCH`] in f32; f64 is printed without one).

use crate::common::{VERDICT_STATISTIC, statistic};
use crate::summary::Outcome;
use normscope::monte_carlo::Precision;
use normscope::train::config::RawTrain;
use normscope::train::sweep::{self, Cell};
use normscope::{Error, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The target: normscope's cell at least this many times faster than PyTorch's better way.
pub const TARGET_GRID_VS_TORCH: f64 = 3.0;

/// The summary's name of the training-grid cell's line in `p`, and its threshold as printed
/// (f32 only; f64's ratio is printed without one).
pub fn target(p: Precision) -> (String, String) {
    let what = format!(
        "train-grid cell normscope {} / pytorch {} better of loop and vmap ({VERDICT_STATISTIC}s)",
        p.name(),
        p.torch_dtype()
    );
    let target = match p {
        Precision::F32 => format!(">= {TARGET_GRID_VS_TORCH:.1}x"),
        Precision::F64 => crate::summary::NO_TARGET.to_string(),
    };
    (what, target)
}

/// One cell of the grid.
#[derive(Clone, Copy, Debug)]
pub struct GridWorkload {
    /// Blocks L.
    pub depth: usize,
    /// Updates per run.
    pub steps: u64,
    /// Paired seeds `0..seeds`.
    pub seeds: u64,
}

impl GridWorkload {
    /// The LM tier's cell (module docs).
    pub const REFERENCE: GridWorkload = GridWorkload {
        depth: 12,
        steps: 300,
        seeds: 10,
    };

    /// A smoke-test size.
    pub const QUICK: GridWorkload = GridWorkload {
        depth: 4,
        steps: 20,
        seeds: 3,
    };

    /// The base request (the LM tier's, evaluating at the start and end only) in `precision`.
    pub fn base(&self, precision: Precision) -> Result<RawTrain> {
        let mut b = normscope::analyses::tier::Tier::lm().base()?;
        b.steps = self.steps;
        b.eval_every = self.steps;
        b.eval_batches = 1;
        b.log_every = self.steps;
        b.mc.precision = precision;
        Ok(b)
    }

    /// The cell.
    pub fn cell(&self) -> Cell {
        Cell {
            preset: normscope::placement::POST,
            depth: self.depth,
            optimizer: "adam".into(),
            lr: 1e-3,
            warmup: 0,
        }
    }
}

/// Trains the cell's seeds with normscope; returns the wall time in seconds of the training
/// alone, as the PyTorch script times its loops alone: the teacher's context-free estimate,
/// the evaluation set and every seed's batches but its first are drawn before the clock
/// starts ([`sweep::Prepared::predraw`]); the initial weights with the first batch, the
/// training loops and the evaluations at step 0 and at the end are timed (work the PyTorch
/// script does not time: under 1% of the cell). The runs are [`sweep::run_jobs`]'s (what
/// the training analyses run: in parallel on rayon, one single-threaded run per thread), with
/// the same options, and give the same bits.
fn normscope_seconds(w: &GridWorkload, precision: Precision) -> Result<f64> {
    let base = w.base(precision)?;
    let cell = w.cell();
    let seeds: Vec<u64> = (0..w.seeds).collect();
    let prepared = sweep::Prepared::new(&base, seeds.len())?;
    prepared.predraw(&seeds, w.steps)?;
    let options = normscope::train::run::Options::default();
    let start = Instant::now();
    let out: Result<Vec<_>> = seeds
        .par_iter()
        .map(|s| prepared.outcome_with(&cell, *s, &options))
        .collect();
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(out?);
    Ok(secs)
}

/// The seeds' `--dump-init` files (f64), in a temporary folder kept while they are used.
struct Dumps {
    _dir: tempfile::TempDir,
    paths: Vec<PathBuf>,
}

fn dumps(w: &GridWorkload) -> Result<Dumps> {
    let dir = tempfile::tempdir().map_err(|e| Error::Io {
        path: std::env::temp_dir().display().to_string(),
        source: e,
    })?;
    let base = w.base(Precision::F64)?;
    let task = normscope::train::task::build(&base.check()?.task)?;
    let mut paths = Vec::new();
    for s in 0..w.seeds {
        let cfg = w.cell().config(&base, s)?;
        let path = dir.path().join(format!("dump_{s}.json"));
        let text = normscope::train::dump::dump(&cfg, task.as_ref(), cfg.presets[0], s)?;
        normscope::output::atomic::write_bytes(&path, text.as_bytes())?;
        paths.push(path);
    }
    Ok(Dumps { _dir: dir, paths })
}

/// PyTorch's two timings of one repetition: `(loop seconds, vmap seconds, torch version)`.
fn torch_seconds(
    d: &Dumps,
    precision: Precision,
    python: &str,
    script: &Path,
    threads: usize,
) -> Result<(f64, f64, String)> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--json".into(),
        "--mode".into(),
        "both".into(),
        "--repeats".into(),
        "1".into(),
        "--threads".into(),
        threads.to_string().into(),
        "--dtype".into(),
        precision.torch_dtype().into(),
    ];
    args.extend(d.paths.iter().map(|p| p.as_os_str().to_owned()));
    let v = crate::common::python_json(python, script, &args, "the PyTorch ensemble script")?;
    let first = |k: &str| {
        v[k].as_array()
            .and_then(|a| a.first())
            .and_then(|x| x.as_f64())
            .ok_or_else(|| Error::Unsupported(format!("no {k} in the ensemble script's output")))
    };
    Ok((
        first("loop_seconds")?,
        first("vmap_seconds")?,
        v["torch"].as_str().unwrap_or("?").to_string(),
    ))
}

/// Runs `normscope-bench --train-grid`; pushes the target's [`Outcome`] to `outcomes` as each
/// precision finishes, so a failure in f32 leaves f64's result there.
pub fn bench(a: &crate::args::BenchArgs, outcomes: &mut Vec<Outcome>) -> Result<()> {
    crate::train::check(a)?;
    normscope::numeric::sys::keep_freed_memory();
    let w = if a.quick {
        GridWorkload::QUICK
    } else {
        GridWorkload::REFERENCE
    };
    let threads = rayon::current_num_threads();
    let precisions = crate::common::precisions(a.precision);
    errln!(
        "workload: one LM-tier cell, {} seeds of Post-LN; transformer d = 32, 4 heads, L = {} blocks, seq 16, batch 16, teacher-lm (vocab 16); Adam (0.9, 0.98) at 1e-3, {} steps each; {}, {threads} threads",
        w.seeds,
        w.depth,
        w.steps,
        crate::common::names(&precisions)
    );
    let d = if a.no_torch { None } else { Some(dumps(&w)?) };
    for p in precisions {
        let (mut ours, mut looped, mut vmapped) = (Vec::new(), Vec::new(), Vec::new());
        let mut version = String::new();
        for r in 1..=a.repeats {
            let s = normscope_seconds(&w, p)?;
            outln!(
                "[{r}/{}] normscope {}: {} runs in {s:.2} s",
                a.repeats,
                p.name(),
                w.seeds
            )?;
            ours.push(s);
            let Some(d) = &d else { continue };
            let (l, v, ver) = torch_seconds(d, p, &a.python, &a.ensemble_script, threads)?;
            outln!(
                "[{r}/{}] pytorch {ver} {}: eager loop {l:.2} s, vmap ensemble {v:.2} s",
                a.repeats,
                p.torch_dtype()
            )?;
            looped.push(l);
            vmapped.push(v);
            version = ver;
        }
        let (what, target) = target(p);
        outln!(
            "normscope {}: {VERDICT_STATISTIC} {:.2} s",
            p.name(),
            statistic(&ours)
        )?;
        if looped.is_empty() {
            outcomes.push(Outcome::not_measured(what, target, "--no-torch"));
            continue;
        }
        let (l, v) = (statistic(&looped), statistic(&vmapped));
        let better = l.min(v);
        let ratio = better / statistic(&ours);
        let met = ratio >= TARGET_GRID_VS_TORCH;
        outln!(
            "pytorch {version} {}: {VERDICT_STATISTIC} eager loop {l:.2} s, vmap ensemble {v:.2} s; ratio to the better ({}): {ratio:.2}x{}",
            p.torch_dtype(),
            if v < l { "vmap" } else { "loop" },
            match p {
                Precision::F32 => format!(
                    " (target >= {TARGET_GRID_VS_TORCH:.1}x: {})",
                    crate::common::verdict(met)
                ),
                Precision::F64 => String::new(),
            }
        )?;
        outcomes.push(match p {
            Precision::F32 => Outcome::measured(what, target, format!("{ratio:.2}x"), met),
            Precision::F64 => Outcome::printed(what, format!("{ratio:.2}x")),
        });
    }
    Ok(())
}
