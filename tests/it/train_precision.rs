//! `normscope train --precision f32` against f64: the same
//! seed in both precisions starts from the same draws (f32: rounded) and sees the same batches,
//! so the two loss curves are paired step by step and may differ only by f32 rounding carried
//! through the updates. That the f32 run is f32 arithmetic, not f64 arithmetic on rounded
//! values, is checked against a reference that trains the f32 run's own starting weights (and
//! rounded batches), widened exactly, in f64. Also: byte-identical f32 logs for any thread
//! count, the log says how it was made, a bad `--precision` is refused with exit 2 and no
//! output file, and the f64-only library paths (sweeps, dumps, `run::start`) refuse f32
//! instead of computing it in f64. With a Python
//! with PyTorch (`NORMSCOPE_TORCH_PYTHON`, else `python3`; skipped with a printed reason
//! without one), the f32 run is also compared with PyTorch float32 from the same dump.

use crate::common;

use normscope::model::RawModel;
use normscope::monte_carlo::{Precision, RawMc};
use normscope::numeric::rng::Rng;
use normscope::spec::NormKind;
use normscope::train::config::RawTrain;
use normscope::train::task::{self, Batch, Io, Task, TaskConfig, TaskKind};
use std::path::Path;
use std::process::{Command, Output};

/// f32's unit roundoff `2^-24`.
const F32_UNIT_ROUNDOFF: f64 = 5.960_464_477_539_063e-8;

/// Allowed error of a logit (an entry of the initial model's output on the first batch), in
/// units of `u` times the largest logit `max |f|`, between the f32 model and the same f32
/// weights evaluated in f64. A priori: a product of length n (here d = 32, 4d = 128, or the
/// sequence, 16) rounded in f32 is within about `sqrt(n) u <= 12 u` of its exact value
/// relative to its size at random signs, its activation, norm output and residual addition
/// add a rounding each, so a block's branch output is within about 16 u of its size; the
/// stream sums the 6 blocks' outputs, whose errors add at random signs (`sqrt(6) x 16 u`, about
/// 40 u of the stream), the output norm keeps errors relative, and the head's product
/// (length d) adds `sqrt(32) u`, about 6 u: about 46 u of the logit scale. The allowance is
/// 64 u. Measured: 4.9 u (teacher-lm, `max |f|` 3.4) and 2.9 u (regression, 3.6).
const LOGIT_ROUNDOFFS: f64 = 64.0;

/// The same for the f32 model against the f64 model from the unrounded draws (weight and
/// input rounding, one `u` per entry, adds about `sqrt(n) u` per product on top of the
/// arithmetic's): twice [`LOGIT_ROUNDOFFS`].
const LOGIT_ROUNDOFFS_WITH_WEIGHTS: f64 = 2.0 * LOGIT_ROUNDOFFS;

/// The first update's loss (the initial model's loss on the first batch) follows from the
/// logits: with `δf` the logits' error, cross-entropy moves by `|(p_t - e_y) . δf_t| <=
/// ||p_t - e_y||_1 max|δf| <= 2 max|δf|` per token, so `|δL| <= 2 max|δf|`; the mean squared
/// error moves by `mean(2 r δf + δf^2)` (r the residual), so `|δL| <= 2 sqrt(L) max|δf| +
/// max|δf|^2`. With `max|δf| <= K u max|f|` (K = [`LOGIT_ROUNDOFFS`] or
/// [`LOGIT_ROUNDOFFS_WITH_WEIGHTS`]) this is the allowed first-loss difference, computed from
/// the run's own `max|f|` and `L`: 135 u (teacher-lm) and 245 u (regression) against the
/// arithmetic alone, twice that with the weights' rounding. A worst case: the per-token
/// errors mostly cancel, measured 0.17 u and 0.6 u (0.14 u and 0.8 u against the unrounded
/// f64 run); the logits' check above is the tight one.
fn first_loss_allowance(task: TaskKind, k: f64, max_logit: f64, loss: f64) -> f64 {
    let df = k * F32_UNIT_ROUNDOFF * max_logit;
    let abs = match task {
        TaskKind::Regression => 2.0 * loss.sqrt() * df + df * df,
        _ => 2.0 * df,
    };
    abs / loss / F32_UNIT_ROUNDOFF
}

/// Allowed relative difference of any loss over the 50 updates between the f32 run and the f64
/// run from the unrounded draws, in units of `u`. The rounding differences feed every update
/// (Adam divides each gradient entry by its own `sqrt(v)`, so a small entry's rounding moves
/// its coordinate by up to `lr` and the runs drift apart as training goes on: 112 u at update
/// 70 of the default Post-LN run, 1.5e-3 at update 100). Measured over these 50 updates: 0.4 u
/// (teacher-lm) and 1.6 u (regression). The allowance, 64 u = 3.8e-6, keeps a margin of 40
/// over the measurement and is 260 times below a 1e-3 error.
const CURVE_ROUNDOFFS: f64 = 64.0;

/// The smallest largest-difference over the 50 updates, in units of `u`, between the f32 run
/// and the f64-arithmetic reference (the f32 run's own starting weights and batches, widened
/// exactly, trained in f64): what f32 arithmetic must show for the run not to be f64 arithmetic
/// on f32 values. Measured: 0.35 u (teacher-lm) and 1.6 u (regression); f64 arithmetic on the
/// f32 values would give 0 exactly (the reference). The floor, 0.1 u, is 3.5 times below the
/// smaller measurement.
const ARITHMETIC_FLOOR: f64 = 0.1;

/// A small Pre-LN Transformer on the teacher-LM task or a ReLU-MLP regression, 50 Adam
/// updates, the training loss logged at every update.
fn request(task: TaskKind, precision: Precision) -> RawTrain {
    let d = RawTrain::default();
    let (branch, depth, width) = match task {
        TaskKind::Regression => ("relu-mlp", 6, 16),
        _ => ("transformer", 6, 32),
    };
    RawTrain {
        presets: "pre".into(),
        model: RawModel {
            depth,
            branch: branch.into(),
            width,
            norm: NormKind::Layer,
            ..d.model
        },
        mc: RawMc {
            heads: 4,
            precision,
            ..RawMc::default()
        },
        task: TaskConfig {
            kind: task,
            ..TaskConfig::default()
        },
        optimizer: "adam".into(),
        lr: 1e-3,
        steps: 50,
        batch: 8,
        eval_every: 25,
        eval_batches: 1,
        log_every: 1,
        ..d
    }
}

/// `(step, training loss)` of a log.
fn train_losses(records: &[normscope::train::run::Record]) -> Vec<(u64, f64)> {
    records
        .iter()
        .filter(|r| r.metric == "train_loss")
        .map(|r| (r.step, r.value))
        .collect()
}

/// `(step, training loss)` of a request's single run.
fn losses(raw: RawTrain) -> Vec<(u64, f64)> {
    let cfg = raw.check().expect("a valid request");
    train_losses(&normscope::train::run::run(&cfg, &()).expect("the run"))
}

/// A task whose vector batches are rounded to f32 and kept in f64 (token batches unchanged):
/// the batches an f32 run sees, for an f64 model.
struct RoundedToF32(Box<dyn Task>);

fn round_to_f32(b: Batch) -> Batch {
    match b {
        Batch::Vectors(mut v) => {
            v.x = v.x.map(|a| a as f32 as f64);
            v.y = v.y.map(|a| a as f32 as f64);
            Batch::Vectors(v)
        }
        t => t,
    }
}

impl Task for RoundedToF32 {
    fn kind(&self) -> TaskKind {
        self.0.kind()
    }
    fn io(&self) -> Io {
        self.0.io()
    }
    fn batch(&self, rng: &mut Rng, size: usize) -> Batch {
        round_to_f32(self.0.batch(rng, size))
    }
    fn floor(&self, batch: &Batch) -> f64 {
        self.0.floor(batch)
    }
    fn context_free_loss(&self) -> f64 {
        self.0.context_free_loss()
    }
}

/// What the f64-arithmetic reference of a request's single run gives.
struct Reference {
    /// `(step, training loss)` of the reference: the f32 run's starting weights (and rounded
    /// batches) widened exactly to f64 and trained in f64 arithmetic.
    losses: Vec<(u64, f64)>,
    /// The initial f32 model's largest logit on the first batch.
    max_logit: f64,
    /// Largest logit difference, f32 model against the same weights in f64 arithmetic.
    logit_arith: f64,
    /// Largest logit difference, f32 model against the f64 model from the unrounded draws.
    logit_all: f64,
}

/// The f64-arithmetic reference of `raw`'s single run: f64 arithmetic on f32-representable
/// starting values, so it differs from the f32 run by the arithmetic's rounding alone.
fn reference(raw: RawTrain) -> Reference {
    use normscope::train::pass::Typed;
    use normscope::train::run::{self, Options};
    let cfg = raw.check().expect("a valid request");
    let (preset, seed) = (cfg.presets[0], cfg.seeds[0]);
    let plain = task::build(&cfg.task).expect("the task");
    let rounded = RoundedToF32(task::build(&cfg.task).expect("the task"));
    let (m32, _, _) = run::start_as::<f32>(&cfg, plain.as_ref(), preset, seed).unwrap();
    let (m64, _, _) = run::start_as::<f64>(&cfg, plain.as_ref(), preset, seed).unwrap();
    let (mut wide, data, first) = run::start_as::<f64>(&cfg, &rounded, preset, seed).unwrap();
    {
        let mut n = 0;
        for (w, (_, v)) in wide.params_mut().into_iter().zip(m32.params()) {
            assert_eq!(w.shape(), v.shape());
            *w = v.map(f64::from);
            n += 1;
        }
        assert_eq!(n, m32.params().len(), "every parameter widened");
    }
    let f32_out = m32.forward(Typed::<f32>::new(&first).views().0).output;
    let out = |m: &normscope::train::model::TrainModel| {
        m.forward(Typed::<f64>::new(&first).views().0).output
    };
    let (wide_out, f64_out) = (out(&wide), out(&m64));
    let diff = |o: &nalgebra::DMatrix<f64>| {
        f32_out
            .iter()
            .zip(o.iter())
            .map(|(a, b)| (f64::from(*a) - b).abs())
            .fold(0.0, f64::max)
    };
    let max_logit = f32_out
        .iter()
        .map(|a| f64::from(*a).abs())
        .fold(0.0, f64::max);
    let (logit_arith, logit_all) = (diff(&wide_out), diff(&f64_out));
    let mut er = run::eval_rng(cfg.task.teacher_seed);
    let eval_set: Vec<Batch> = (0..cfg.eval_batches)
        .map(|_| rounded.batch(&mut er, cfg.batch))
        .collect();
    let t = run::train(
        &cfg,
        &rounded,
        preset,
        seed,
        (wide, data, first),
        &eval_set,
        &Options::default(),
        &(),
    );
    Reference {
        losses: train_losses(&t.records),
        max_logit,
        logit_arith,
        logit_all,
    }
}

/// Largest relative difference of two loss curves, in units of `u`, and the first update's.
fn gaps(a: &[(u64, f64)], b: &[(u64, f64)]) -> (f64, f64) {
    assert_eq!(
        a.iter().map(|p| p.0).collect::<Vec<_>>(),
        b.iter().map(|p| p.0).collect::<Vec<_>>()
    );
    let rel: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x.1 - y.1).abs() / y.1.abs() / F32_UNIT_ROUNDOFF)
        .collect();
    (rel[0], rel.iter().copied().fold(0.0, f64::max))
}

fn compare(task: TaskKind) {
    let double = losses(request(task, Precision::F64));
    let single = losses(request(task, Precision::F32));
    let r = reference(request(task, Precision::F32));
    assert_eq!(double.len(), 50, "{task:?}: a loss per update");
    let (first, worst) = gaps(&single, &double);
    let (first_arith, worst_arith) = gaps(&single, &r.losses);
    let (_, weights_only) = gaps(&r.losses, &double);
    let u_logit = |d: f64| d / r.max_logit / F32_UNIT_ROUNDOFF;
    let loss0 = r.losses[0].1;
    let allow_arith = first_loss_allowance(task, LOGIT_ROUNDOFFS, r.max_logit, loss0);
    let allow_all = first_loss_allowance(task, LOGIT_ROUNDOFFS_WITH_WEIGHTS, r.max_logit, loss0);
    println!(
        "{task:?} (loss {:.6} -> {:.6}, max|f| {:.3}), relative differences in units of 2^-24:\n  \
         f32 vs f64 arithmetic on the f32 weights: logits {:.1} u of max|f|, first loss {first_arith:.2} (allowed {allow_arith:.1}), largest over 50 updates {worst_arith:.2} (floor {ARITHMETIC_FLOOR})\n  \
         f32 vs f64 from the unrounded draws:      logits {:.1} u of max|f|, first loss {first:.2} (allowed {allow_all:.1}), largest over 50 updates {worst:.2} (allowed {CURVE_ROUNDOFFS})\n  \
         f64 arithmetic, f32 weights vs f64 weights: largest over 50 updates {weights_only:.2}",
        double[0].1,
        double[49].1,
        r.max_logit,
        u_logit(r.logit_arith),
        u_logit(r.logit_all),
    );
    // Not f64 arithmetic on f32 values: the f32 curve differs from the f64-arithmetic reference
    // from the same starting values, at the first update and beyond a floor over the curve.
    assert!(
        single
            .iter()
            .zip(&r.losses)
            .any(|(a, b)| a.1.to_bits() != b.1.to_bits()),
        "{task:?}: f32 losses are bit-identical to f64 arithmetic on the f32 weights"
    );
    assert!(
        first_arith > 0.0 && r.logit_arith > 0.0,
        "{task:?}: the first f32 loss equals the f64-arithmetic one"
    );
    assert!(
        worst_arith > ARITHMETIC_FLOOR,
        "{task:?}: f32 differs from f64 arithmetic on the same values by only {worst_arith:.3} u <= {ARITHMETIC_FLOOR} u"
    );
    // The reference is not the f64 run either (the starting weights were rounded).
    assert!(weights_only > 0.0, "{task:?}: the weights were not rounded");
    // The forward error is within the a priori bound, and so is the first loss.
    assert!(
        u_logit(r.logit_arith) <= LOGIT_ROUNDOFFS,
        "{task:?}: logits differ from f64 arithmetic by {:.1} u > {LOGIT_ROUNDOFFS} u",
        u_logit(r.logit_arith)
    );
    assert!(
        u_logit(r.logit_all) <= LOGIT_ROUNDOFFS_WITH_WEIGHTS,
        "{task:?}: logits differ from f64 by {:.1} u > {LOGIT_ROUNDOFFS_WITH_WEIGHTS} u",
        u_logit(r.logit_all)
    );
    assert!(
        first_arith <= allow_arith,
        "{task:?}: first loss differs from f64 arithmetic by {first_arith:.1} u > {allow_arith:.1} u"
    );
    assert!(
        first <= allow_all,
        "{task:?}: first loss differs from f64 by {first:.1} u > {allow_all:.1} u"
    );
    assert!(
        worst <= CURVE_ROUNDOFFS,
        "{task:?}: losses differ by up to {worst:.1} u > {CURVE_ROUNDOFFS} u"
    );
    // Both curves learn: the f32 run is not stuck (its loss falls as the f64 one does).
    assert!(single[49].1 < single[0].1 && double[49].1 < double[0].1);
}

#[test]
fn f32_loss_curve_follows_f64_on_teacher_lm() {
    compare(TaskKind::TeacherLm);
}

#[test]
fn f32_loss_curve_follows_f64_on_regression() {
    compare(TaskKind::Regression);
}

// The curve's allowance is far below a loss wrong by 1e-3 (checked at compile time).
const _: () = assert!(CURVE_ROUNDOFFS * F32_UNIT_ROUNDOFF < 1e-3 / 100.0);

fn normscope(args: &[&str], dir: &Path, threads: Option<usize>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_normscope"));
    c.args(args).current_dir(dir);
    if let Some(t) = threads {
        c.env("RAYON_NUM_THREADS", t.to_string());
    }
    c.output().expect("binary runs")
}

/// Three presets x two seeds (six runs in parallel), 20 Adam updates, in f32.
const SMALL_F32: [&str; 22] = [
    "train",
    "--precision",
    "f32",
    "--preset",
    "pre,post,deepnorm",
    "--depth",
    "4",
    "--width",
    "16",
    "--heads",
    "2",
    "--batch",
    "4",
    "--steps",
    "20",
    "--eval-every",
    "10",
    "--seeds",
    "0..2",
    "--log-every",
    "5",
    "--lr=3e-3",
];

#[test]
fn f32_log_is_byte_identical_for_1_2_and_3_threads_and_says_f32() {
    let dir = tempfile::tempdir().unwrap();
    let mut logs = Vec::new();
    for t in [1, 2, 3] {
        let name = format!("t{t}.csv");
        let mut a: Vec<&str> = SMALL_F32.to_vec();
        a.extend(["--out", &name]);
        let o = normscope(&a, dir.path(), Some(t));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        logs.push(std::fs::read(dir.path().join(&name)).unwrap());
    }
    assert!(logs[0] == logs[1], "1 and 2 threads differ");
    assert!(logs[0] == logs[2], "1 and 3 threads differ");
    let text = String::from_utf8(logs.swap_remove(0)).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let expected: Vec<&str> = normscope::train::log::COLUMNS.to_vec();
    let at = expected.iter().position(|c| *c == "precision").unwrap();
    assert_eq!(header, expected);
    assert!(
        text.lines()
            .skip(1)
            .all(|l| l.split(',').nth(at) == Some("f32"))
    );
    assert!(text.contains("train_loss") && text.contains("eval_loss"));
}

#[test]
fn bad_precision_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "train",
            "--precision",
            "f16",
            "--steps",
            "2",
            "--out",
            "log.csv",
        ],
        dir.path(),
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--precision") && err.contains("f64 or f32"),
        "{err}"
    );
    assert!(!dir.path().join("log.csv").exists());
    // --dump-init holds the f64 weights: refused in f32, nothing written.
    let o = normscope(
        &["train", "--precision", "f32", "--dump-init", "d.json"],
        dir.path(),
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--precision") && err.contains("--dump-init"),
        "{err}"
    );
    assert!(!dir.path().join("d.json").exists());
}

/// Allowed relative difference between normscope f32 and PyTorch float32 losses over 60
/// updates, in units of `u`: both round every operation to f32, in different orders (blocked
/// f32 products against oneDNN/MKL, f64 statistics against float32 ones), and PyTorch's logged
/// loss is itself a float32 cross-entropy (a rounding or more of the loss at every step,
/// against normscope's loss computed in f64 from f32 logits). Measured (PyTorch 2.15.0, one thread,
/// largest over the 60 updates): normscope f32 2.2 u from PyTorch float32; the f64-arithmetic
/// reference (the same f32 starting weights trained in f64, [`reference`]) 2.4 u from it; the
/// f64 run from the unrounded draws 25 u (all of it in the last 5 updates, 11-25 u, an Adam
/// coordinate with a small `v` moved by the rounded start; at most 2.6 u before). So this
/// comparison does NOT tell f32 arithmetic from f64 arithmetic on f32 values (they are 1.3 u
/// apart, under PyTorch's own loss rounding of about 1-2 u per step); that is checked exactly,
/// without PyTorch, by `compare` against the same reference. What the allowance checks is
/// that normscope f32 trains as PyTorch float32 does from the rounded dump: 16 u keeps a
/// margin of 7 over the measurement and is below the 25 u of the unrounded f64 run.
const TORCH_F32_ROUNDOFFS: f64 = 16.0;

/// The request of [`f32_loss_curve_matches_pytorch_float32`]'s CLI run, in f32.
fn reference_request() -> RawTrain {
    let d = RawTrain::default();
    RawTrain {
        presets: "pre".into(),
        model: RawModel {
            depth: 4,
            branch: "transformer".into(),
            width: 32,
            ..d.model
        },
        mc: RawMc {
            heads: 4,
            precision: Precision::F32,
            ..d.mc
        },
        task: TaskConfig {
            kind: TaskKind::TeacherLm,
            seq: 16,
            ..d.task
        },
        batch: 8,
        steps: 60,
        seeds: "0".into(),
        log_every: 1,
        ..d
    }
}

#[test]
fn f32_loss_curve_matches_pytorch_float32() {
    let Some(python) = common::torch_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run: [&str; 21] = [
        "train",
        "--preset",
        "pre",
        "--branch",
        "transformer",
        "--task",
        "teacher-lm",
        "--depth",
        "4",
        "--width",
        "32",
        "--heads",
        "4",
        "--batch",
        "8",
        "--seq",
        "16",
        "--steps",
        "60",
        "--seeds",
        "0",
    ];
    let ok = |o: Output| assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fn with<'a>(run: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [run, extra].concat()
    }
    ok(normscope(
        &with(&run, &["--dump-init", "init.json"]),
        dir.path(),
        None,
    ));
    let mut ours = Vec::new();
    for p in ["f32", "f64"] {
        let out = format!("{p}.csv");
        ok(normscope(
            &with(&run, &["--precision", p, "--log-every", "1", "--out", &out]),
            dir.path(),
            None,
        ));
        let text = std::fs::read_to_string(dir.path().join(&out)).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let (metric, value) = (
            header.iter().position(|c| *c == "metric").unwrap(),
            header.iter().position(|c| *c == "value").unwrap(),
        );
        let losses: Vec<f64> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|r| r[metric] == "train_loss")
            .map(|r| r[value].parse().unwrap())
            .collect();
        assert_eq!(losses.len(), 60);
        ours.push(losses);
    }
    // The library request of the CLI run: the same f32 curve, bit for bit.
    let library: Vec<f64> = losses(reference_request()).iter().map(|p| p.1).collect();
    assert!(
        library
            .iter()
            .zip(&ours[0])
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "the library request is not the CLI run"
    );
    // One thread: PyTorch's OpenMP threads spin when the cores are shared (tests/it/train_torch.rs).
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/torch_train_reference.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(["--threads", "1", "--dtype", "float32", "--json"])
        .arg(dir.path().join("init.json"))
        .output()
        .expect("the reference script runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(v["dtype"], "float32");
    let theirs: Vec<f64> = v["runs"][0]["losses"]
        .as_array()
        .expect("losses")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect();
    assert_eq!(theirs.len(), 60);
    let worst = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs() / y.abs())
            .fold(0.0, f64::max)
            / F32_UNIT_ROUNDOFF
    };
    let reference_losses: Vec<f64> = reference(reference_request())
        .losses
        .iter()
        .map(|p| p.1)
        .collect();
    let (torch, f64_gap, reference_gap) = (
        worst(&ours[0], &theirs),
        worst(&ours[1], &theirs),
        worst(&reference_losses, &theirs),
    );
    println!(
        "vs PyTorch {} float32 over 60 updates, largest relative difference in units of 2^-24: normscope f32 {torch:.2} u (allowed {TORCH_F32_ROUNDOFFS}); f64 arithmetic from the f32 weights {reference_gap:.2} u; normscope f64 from the unrounded draws {f64_gap:.2} u; normscope f32 vs that reference {:.2} u",
        v["torch"].as_str().unwrap_or("?"),
        worst(&ours[0], &reference_losses),
    );
    assert!(
        torch <= TORCH_F32_ROUNDOFFS,
        "f32 losses differ from PyTorch float32 by {torch:.1} u > {TORCH_F32_ROUNDOFFS} u"
    );
    // Not asserted: that normscope f32 is closer to PyTorch float32 than the f64-arithmetic
    // reference is (see TORCH_F32_ROUNDOFFS: 2.2 u against 2.4 u, inside the noise of PyTorch's
    // float32 loss). That f32 is not f64 arithmetic is checked exactly by `compare`.
}

#[test]
fn f64_only_paths_refuse_f32_and_sweeps_train_in_it() {
    use normscope::train::{dump, run, sweep};
    let raw = request(TaskKind::Regression, Precision::F32);
    let cfg = raw.clone().check().expect("a valid request");
    let t = task::build(&cfg.task).unwrap();
    let refused = |e: normscope::Error| {
        let m = e.to_string();
        assert!(m.contains("precision") && m.contains("f64"), "{m}");
    };
    refused(
        run::start(
            &cfg,
            t.as_ref(),
            normscope::placement::find("pre").unwrap(),
            0,
        )
        .unwrap_err(),
    );
    refused(
        dump::dump(
            &cfg,
            t.as_ref(),
            normscope::placement::find("pre").unwrap(),
            0,
        )
        .unwrap_err(),
    );
    let cell = sweep::Cell {
        preset: normscope::placement::PRE,
        depth: 2,
        optimizer: "adam".into(),
        lr: 1e-3,
        warmup: 0,
    };
    // A sweep trains in its base's precision: the f32 run's own final evaluation loss.
    let swept = sweep::run(&raw, std::slice::from_ref(&cell), &[0], &()).unwrap();
    let mut er = run::eval_rng(cfg.task.teacher_seed);
    let eval: Vec<_> = (0..cfg.eval_batches)
        .map(|_| t.batch(&mut er, cfg.batch))
        .collect();
    let cell_cfg = cell.config(&raw, 0).unwrap();
    let log = run::run_one(
        &cell_cfg,
        t.as_ref(),
        (normscope::placement::find("pre").unwrap(), 0),
        &eval,
        None,
        &(),
    )
    .unwrap();
    let last = log.iter().rev().find(|r| r.metric == "eval_loss").unwrap();
    assert_eq!(swept[0].final_loss.to_bits(), last.value.to_bits());
    // The f32 entry point and f64 requests are unaffected.
    assert!(
        run::start_as::<f32>(
            &cfg,
            t.as_ref(),
            normscope::placement::find("pre").unwrap(),
            0
        )
        .is_ok()
    );
    let f64_raw = request(TaskKind::Regression, Precision::F64);
    let f64_cfg = f64_raw.clone().check().unwrap();
    assert!(
        run::start(
            &f64_cfg,
            t.as_ref(),
            normscope::placement::find("pre").unwrap(),
            0
        )
        .is_ok()
    );
    assert!(cell.config(&f64_raw, 0).is_ok());
}
