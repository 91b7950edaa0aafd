//! What the training analyses share: the final excess a run is ranked by, the choice of a
//! cell's best learning rate, the summaries of a group of paired runs, a claim's verdict on one
//! tier ([`TierVerdict`]), checks of their configurations, and reading the tables back for
//! the verdicts. The tiers themselves are [`super::tier`].
//!
//! **Score** ([`score`]): a run's final excess loss over the task's floor, `E - F`; a run the
//! divergence rule of [`normscope_core::train::run`] stopped counts as no better than the context-free
//! plateau: its score is censored, *at least* `max(E - F, C - F)` (its last finite evaluation
//! may predate the blow-up), flagged in the tables' `score_at_least` column and modelled as an
//! interval observation by the effects ([`obs_column`]).
//!
//! **Best learning rate** ([`best_lr`]): of a grid, the one with the lowest median score over
//! the seeds; ties go to the smaller learning rate.
//!
//! **Paired comparison** ([`paired`]): two cells trained from the same seeds (same data and,
//! where shapes match, the same initial draws); the differences `a_s - b_s` per seed, their
//! median with a seeded bootstrap interval ([`normscope_core::stats::bootstrap`]) and the exact sign
//! test's two-sided p-value ([`normscope_core::stats::sign`]).

use normscope_core::model::RawModel;
use normscope_core::placement::Preset;
use normscope_core::spec::NormKind;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::{bootstrap, sign, wilson};
use normscope_core::train::config::RawTrain;
use normscope_core::train::sweep::Outcome;
use normscope_core::train::task::{TaskConfig, TaskKind};
use normscope_core::{Error, Result};
use polars::prelude::*;

/// Evaluation batches of every run (the lead's tier).
pub(crate) const EVAL_BATCHES: usize = 4;

/// The base request of the regression tier: `task = regression`, branch `relu-mlp`, LayerNorm
/// with affine, the given width, batch, updates and intervals, and the teacher (and evaluation
/// set) from `teacher_seed`. Cells set the preset, depth, optimizer, lr and warmup.
pub fn base(
    width: usize,
    batch: usize,
    steps: u64,
    eval_every: u64,
    log_every: u64,
    teacher_seed: u64,
) -> RawTrain {
    let d = RawTrain::default();
    RawTrain {
        model: RawModel {
            branch: "relu-mlp".into(),
            width,
            norm: NormKind::Layer,
            ..d.model
        },
        task: TaskConfig {
            kind: TaskKind::Regression,
            teacher_seed,
            ..d.task
        },
        steps,
        batch,
        eval_every,
        eval_batches: EVAL_BATCHES,
        log_every,
        ..d
    }
}

/// The score of a run (module docs): `E - F`, or, if it diverged, the lower bound
/// `max(E - F, C - F)` (`C - F` when `E` is not finite); [`score_at_least`] flags it.
pub fn score(o: &Outcome) -> f64 {
    let e = o.excess();
    if !o.diverged {
        e
    } else if e.is_finite() {
        e.max(o.context_free - o.floor)
    } else {
        o.context_free - o.floor
    }
}

/// Whether [`score`] is only a lower bound (the run diverged: censored, never a made-up
/// exact value).
pub fn score_at_least(o: &Outcome) -> bool {
    o.diverged
}

/// [`score`] in units of the gap `C - F` as an interval observation: exact, or at least the
/// bound when the run diverged.
pub(crate) fn score_obs(o: &Outcome) -> Obs {
    let x = score(o) / (o.context_free - o.floor);
    let v = if score_at_least(o) {
        Obs::at_least(x)
    } else {
        Obs::exact(x)
    };
    v.unwrap_or_else(unknown)
}

/// The name of the flag column of a censored column `col`: `true` where the value is only a
/// lower bound.
pub fn at_least_name(col: &str) -> String {
    format!("{col}_at_least")
}

/// Column `col` of `df` per row as an interval observation ([`Obs`]), divided by the row's
/// gap `context_free - floor` when `gap`: exact, or at least the value where the flag column
/// [`at_least_name`] is `true` (a table without it has exact values); nothing known
/// (`[-inf, inf]`) where the value is not finite, so that a test rests on every run, never
/// on the survivors only.
pub fn obs_column(df: &DataFrame, col: &str, gap: bool) -> Result<Vec<Obs>> {
    let v = f64s(df, col)?;
    let flag = match df.column(&at_least_name(col)) {
        Ok(_) => strs(df, &at_least_name(col))?
            .iter()
            .map(|s| s == "true")
            .collect(),
        Err(_) => vec![false; df.height()],
    };
    let scale = if gap {
        let (f, cf) = (f64s(df, "floor")?, f64s(df, "context_free")?);
        f.iter().zip(&cf).map(|(a, b)| b - a).collect()
    } else {
        vec![1.0; df.height()]
    };
    Ok((0..df.height())
        .map(|i| {
            let x = v[i] / scale[i];
            let o = if flag[i] {
                Obs::at_least(x)
            } else {
                Obs::exact(x)
            };
            o.unwrap_or_else(unknown)
        })
        .collect())
}

/// Nothing known: `[-inf, inf]` (a value that is undefined for a run that must still count).
pub fn unknown() -> Obs {
    Obs::between(f64::NEG_INFINITY, f64::INFINITY).expect("[-inf, inf] is an interval")
}

/// The paired differences `a_s - b_s` over the seeds of `a` (interval arithmetic,
/// [`Obs`]); a seed of `a` missing from `b` is an error naming `what`.
pub(crate) fn paired_obs(a: &[(String, Obs)], b: &[(String, Obs)], what: &str) -> Result<Vec<Obs>> {
    a.iter()
        .map(|(s, x)| {
            let y = b
                .iter()
                .find(|(u, _)| u == s)
                .ok_or_else(|| Error::Undefined(format!("{what}: seed {s} has no paired run")))?;
            Ok(*x - y.1)
        })
        .collect()
}

/// The lowest-median-score learning rate among `runs` (one cell family at several learning
/// rates, every seed); ties go to the smaller learning rate. NaN when `runs` is empty.
pub fn best_lr(runs: &[&Outcome]) -> f64 {
    let mut lrs: Vec<f64> = runs.iter().map(|o| o.cell.lr).collect();
    lrs.sort_by(f64::total_cmp);
    lrs.dedup_by(|a, b| a.to_bits() == b.to_bits());
    let med = |lr: f64| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|o| o.cell.lr.to_bits() == lr.to_bits())
            .map(|o| score(o))
            .collect();
        bootstrap::median(&v)
    };
    let mut best = (f64::NAN, f64::INFINITY);
    for lr in lrs {
        let m = med(lr);
        if m < best.1 {
            best = (lr, m);
        }
    }
    best.0
}

/// A group of runs of one cell (paired seeds): failures with their Wilson interval and the
/// median of a per-run value with its bootstrap interval.
///
/// # Examples
///
/// A summary of ten runs, as [`group`] computes it:
///
/// ```rust
/// use normscope_analyses::training::Group;
/// let g = Group { n: 10, failed: 2, fail_ci: (0.057, 0.51), median: 0.4, median_ci: (0.3, 0.5) };
/// assert_eq!(g.failed as f64 / g.n as f64, 0.2);
/// assert!(g.fail_ci.0 < 0.2 && 0.2 < g.fail_ci.1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Group {
    /// Runs.
    pub n: u64,
    /// Failed runs (not stable: [`normscope_core::train::classify::RunClass::stable`]).
    pub failed: u64,
    /// Wilson 95% interval of the failure rate.
    pub fail_ci: (f64, f64),
    /// Median of the value.
    pub median: f64,
    /// Its bootstrap 95% interval.
    pub median_ci: (f64, f64),
}

/// Summarises `values` of the runs `runs` (in the same order); `seed` seeds the bootstrap.
pub fn group(runs: &[&Outcome], values: &[f64], seed: u64) -> Group {
    let n = runs.len() as u64;
    let failed = runs.iter().filter(|o| o.failed).count() as u64;
    let (median, lo, hi) = bootstrap::median_interval(values, seed);
    Group {
        n,
        failed,
        fail_ci: wilson::interval(failed, n),
        median,
        median_ci: (lo, hi),
    }
}

/// A paired comparison of two cells: the median of `a_s - b_s` over seeds, its bootstrap
/// interval, and the sign test's two-sided p-value.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::training::paired;
/// let p = paired(&[3.0, 2.0, 5.0], &[1.0, 1.0, 1.0], 0);
/// // Differences 2, 1, 4: median 2, all positive; the sign test's p = 2 * (1/2)^3 = 0.25
/// // (0.24999999999999867 through the binomial distribution's CDF).
/// assert_eq!((p.median, p.positive, p.negative), (2.0, 3, 0));
/// assert!((p.p - 0.25).abs() < 1e-12);
/// assert!(p.ci.0 <= 2.0 && 2.0 <= p.ci.1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Median paired difference.
    pub median: f64,
    /// Bootstrap 95% interval.
    pub ci: (f64, f64),
    /// Seeds with `a_s > b_s`.
    pub positive: u64,
    /// Seeds with `a_s < b_s`.
    pub negative: u64,
    /// Sign test, two-sided.
    pub p: f64,
}

/// Compares `a` and `b` paired by position (the same seed at the same index).
pub fn paired(a: &[f64], b: &[f64], seed: u64) -> Paired {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let (median, lo, hi) = bootstrap::median_interval(&d, seed);
    Paired {
        median,
        ci: (lo, hi),
        positive: d.iter().filter(|x| **x > 0.0).count() as u64,
        negative: d.iter().filter(|x| **x < 0.0).count() as u64,
        p: sign::two_sided(&d),
    }
}

/// Checks a list of presets is non-empty (each is known: it was resolved when read).
pub(crate) fn check_presets(presets: &[&'static Preset]) -> Result<()> {
    if presets.is_empty() {
        return Err(Error::invalid(
            "presets",
            "[]",
            "a non-empty list of presets",
        ));
    }
    Ok(())
}

/// Checks a learning-rate grid: non-empty, each finite and > 0, no repeats.
pub(crate) fn check_lrs(field: &'static str, lrs: &[f64]) -> Result<()> {
    let ok = !lrs.is_empty()
        && lrs.iter().all(|x| x.is_finite() && *x > 0.0)
        && distinct_bits(lrs) == lrs.len();
    if !ok {
        return Err(Error::invalid(
            field,
            format!("{lrs:?}"),
            "a non-empty list of distinct finite learning rates > 0",
        ));
    }
    Ok(())
}

fn distinct_bits(v: &[f64]) -> usize {
    let mut b: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
    b.sort_unstable();
    b.dedup();
    b.len()
}

/// Checks a count: at least `min`.
pub(crate) fn check_count(field: &'static str, v: u64, min: u64) -> Result<()> {
    if v < min {
        return Err(Error::invalid(field, v, format!("an integer >= {min}")));
    }
    Ok(())
}

/// Sorted distinct values of `v`.
pub fn distinct<T: PartialOrd + Copy>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    out
}

/// A numeric column of a table read back, as `f64` (empty cells as NaN).
pub fn f64s(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// A text column of a table read back.
pub fn strs(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    let c = df.column(name)?.cast(&DataType::String)?;
    Ok(c.str()?
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

/// A new frame from columns; a non-finite float (an undefined statistic, e.g. a slope over
/// blocks whose gradients do not differ) is written empty.
pub fn frame(columns: Vec<Column>) -> Result<DataFrame> {
    let cols: Vec<Column> = columns
        .into_iter()
        .map(|c| match c.f64() {
            Ok(v) => {
                let vals: Vec<Option<f64>> =
                    v.iter().map(|x| x.filter(|y| y.is_finite())).collect();
                Column::new(c.name().clone(), vals)
            }
            Err(_) => c,
        })
        .collect();
    Ok(DataFrame::new_infer_height(cols)?)
}

/// A training claim's verdict on one tier, for the ledger.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::training::TierVerdict;
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Claimed, Comparison, Family, judge};
///
/// let c = Comparison {
///     name: "12 layers".into(),
///     diffs: (1..=10).map(|i| Obs::exact(i as f64).unwrap()).collect(),
///     claimed: Claimed::Increase,
///     sesoi: None,
/// };
/// let fam = Family::new("warmup raises the maximum stable lr", 0.5, vec![c]);
/// let (assessed, v) = judge(&fam)?;
/// let tv = TierVerdict::judged("lm", &fam, assessed, &v, String::new());
/// assert_eq!((tv.tier.as_str(), tv.verdict.as_str()), ("lm", "supported (holds in 1 of 1)"));
/// assert_eq!(tv.effects, "12 layers: +5.5 [2, 9] (n = 10, q = 0.001953): as claimed");
/// assert_eq!(tv.family, "warmup raises the maximum stable lr");
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TierVerdict {
    /// Tier name.
    pub tier: String,
    /// The effects, one per comparison, effect first ([`lines`]).
    pub effects: String,
    /// The rule (the family, its tests, alpha and SESOI).
    pub rule: String,
    /// The verdict.
    pub verdict: String,
    /// Context reported beside the verdict (not part of the family).
    pub context: String,
    /// The family's claim, in words ([`normscope_core::stats::verdict::Family::claim`]); the
    /// families' labels, `; `-separated, for a verdict [`TierVerdict::combined`] from several.
    pub family: String,
    /// Every comparison, assessed, with the claim of the family it belongs to (for the
    /// ledger's `effects.csv`).
    pub assessed: Vec<(String, normscope_core::stats::verdict::Assessed)>,
}

impl TierVerdict {
    /// The verdict on `tier` of the judged family `fam` (its comparisons `assessed` and
    /// verdict `v`, as [`normscope_core::stats::verdict::judge`] returns them), with `context`.
    pub fn judged(
        tier: &str,
        fam: &normscope_core::stats::verdict::Family,
        assessed: Vec<normscope_core::stats::verdict::Assessed>,
        v: &normscope_core::stats::verdict::Verdict,
        context: String,
    ) -> TierVerdict {
        TierVerdict {
            tier: tier.into(),
            effects: lines(&assessed),
            rule: fam.rule(),
            verdict: v.to_string(),
            context,
            family: fam.claim.clone(),
            assessed: assessed
                .into_iter()
                .map(|a| (fam.claim.clone(), a))
                .collect(),
        }
    }

    /// The verdict on `tier` of a claim made of several sub-claims, each its own family with
    /// its own Holm adjustment (`parts`: a label, the family, its comparisons assessed and its
    /// verdict). The claim is their conjunction: `supported` when every part is supported,
    /// `refuted` when every part is refuted, `not estimable` when none is estimable,
    /// `conditional` when some part holds somewhere, else `inconclusive`; each part's verdict
    /// follows its label.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_analyses::training::TierVerdict;
    /// use normscope_core::stats::obs::Obs;
    /// use normscope_core::stats::verdict::{Claimed, Comparison, Family, judge};
    ///
    /// let fam = |claim: &str, k: i32| {
    ///     let c = Comparison {
    ///         name: "6 layers".into(),
    ///         diffs: (0..10).map(|i| Obs::exact(if i < k { 1.0 } else { -1.0 }).unwrap()).collect(),
    ///         claimed: Claimed::Increase,
    ///         sesoi: None,
    ///     };
    ///     Family::new(claim, 0.5, vec![c])
    /// };
    /// let (a, b) = (fam("raises the lr", 10), fam("Post-specific", 5));
    /// let (ja, va) = judge(&a)?;
    /// let (jb, vb) = judge(&b)?;
    /// let v = TierVerdict::combined("lm", vec![("effect", a, ja, va), ("mechanism", b, jb, vb)], String::new());
    /// assert_eq!(
    ///     v.verdict,
    ///     "conditional: effect: supported (holds in 1 of 1); mechanism: inconclusive (holds in 0 of 1)"
    /// );
    /// assert_eq!(v.assessed.len(), 2);
    /// assert_eq!(v.assessed[1].0, "Post-specific");
    /// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
    /// ```
    pub fn combined(
        tier: &str,
        parts: Vec<(
            &str,
            normscope_core::stats::verdict::Family,
            Vec<normscope_core::stats::verdict::Assessed>,
            normscope_core::stats::verdict::Verdict,
        )>,
        context: String,
    ) -> TierVerdict {
        use normscope_core::stats::verdict::Verdict as V;
        let every = |f: fn(&V) -> bool| parts.iter().all(|p| f(&p.3));
        let overall = if every(|v| matches!(v, V::Supported { .. })) {
            "supported"
        } else if every(|v| matches!(v, V::Refuted { .. })) {
            "refuted"
        } else if every(|v| matches!(v, V::NotEstimable { .. })) {
            "not estimable"
        } else if parts
            .iter()
            .any(|p| matches!(p.3, V::Supported { .. } | V::Conditional { .. }))
        {
            "conditional"
        } else {
            "inconclusive"
        };
        let each = |f: &dyn Fn(&(&str, _, Vec<_>, V)) -> String| {
            parts.iter().map(f).collect::<Vec<String>>().join("; ")
        };
        TierVerdict {
            tier: tier.into(),
            effects: each(&|p| format!("{}: {}", p.0, lines(&p.2))),
            rule: format!(
                "the claim is the conjunction of {} parts, each its own family: {}",
                parts.len(),
                each(&|p| format!("{}: {}", p.0, p.1.rule()))
            ),
            verdict: format!("{overall}: {}", each(&|p| format!("{}: {}", p.0, p.3))),
            context,
            family: parts.iter().map(|p| p.0).collect::<Vec<_>>().join("; "),
            assessed: parts
                .iter()
                .flat_map(|p| p.2.iter().map(|a| (p.1.claim.clone(), a.clone())))
                .collect(),
        }
    }
}

/// `name: effect [lo, hi] (n, q): outcome` for each assessed comparison, `; `-separated.
pub fn lines(assessed: &[normscope_core::stats::verdict::Assessed]) -> String {
    assessed
        .iter()
        .map(|a| format!("{}: {a}", a.name))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `1 layer`, `6 layers`: a comparison's name by its depth in layers.
pub(crate) fn layers_text(layers: usize) -> String {
    if layers == 1 {
        "1 layer".into()
    } else {
        format!("{layers} layers")
    }
}

/// The distinct strings of `v`, in order of first appearance.
pub(crate) fn distinct_strings(v: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in v {
        if !out.contains(x) {
            out.push(x.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_core::train::sweep::Cell;

    fn run(lr: f64, final_loss: f64, diverged: bool) -> Outcome {
        Outcome {
            cell: Cell {
                preset: normscope_core::placement::PRE,
                depth: 4,
                optimizer: "adam".into(),
                lr,
                warmup: 0,
            },
            seed: 0,
            initial_loss: 2.0,
            final_loss,
            floor: 0.5,
            context_free: 1.5,
            diverged,
            class: if diverged {
                normscope_core::train::classify::RunClass::Diverged
            } else {
                normscope_core::train::classify::RunClass::Trained
            },
            failed: diverged,
            curve: vec![],
            scaling: vec![],
            stream: vec![],
        }
    }

    #[test]
    fn scores_and_best_learning_rates() {
        // A diverged run whose last finite loss was low counts as the context-free gap.
        assert!((score(&run(1e-3, 0.6, true)) - 1.0).abs() < 1e-12);
        assert!((score(&run(1e-3, 0.6, false)) - 0.1).abs() < 1e-12);
        let runs = [
            run(1e-3, 0.9, false),
            run(1e-3, 1.0, false),
            run(1e-2, 0.6, false),
            run(1e-2, 0.7, true),
            run(1e-2, 0.6, false),
            run(3e-2, 0.6, false),
        ];
        let refs: Vec<&Outcome> = runs.iter().collect();
        // Medians: 1e-3: 0.45; 1e-2: 0.1; 3e-2: 0.1 (a tie: the smaller wins).
        assert!((best_lr(&refs) - 1e-2).abs() < 1e-15);
        assert!(best_lr(&[]).is_nan());
    }

    #[test]
    fn paired_differences() {
        let p = paired(&[2.0, 3.0, 4.0, 1.0], &[1.0, 1.0, 1.0, 1.0], 0);
        assert!((p.median - 1.5).abs() < 1e-12);
        assert_eq!((p.positive, p.negative), (3, 0));
        assert!((p.p - 0.25).abs() < 1e-12);
    }
}
