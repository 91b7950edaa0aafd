//! `convergence` (issue 12 item 3, claim 8): loss curves per preset at several depths, each
//! preset at its own tuned learning rate (regression tier, [`super::regression_tier`]).
//!
//! 1. **Tuning** on held-out seeds (`tune_seeds`, disjoint from the evaluation seeds): every
//!    preset x depth x learning rate of the grid; the tuned learning rate of a (preset, depth)
//!    is the one with the lowest median score ([`super::regression_tier::best_lr`]).
//! 2. **Evaluation** at the tuned learning rates, seeds `0..seeds` (paired across presets).
//!    Per run: the final excess loss (score), the **early excess** (evaluation loss minus the
//!    floor at update `early_step`; a run stopped before it counts as the context-free gap),
//!    and the **steps to floor + delta**: the first evaluated update whose loss is at most
//!    `F + DELTA_FRACTION (C - F)` ([`DELTA_FRACTION`]; F the floor, C the context-free loss);
//!    a run that never gets there counts as `steps + eval_every` (censored: a median at that
//!    value is a lower bound). Medians with bootstrap 95% intervals, failures with Wilson
//!    intervals.
//! 3. **Post-LN against Pre-LN**, paired by seed, per depth and quantity (early excess, final
//!    excess, steps to floor + delta): the median of `post_s - pre_s` with its bootstrap
//!    interval and the sign test, Holm-corrected over every row of `pairs.csv`.
//!
//! Verdict ([`verdict`], rule [`rule`]): [`ALPHA`], [`SHALLOW_MAX`], [`DEEP_MIN`], with the rule printed from
//! them.

use super::regression_tier::{self as tier};
use super::{Analysis, Out};
use crate::output::figure::{LinePlot, Series};
use crate::output::latex::{Cell as Tex, Table, plain};
use crate::output::table::column;
use crate::stats::{bootstrap, holm};
use crate::train::sweep::{self, Cell, Outcome};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "convergence",
    about: "loss curves at each preset's tuned lr across depths: early and final excess, steps to floor + delta, Post-LN vs Pre-LN",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some("one (preset, depth): its lr tuning runs and its evaluation runs at the best lr"),
};

/// Steps to floor + delta use `delta = DELTA_FRACTION (C - F)`: halfway from the context-free
/// loss C to the floor F.
pub const DELTA_FRACTION: f64 = 0.5;
/// Family-wise error rate of the Holm-corrected sign tests.
pub const ALPHA: f64 = 0.05;
/// Depths up to this many blocks are "shallow" for the verdict.
pub const SHALLOW_MAX: u64 = 6;
/// Depths from this many blocks on are "deep" for the verdict.
pub const DEEP_MIN: u64 = 24;

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (must include `pre` and `post`).
    pub presets: Vec<String>,
    /// Residual blocks L.
    pub depths: Vec<usize>,
    /// Width d.
    pub width: usize,
    /// Examples per batch.
    pub batch: usize,
    /// Updates.
    pub steps: u64,
    /// Evaluation interval.
    pub eval_every: u64,
    /// Optimizer.
    pub optimizer: String,
    /// Learning-rate grid of the tuning.
    pub lrs: Vec<f64>,
    /// Held-out tuning seeds.
    pub tune_seeds: Vec<u64>,
    /// Evaluation seeds `0..seeds`.
    pub seeds: u64,
    /// The update of the early excess (a multiple of `eval_every`).
    pub early_step: u64,
    /// The seed of the teacher and the evaluation set (and of the bootstrap).
    pub seed: u64,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm", "admin"]
                .map(String::from)
                .to_vec(),
            depths: vec![4, 12, 48],
            width: 16,
            batch: 16,
            steps: 200,
            eval_every: 10,
            optimizer: "adam".into(),
            lrs: vec![1e-3, 3e-3, 1e-2, 3e-2],
            tune_seeds: (1000..1005).collect(),
            seeds: 20,
            early_step: 20,
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            presets: ["pre", "post"].map(String::from).to_vec(),
            depths: vec![4],
            tune_seeds: vec![1000, 1001],
            seeds: 3,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        tier::check_tier(
            &self.presets,
            &self.depths,
            self.seeds,
            self.steps,
            self.eval_every,
            self.width,
            self.batch,
        )?;
        for need in ["pre", "post"] {
            if !self.presets.iter().any(|p| p == need) {
                return Err(Error::invalid(
                    "presets",
                    format!("{:?}", self.presets),
                    "a list including pre and post (the claim compares them)",
                ));
            }
        }
        tier::check_lrs("lrs", &self.lrs)?;
        if self.tune_seeds.is_empty()
            || tier::distinct(self.tune_seeds.iter().copied()).len() != self.tune_seeds.len()
            || self.tune_seeds.iter().any(|s| *s < self.seeds)
        {
            return Err(Error::invalid(
                "tune_seeds",
                format!("{:?}", self.tune_seeds),
                format!(
                    "a non-empty list of distinct seeds >= seeds = {} (held out from the evaluation seeds 0..{})",
                    self.seeds, self.seeds
                ),
            ));
        }
        if self.early_step == 0
            || self.early_step > self.steps
            || !self.early_step.is_multiple_of(self.eval_every)
        {
            return Err(Error::invalid(
                "early_step",
                self.early_step,
                format!(
                    "a multiple of eval_every = {} in [1, steps = {}]",
                    self.eval_every, self.steps
                ),
            ));
        }
        for p in &self.presets {
            for &d in &self.depths {
                self.cell(p, d, self.lrs[0]).config(&self.base(), 0)?;
            }
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

impl Config {
    fn base(&self) -> crate::train::config::RawTrain {
        tier::base(
            self.width,
            self.batch,
            self.steps,
            self.eval_every,
            self.steps,
            self.seed,
        )
    }

    fn cell(&self, preset: &str, depth: usize, lr: f64) -> Cell {
        Cell {
            preset: preset.into(),
            depth,
            optimizer: self.optimizer.clone(),
            lr,
            warmup: 0,
        }
    }

    fn censored(&self) -> f64 {
        (self.steps + self.eval_every) as f64
    }
}

/// A run's early excess: its evaluation loss at `step` minus the floor, or (stopped before,
/// or diverged) at least the context-free gap.
fn early_excess(o: &Outcome, step: u64) -> f64 {
    let gap = o.context_free - o.floor;
    match o.curve.iter().find(|(s, _)| *s == step) {
        Some((_, e)) if !o.diverged => e - o.floor,
        Some((_, e)) => (e - o.floor).max(gap),
        None => gap,
    }
}

/// Steps to floor + delta, or the censoring value.
fn steps_to(c: &Config, o: &Outcome) -> f64 {
    o.steps_to(DELTA_FRACTION * (o.context_free - o.floor))
        .map_or(c.censored(), |s| s as f64)
}

/// The three per-run quantities compared, with their table names.
const QUANTITIES: [&str; 3] = ["early_excess", "final_excess", "steps_to"];

fn quantity(c: &Config, o: &Outcome, q: &str) -> f64 {
    match q {
        "early_excess" => early_excess(o, c.early_step),
        "final_excess" => tier::score(o),
        _ => steps_to(c, o),
    }
}

/// One work unit (see [`super::shard`]): a (preset, depth) family, tuned over the lr grid on
/// `tune_seeds` and evaluated at its best lr on the evaluation seeds. Its result: the tuning
/// outcomes in (lr, seed) order and the evaluation outcomes in seed order.
type UnitResult = (Vec<Outcome>, Vec<Outcome>);

/// The tuning and evaluation runs of the (preset, depth) `units`, one result per unit. Each
/// family's best lr depends on its own tuning runs alone, so any subset gives the same results.
fn compute(c: &Config, units: &[(String, usize)]) -> Result<Vec<UnitResult>> {
    let base = c.base();
    let grid: Vec<Cell> = units
        .iter()
        .flat_map(|(p, d)| c.lrs.iter().map(move |&lr| c.cell(p, *d, lr)))
        .collect();
    let tuning = sweep::run(&base, &grid, &c.tune_seeds, &())?;
    let per = c.lrs.len() * c.tune_seeds.len();
    let tuned: Vec<Cell> = units
        .iter()
        .zip(tuning.chunks(per))
        .map(|((p, d), family)| {
            let family: Vec<&Outcome> = family.iter().collect();
            c.cell(p, *d, tier::best_lr(&family))
        })
        .collect();
    let seeds: Vec<u64> = (0..c.seeds).collect();
    let eval = sweep::run(&base, &tuned, &seeds, &())?;
    Ok(tuning
        .chunks(per)
        .zip(eval.chunks(seeds.len()))
        .map(|(t, e)| (t.to_vec(), e.to_vec()))
        .collect())
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let units: Vec<(String, usize)> = c
        .presets
        .iter()
        .flat_map(|p| c.depths.iter().map(move |&d| (p.clone(), d)))
        .collect();
    // A unit's cost: its runs, each proportional to the depth.
    let runs = c.lrs.len() * c.tune_seeds.len() + c.seeds as usize;
    let cost = |u: &(String, usize)| (u.1 * runs) as f64;
    let results = out.units("families", &units, cost, |mine| compute(c, mine))?;
    // Units are in (preset, depth) order: their tuning runs concatenate to the grid's (preset,
    // depth, lr, seed) order and their evaluations to the tuned cells' (preset, depth, seed).
    let tuning: Vec<Outcome> = results.iter().flat_map(|r| r.0.clone()).collect();
    let eval: Vec<Outcome> = results.iter().flat_map(|r| r.1.clone()).collect();
    let mut g = tier::GroupTable::default();
    let mut tuned = Vec::new();
    for p in &c.presets {
        for &d in &c.depths {
            let family: Vec<&Outcome> = tuning
                .iter()
                .filter(|o| o.cell.preset == *p && o.cell.depth == d)
                .collect();
            let best = tier::best_lr(&family);
            for &lr in &c.lrs {
                let runs: Vec<&Outcome> = family
                    .iter()
                    .copied()
                    .filter(|o| o.cell.lr.to_bits() == lr.to_bits())
                    .collect();
                let scores: Vec<f64> = runs.iter().map(|o| tier::score(o)).collect();
                let is_best = lr.to_bits() == best.to_bits();
                g.push(
                    &c.cell(p, d, lr),
                    tier::group(&runs, &scores, c.seed),
                    is_best,
                );
            }
            tuned.push(c.cell(p, d, best));
        }
    }
    out.frame("tuning.csv", &mut g.frame("median_score")?)?;
    runs_tables(c, &tuning, &eval, out)?;
    summary(c, &tuned, &eval, out)?;
    pairs(c, &eval, out)?;
    figures(c, &tuned, &eval, out)
}

/// `runs.csv` (both phases) and `curves.csv` (evaluation phase).
fn runs_tables(c: &Config, tuning: &[Outcome], eval: &[Outcome], out: &mut Out) -> Result<()> {
    let all: Vec<(&str, &Outcome)> = tuning
        .iter()
        .map(|o| ("tune", o))
        .chain(eval.iter().map(|o| ("eval", o)))
        .collect();
    let mut df = tier::frame(vec![
        column("phase", all.iter().map(|r| r.0.to_string())),
        column("preset", all.iter().map(|r| r.1.cell.preset.clone())),
        column("depth", all.iter().map(|r| r.1.cell.depth as u64)),
        column("lr", all.iter().map(|r| r.1.cell.lr)),
        column("seed", all.iter().map(|r| r.1.seed)),
        column("final_excess", all.iter().map(|r| r.1.excess())),
        column("score", all.iter().map(|r| tier::score(r.1))),
        column(
            "early_excess",
            all.iter().map(|r| early_excess(r.1, c.early_step)),
        ),
        column("steps_to", all.iter().map(|r| steps_to(c, r.1))),
        column(
            "reached",
            all.iter().map(|r| {
                r.1.steps_to(DELTA_FRACTION * (r.1.context_free - r.1.floor))
                    .is_some()
            }),
        ),
        column("failed", all.iter().map(|r| r.1.failed)),
        column("diverged", all.iter().map(|r| r.1.diverged)),
    ])?;
    out.frame("runs.csv", &mut df)?;
    let pts: Vec<(&Outcome, u64, f64)> = eval
        .iter()
        .flat_map(|o| o.curve.iter().map(move |&(s, e)| (o, s, e)))
        .collect();
    let mut df = tier::frame(vec![
        column("preset", pts.iter().map(|r| r.0.cell.preset.clone())),
        column("depth", pts.iter().map(|r| r.0.cell.depth as u64)),
        column("lr", pts.iter().map(|r| r.0.cell.lr)),
        column("seed", pts.iter().map(|r| r.0.seed)),
        column("step", pts.iter().map(|r| r.1)),
        column("eval_loss", pts.iter().map(|r| r.2)),
        column("excess", pts.iter().map(|r| r.2 - r.0.floor)),
    ])?;
    out.frame("curves.csv", &mut df)
}

fn runs_of<'a>(eval: &'a [Outcome], cell: &Cell) -> Vec<&'a Outcome> {
    eval.iter().filter(|o| o.cell == *cell).collect()
}

/// `summary.csv` and `summary.tex`.
fn summary(c: &Config, tuned: &[Cell], eval: &[Outcome], out: &mut Out) -> Result<()> {
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 3 * QUANTITIES.len()];
    let mut fails = Vec::new();
    let mut reached = Vec::new();
    let mut t = Table::new(
        format!(
            "Convergence at each preset's tuned learning rate ({}, no warmup; tuned on held-out seeds {:?}), regression task, ReLU-MLP blocks, $d = {}$, {} updates, {} paired seeds. Medians with bootstrap 95\\% intervals: final excess loss, excess at update {}, and updates to reach floor $+ {}\\,(C - F)$ (censored at {}).",
            c.optimizer,
            c.tune_seeds,
            c.width,
            c.steps,
            c.seeds,
            c.early_step,
            DELTA_FRACTION,
            c.censored()
        ),
        "tab:convergence",
        &["$L$", "lr", "failed", "final", "lo", "hi"],
    );
    // The early excess and the updates to floor + delta in a second table: one table of twelve
    // columns does not fit a paper's column.
    let mut speed = Table::new(
        format!(
            "Early convergence at the tuned learning rates of Table~\\ref{{tab:convergence}}: median excess loss at update {}, with bootstrap 95\\% intervals.",
            c.early_step
        ),
        "tab:convergence-speed",
        &["$L$", "early", "lo", "hi"],
    );
    let mut reach = Table::new(
        format!(
            "Updates to reach floor $+ {}\\,(C - F)$ at the tuned learning rates of Table~\\ref{{tab:convergence}} (censored at {}), medians with bootstrap 95\\% intervals.",
            DELTA_FRACTION,
            c.censored()
        ),
        "tab:convergence-steps",
        &["$L$", "updates", "lo", "hi"],
    );
    // Rows grouped by preset (tuned is preset-major), one per depth.
    let mut last_preset = None;
    for cl in tuned {
        let runs = runs_of(eval, cl);
        let group = |q: &str| {
            let v: Vec<f64> = runs.iter().map(|o| quantity(c, o, q)).collect();
            tier::group(&runs, &v, c.seed)
        };
        let gs: Vec<tier::Group> = QUANTITIES.iter().map(|q| group(q)).collect();
        for (i, g) in gs.iter().enumerate() {
            cols[3 * i].push(g.median);
            cols[3 * i + 1].push(g.median_ci.0);
            cols[3 * i + 2].push(g.median_ci.1);
        }
        fails.push(gs[0]);
        reached.push(
            runs.iter()
                .filter(|o| steps_to(c, o) < c.censored())
                .count() as u64,
        );
        if last_preset != Some(&cl.preset) {
            let label = super::common::tex_label(&cl.preset);
            t.group(label.clone());
            speed.group(label.clone());
            reach.group(label);
            last_preset = Some(&cl.preset);
        }
        let ci = |i: usize| {
            [
                Tex::Num(gs[i].median),
                Tex::Num(gs[i].median_ci.0),
                Tex::Num(gs[i].median_ci.1),
            ]
        };
        let label = Tex::Int(cl.depth as i64);
        let mut row = vec![
            label.clone(),
            Tex::Text(tier::lr_text(cl.lr)),
            Tex::Text(format!("{}/{}", gs[0].failed, gs[0].n)),
        ];
        row.extend(ci(1));
        t.row(row);
        let mut row = vec![label.clone()];
        row.extend(ci(0));
        speed.row(row);
        let mut row = vec![label];
        row.extend(ci(2));
        reach.row(row);
    }
    let mut columns = vec![
        column("preset", tuned.iter().map(|x| x.preset.clone())),
        column("depth", tuned.iter().map(|x| x.depth as u64)),
        column("lr", tuned.iter().map(|x| x.lr)),
        column("n", fails.iter().map(|g| g.n)),
        column("failed", fails.iter().map(|g| g.failed)),
        column("fail_lo", fails.iter().map(|g| g.fail_ci.0)),
        column("fail_hi", fails.iter().map(|g| g.fail_ci.1)),
    ];
    for (i, q) in QUANTITIES.iter().enumerate() {
        columns.push(column(q, cols[3 * i].clone()));
        columns.push(column(&format!("{q}_lo"), cols[3 * i + 1].clone()));
        columns.push(column(&format!("{q}_hi"), cols[3 * i + 2].clone()));
    }
    columns.push(column("reached", reached));
    out.frame("summary.csv", &mut tier::frame(columns)?)?;
    t.write(out, "summary")?;
    speed.write(out, "speed")?;
    reach.write(out, "steps")
}

/// `pairs.csv`: Post-LN against Pre-LN per depth and quantity.
fn pairs(c: &Config, eval: &[Outcome], out: &mut Out) -> Result<()> {
    let mut rows = Vec::new();
    for &d in &c.depths {
        let get = |p: &str| {
            let mut v: Vec<&Outcome> = eval
                .iter()
                .filter(|o| o.cell.preset == p && o.cell.depth == d)
                .collect();
            v.sort_by_key(|o| o.seed);
            v
        };
        let (post, pre) = (get("post"), get("pre"));
        for q in QUANTITIES {
            let a: Vec<f64> = post.iter().map(|o| quantity(c, o, q)).collect();
            let b: Vec<f64> = pre.iter().map(|o| quantity(c, o, q)).collect();
            rows.push((d as u64, q, tier::paired(&a, &b, c.seed)));
        }
    }
    let q = holm::adjust(&rows.iter().map(|r| r.2.p).collect::<Vec<_>>());
    let mut df = tier::frame(vec![
        column("depth", rows.iter().map(|r| r.0)),
        column("quantity", rows.iter().map(|r| r.1.to_string())),
        column("diff_median", rows.iter().map(|r| r.2.median)),
        column("diff_lo", rows.iter().map(|r| r.2.ci.0)),
        column("diff_hi", rows.iter().map(|r| r.2.ci.1)),
        column("post_higher", rows.iter().map(|r| r.2.positive)),
        column("post_lower", rows.iter().map(|r| r.2.negative)),
        column("p_sign", rows.iter().map(|r| r.2.p)),
        column("q_holm", q),
    ])?;
    out.frame("pairs.csv", &mut df)
}

fn figures(c: &Config, tuned: &[Cell], eval: &[Outcome], out: &mut Out) -> Result<()> {
    let (floor, cf) = eval
        .first()
        .map_or((f64::NAN, f64::NAN), |o| (o.floor, o.context_free));
    for &d in &c.depths {
        let mut f = LinePlot::new(
            &format!(
                "Median eval loss at each preset's tuned lr (regression, L = {d}, d = {}, {} seeds)",
                c.width, c.seeds
            ),
            "update t",
            "eval loss",
        );
        f.x_log = false;
        f.y_log = true;
        for (i, p) in c.presets.iter().enumerate() {
            let Some(cl) = tuned.iter().find(|x| x.preset == *p && x.depth == d) else {
                continue;
            };
            let runs = runs_of(eval, cl);
            let steps = tier::distinct(runs.iter().flat_map(|o| o.curve.iter().map(|x| x.0)));
            let pts: Vec<(f64, f64)> = steps
                .iter()
                .filter_map(|&s| {
                    let v: Vec<f64> = runs
                        .iter()
                        .filter_map(|o| o.curve.iter().find(|x| x.0 == s).map(|x| x.1))
                        .collect();
                    // Only while every seed is still running.
                    (v.len() == runs.len()).then(|| (s as f64, bootstrap::median(&v)))
                })
                .collect();
            f.series.push(Series::line(
                format!("{} (lr {})", super::common::label(p), plain(cl.lr)),
                i,
                pts,
            ));
        }
        let n = c.presets.len();
        let x1 = c.steps as f64;
        f.series
            .push(Series::line("floor", n, vec![(0.0, floor), (x1, floor)]));
        f.series.push(Series::line(
            "context-free loss",
            n + 1,
            vec![(0.0, cf), (x1, cf)],
        ));
        out.figure(&format!("curves_L{d}"), &f)?;
    }
    for (q, title) in [
        ("final_excess", "Median final excess"),
        ("early_excess", "Median excess at the early step"),
    ] {
        let mut f = LinePlot::new(
            &format!(
                "{title} vs depth, tuned lr, 95% CI (regression, d = {}, {} seeds{})",
                c.width,
                c.seeds,
                if q == "early_excess" {
                    format!(", update {}", c.early_step)
                } else {
                    String::new()
                }
            ),
            "blocks L",
            "excess loss",
        );
        f.y_log = true;
        for (i, p) in c.presets.iter().enumerate() {
            let pts: Vec<(f64, f64, f64, f64)> = tuned
                .iter()
                .filter(|x| x.preset == *p)
                .filter_map(|cl| {
                    let v: Vec<f64> = runs_of(eval, cl)
                        .iter()
                        .map(|o| quantity(c, o, q))
                        .collect();
                    let (m, lo, hi) = bootstrap::median_interval(&v, c.seed);
                    (lo > 0.0).then_some((cl.depth as f64, m, lo, hi))
                })
                .collect();
            f.series
                .push(Series::points(super::common::label(p), i, &pts));
        }
        out.figure(&format!("{q}_vs_depth"), &f)?;
    }
    Ok(())
}

/// One Post-vs-Pre comparison read back: `(depth, median post - pre, Holm q)`.
pub type Comparison = (u64, f64, f64);

/// Claim 8's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// Early excess, per depth.
    pub early: Vec<Comparison>,
    /// Final excess, per depth.
    pub final_: Vec<Comparison>,
}

/// The rule text, from the constants.
pub fn rule() -> String {
    format!(
        "Post-LN vs Pre-LN at each preset's tuned lr, paired seeds, sign test Holm-corrected over every comparison (q < {ALPHA}) with the median paired difference's sign: (a) Post-LN converges faster early if its early excess is lower at every depth; (b) Pre-LN is better for deep nets if its final excess is lower at every depth >= {DEEP_MIN}; (c) Post-LN is better for shallow nets if its final excess is lower at every depth <= {SHALLOW_MAX}. Supported if (a), (b) and (c) hold (each needs at least one depth in its range); refuted if none holds at any depth of its range; conditional otherwise, naming the depths where each part holds"
    )
}

fn depths_where(v: &[Comparison], sign: f64, keep: impl Fn(u64) -> bool) -> (Vec<u64>, usize) {
    let inside: Vec<&Comparison> = v.iter().filter(|x| keep(x.0)).collect();
    let holds = inside
        .iter()
        .filter(|x| x.1 * sign > 0.0 && x.2 < ALPHA)
        .map(|x| x.0)
        .collect();
    (holds, inside.len())
}

fn list(v: &[u64]) -> String {
    if v.is_empty() {
        "no depth".into()
    } else {
        format!(
            "L = {}",
            v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        )
    }
}

/// The verdict from the evidence ([`rule`]).
pub fn verdict(e: &Evidence) -> String {
    let a = depths_where(&e.early, -1.0, |_| true);
    let b = depths_where(&e.final_, 1.0, |d| d >= DEEP_MIN);
    let c = depths_where(&e.final_, -1.0, |d| d <= SHALLOW_MAX);
    let all = |x: &(Vec<u64>, usize)| x.1 > 0 && x.0.len() == x.1;
    if all(&a) && all(&b) && all(&c) {
        "supported".into()
    } else if a.0.is_empty() && b.0.is_empty() && c.0.is_empty() {
        "refuted".into()
    } else {
        format!(
            "conditional: Post-LN ahead early at {}; Pre-LN ends lower (deep) at {}; Post-LN ends lower (shallow) at {}",
            list(&a.0),
            list(&b.0),
            list(&c.0)
        )
    }
}

fn evidence(d: &super::claims::Data) -> Result<Evidence> {
    let f = d.frame("convergence/pairs.csv")?;
    let q = tier::strs(&f, "quantity")?;
    let (depth, m, qh) = (
        tier::f64s(&f, "depth")?,
        tier::f64s(&f, "diff_median")?,
        tier::f64s(&f, "q_holm")?,
    );
    let pick = |name: &str| -> Vec<Comparison> {
        (0..f.height())
            .filter(|&i| q[i] == name)
            .map(|i| (depth[i] as u64, m[i], qh[i]))
            .collect()
    };
    Ok(Evidence {
        early: pick("early_excess"),
        final_: pick("final_excess"),
    })
}

/// Claim 8's ledger line.
// Wired into the ledger by claims.rs (the lead's part); until then only the tests call it.
pub(crate) fn claim(d: &super::claims::Data) -> Result<super::claims::Claim> {
    let e = evidence(d)?;
    let show = |v: &[Comparison]| {
        v.iter()
            .map(|x| format!("L = {}: {} (q = {})", x.0, plain(x.1), plain(x.2)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Ok(super::claims::Claim {
        id: 8,
        statement: "Post-Norm converges faster early; Pre-Norm is better for deep nets, Post-Norm for shallow ones.",
        seeds: "002, 003",
        data: "convergence/pairs.csv, convergence/summary.csv",
        measurement: format!(
            "median paired difference Post-LN - Pre-LN at each one's tuned lr: early excess {}; final excess {}",
            show(&e.early),
            show(&e.final_)
        ),
        rule: rule(),
        verdict: verdict(&e),
        trained: None,
        finite_width: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(early: &[(u64, f64, f64)], final_: &[(u64, f64, f64)]) -> Evidence {
        Evidence {
            early: early.to_vec(),
            final_: final_.to_vec(),
        }
    }

    #[test]
    fn verdict_follows_the_rule() {
        let sig = 0.001;
        let early = [(4, -0.1, sig), (12, -0.1, sig), (48, -0.2, sig)];
        let fin = [(4, -0.05, sig), (12, 0.0, 1.0), (48, 0.3, sig)];
        assert_eq!(verdict(&ev(&early, &fin)), "supported");
        // Post-LN not lower at the shallow depth: conditional, naming what holds.
        let fin2 = [(4, -0.05, 0.2), (12, 0.0, 1.0), (48, 0.3, sig)];
        assert_eq!(
            verdict(&ev(&early, &fin2)),
            "conditional: Post-LN ahead early at L = 4, 12, 48; Pre-LN ends lower (deep) at L = 48; Post-LN ends lower (shallow) at no depth"
        );
        // Nothing significant in the claimed direction: refuted.
        let none_e = [(4, 0.1, sig), (48, -0.1, 0.5)];
        let none_f = [(4, 0.1, sig), (48, -0.3, sig)];
        assert_eq!(verdict(&ev(&none_e, &none_f)), "refuted");
        // Without a deep depth, (b) cannot hold: not supported.
        let shallow = [(4, -0.05, sig)];
        assert!(verdict(&ev(&[(4, -0.1, sig)], &shallow)).starts_with("conditional"));
        assert!(rule().contains(&DEEP_MIN.to_string()));
    }
}
