//! `training-demo`: a real `normscope train` run (docs/training.md: Pre-LN, Post-LN and
//! DeepNorm decoder-only Transformers trained with Adam and no warmup on next-token prediction
//! from a random teacher Transformer, paired seeds. Figures: the evaluation loss against the
//! update (median over seeds, shaded from the lowest seed to the highest, with the task's
//! floor and its context-free loss), and the
//! per-block gradient norm at the first update (geometric mean over seeds; Xiong et al. 2020,
//! Fig. 3 plots the same at init). The full log is `data/training-demo/log.csv`.

use super::{Analysis, Out, common};
use normscope_core::Result;
use normscope_core::model::RawModel;
use normscope_core::monte_carlo::RawMc;
use normscope_core::placement::Preset;
use normscope_core::spec::NormKind;
use normscope_core::train::config::{RawTrain, TrainConfig};
use normscope_core::train::run::Record;
use normscope_core::train::task::{TaskConfig, TaskKind};
use normscope_figure::{LinePlot, Series};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "training-demo",
    about: "Pre-LN, Post-LN and DeepNorm trained without warmup: loss curves and per-block gradient norms",
    claims: &[],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: None,
};

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::training_demo::Config;
/// let c = Config::full();
/// assert_eq!(c.presets, ["pre", "post", "deepnorm"]);
/// assert_eq!((c.branch.as_str(), c.task.as_str()), ("transformer", "teacher-lm"));
/// assert_eq!((c.depth, c.width, c.heads, c.steps, c.seeds), (12, 32, 4, 400, 4));
/// assert_eq!(c.lr, 1e-2);
/// assert_eq!((Config::quick().steps, Config::quick().seeds), (100, 2));
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Branch.
    pub branch: String,
    /// Blocks L.
    pub depth: usize,
    /// Width d.
    pub width: usize,
    /// Heads.
    pub heads: usize,
    /// Task name.
    pub task: String,
    /// Optimizer name.
    pub optimizer: String,
    /// Peak learning rate.
    pub lr: f64,
    /// Warmup updates.
    pub warmup: u64,
    /// Updates.
    pub steps: u64,
    /// Sequences per batch.
    pub batch: usize,
    /// Seeds `0..seeds`.
    pub seeds: u64,
    /// Evaluation interval.
    pub eval_every: u64,
    /// Logging interval.
    pub log_every: u64,
    /// The seed of the teacher and the evaluation set.
    #[serde(with = "crate::seed")]
    pub seed: u64,
}

impl Config {
    fn raw(&self) -> Result<RawTrain> {
        let d = RawTrain::default();
        Ok(RawTrain {
            presets: common::names(&self.presets),
            model: RawModel {
                depth: self.depth,
                branch: self.branch.clone(),
                width: self.width,
                norm: NormKind::Layer,
                ..d.model
            },
            mc: RawMc {
                heads: self.heads,
                ..d.mc
            },
            task: TaskConfig {
                kind: TaskKind::parse(&self.task)?,
                teacher_seed: self.seed,
                ..d.task
            },
            optimizer: self.optimizer.clone(),
            lr: self.lr,
            warmup: self.warmup,
            steps: self.steps,
            batch: self.batch,
            seeds: format!("0..{}", self.seeds),
            eval_every: self.eval_every,
            eval_batches: 4,
            log_every: self.log_every,
            ..RawTrain::default()
        })
    }

    fn checked(&self) -> Result<TrainConfig> {
        self.raw()?.check_with(self.presets.clone())
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm"]),
            branch: "transformer".into(),
            depth: 12,
            width: 32,
            heads: 4,
            task: "teacher-lm".into(),
            optimizer: "adam".into(),
            lr: 1e-2,
            warmup: 0,
            steps: 400,
            batch: 16,
            seeds: 4,
            eval_every: 20,
            log_every: 10,
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            steps: 100,
            seeds: 2,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        self.checked().map(|_| ())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn values<'a>(
    recs: &'a [Record],
    preset: &'a str,
    metric: &'a str,
) -> impl Iterator<Item = &'a Record> + 'a {
    recs.iter()
        .filter(move |r| r.preset == preset && r.metric == metric)
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let cfg = c.checked()?;
    let recs = normscope_core::train::run::run(&cfg, &())?;
    out.frame(
        "log.csv",
        &mut normscope_core::train::log::frame(&cfg, &recs)?,
    )?;
    let setting = format!(
        "L = {}, d = {}, Adam, lr = {}, no warmup, {} seeds",
        c.depth, c.width, c.lr, c.seeds
    );
    let mut loss = LinePlot::new(
        &format!("Evaluation loss, teacher-LM task ({setting}; median, band: range)"),
        "update t",
        "eval loss (nats)",
    );
    loss.x_log = false;
    let steps: Vec<u64> = {
        let mut s: Vec<u64> = recs
            .iter()
            .filter(|r| r.metric == "eval_loss")
            .map(|r| r.step)
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    // Per preset and update: (update, median, lowest, highest) over the seeds, where every
    // seed has a finite loss there.
    let curves: Vec<Vec<(f64, f64, f64, f64)>> = c
        .presets
        .iter()
        .map(|p| {
            steps
                .iter()
                .filter_map(|&s| {
                    let v: Vec<f64> = values(&recs, p.name, "eval_loss")
                        .filter(|r| r.step == s)
                        .map(|r| r.value)
                        .collect();
                    let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, x| {
                        (a.0.min(*x), a.1.max(*x))
                    });
                    (v.len() == c.seeds as usize && lo.is_finite() && hi.is_finite())
                        .then(|| (s as f64, median(v), lo, hi))
                })
                .collect()
        })
        .collect();
    // The range over seeds as a band under the median lines.
    for (i, pts) in curves.iter().enumerate() {
        let band: Vec<(f64, f64, f64)> = pts.iter().map(|p| (p.0, p.2, p.3)).collect();
        loss.series.push(Series::band(i, &band));
    }
    for (i, (p, pts)) in c.presets.iter().zip(&curves).enumerate() {
        let line = pts.iter().map(|q| (q.0, q.1)).collect();
        loss.series.push(Series::line(p.label, i, line));
    }
    let first = |m: &str| {
        values(&recs, c.presets[0].name, m)
            .find(|r| r.step == 0)
            .map(|r| r.value)
    };
    let (x0, x1) = (0.0, c.steps as f64);
    for (name, m, color) in [
        ("floor (teacher entropy)", "eval_floor", c.presets.len()),
        (
            "context-free loss",
            "context_free_loss",
            c.presets.len() + 1,
        ),
    ] {
        if let Some(v) = first(m) {
            loss.series
                .push(Series::line(name, color, vec![(x0, v), (x1, v)]));
        }
    }
    out.figure("eval_loss", &loss)?;
    let mut grads = LinePlot::new(
        &format!("Per-block gradient norm at the first update ({setting})"),
        "block l",
        "||∂L/∂θ_l||",
    );
    grads.x_log = false;
    grads.y_log = true;
    for (i, p) in c.presets.iter().enumerate() {
        let pts: Vec<(f64, f64)> = (1..=c.depth)
            .map(|l| {
                let v: Vec<f64> = values(&recs, p.name, "grad_norm")
                    .filter(|r| {
                        r.step == 1 && r.layer == Some(l) && r.param.as_deref() == Some("all")
                    })
                    .map(|r| r.value.ln())
                    .collect();
                (l as f64, (v.iter().sum::<f64>() / v.len() as f64).exp())
            })
            .collect();
        grads.series.push(Series::line(p.label, i, pts));
    }
    out.figure("grad_norm_per_block", &grads)
}
