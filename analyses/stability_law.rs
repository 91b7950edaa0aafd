//! `stability-law` (issue 12 item 5; TRAINING.md section 4): does the init-time closed form
//! predict the maximum stable learning rate? If instability comes from amplification of the
//! output change (Liu et al. 2020, arXiv:2004.08249), the maximum stable lr scales like
//! `1/output_change`, so the slope of
//!
//! ```text
//! log(measured max stable lr)  on  log(predicted output_change)
//! ```
//!
//! across (preset, depth) cells is -1 ([`PREDICTED_SLOPE`]).
//!
//! - **Prediction**: the closed form's `output_change` at the last layer (E||f(x; W + delta) -
//!   f(x; W)||^2 per unit perturbation, [`Metric::OutputChange`], as `output-change` computes
//!   it) of the very network `warmup` trains (branch, init and width read from its manifest),
//!   at each of its depths. A preset whose prediction is 0 (ReZero: lambda = 0 at init, so a
//!   branch perturbation changes nothing) has no logarithm and is listed, not fitted.
//! - **Measurement**: read, not rerun, from `data/warmup/max_stable_lr.csv` (recorded as an
//!   input in the manifest). Per (warmup, preset, depth) cell, the median over the paired seeds
//!   with censored seeds at their bracket's end ([`super::warmup::censored_median`]: exact
//!   while fewer than half are censored on either side); a cell whose median is censored (at
//!   least half the seeds fail at the grid's smallest lr, or are stable at its largest) is
//!   excluded and listed.
//! - **Interval**: the OLS slope's seeded percentile-bootstrap 95% interval, resampling the
//!   paired seeds (one draw of seed indices applied to every cell, since seeds are paired
//!   across cells) and recomputing every included cell's median; per-preset slopes across
//!   depth likewise.
//! - **Verdict**: the prediction holds for a warmup arm if -1 lies in its slope's interval;
//!   where it fails, the presets whose slopes lie farthest from -1 are named.

use super::claims::Data;
use super::warmup::{self, MedianCensor, censored_median, f64s, strs};
use super::{Analysis, Out, common};
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::output::figure::{Legend, LinePlot, Series};
use crate::output::latex::{self, Table, plain as sig};
use crate::output::table::column;
use crate::stats::{bootstrap, ols};
use crate::train::sweep::Censor;
use crate::{Error, Result};
use polars::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "stability-law",
    about: "the init-time output change predicts the maximum stable lr? slope of log max lr on log output change (prediction -1)",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: None,
};

/// The predicted slope of log(max stable lr) on log(output change).
pub const PREDICTED_SLOPE: f64 = -1.0;
/// Decimals of the slope's interval in `slope.tex` (`slope.csv` keeps every digit).
pub const SLOPE_DECIMALS: usize = 3;
/// The warmup arm whose slope decides the verdict (amplification is about the first updates).
pub const VERDICT_WARMUP: u64 = 0;
/// How many of the presets farthest from the predicted slope a failure names.
pub const NAME_WORST: usize = 2;

const MAX_STABLE: &str = "data/warmup/max_stable_lr.csv";
const WARMUP_MANIFEST: &str = "data/warmup/manifest.json";

/// Configuration: the bootstrap seed (everything else comes from `warmup`'s outputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Bootstrap seed.
    pub seed: u64,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config { seed: 0 }
    }

    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

/// `rel` under the output root, recorded as an input; an error naming the run to make if it is
/// missing.
fn input(out: &mut Out, rel: &str) -> Result<PathBuf> {
    let path = out.root().join(rel);
    if !path.exists() {
        return Err(Error::Undefined(format!(
            "stability-law reads {rel}, which does not exist under the output root: run the warmup analysis first (`normscope reproduce --only warmup,stability-law`)"
        )));
    }
    out.read_input(rel)?;
    Ok(path)
}

/// One (warmup, preset, depth) cell.
#[derive(Clone, Debug, PartialEq)]
pub struct LawCell {
    /// Warmup updates.
    pub warmup: u64,
    /// Preset.
    pub preset: String,
    /// Blocks L.
    pub depth: u64,
    /// Closed-form output change (None: not positive, no logarithm).
    pub predicted: Option<f64>,
    /// Per-seed maximum stable lr, in seed order.
    pub seeds: Vec<(f64, Censor)>,
}

impl LawCell {
    /// The censored median of the seeds.
    pub fn median(&self) -> (f64, MedianCensor) {
        censored_median(&self.seeds)
    }

    /// The same median over the resampled seed indices `idx`.
    fn resampled(&self, idx: &[usize]) -> f64 {
        let v: Vec<(f64, Censor)> = idx.iter().map(|&i| self.seeds[i]).collect();
        censored_median(&v).0
    }

    /// Fitted: a positive prediction and an uncensored median.
    pub fn included(&self) -> bool {
        self.predicted.is_some() && self.median().1 == MedianCensor::None
    }

    /// Why not fitted (empty if fitted).
    pub fn reason(&self) -> &'static str {
        match (self.predicted, self.median().1) {
            (None, _) => "no prediction: output change 0 at init",
            (_, MedianCensor::Below) => "median censored below the grid",
            (_, MedianCensor::Above) => "median censored above the grid",
            _ => "",
        }
    }
}

/// A fitted slope with its bootstrap interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Slope {
    /// Warmup arm.
    pub warmup: u64,
    /// `all` or a preset.
    pub scope: String,
    /// Cells fitted.
    pub cells: usize,
    /// OLS slope.
    pub slope: f64,
    /// Bootstrap interval.
    pub lo: f64,
    /// Bootstrap interval.
    pub hi: f64,
}

impl Slope {
    /// -1 lies in the interval.
    pub fn holds(&self) -> bool {
        self.lo <= PREDICTED_SLOPE && PREDICTED_SLOPE <= self.hi
    }
}

/// The slope of `log median` on `log predicted` over `cells` (all included), with its
/// bootstrap interval over resampled paired seeds; None with fewer than two distinct
/// predictions.
pub fn fit(cells: &[&LawCell], seed: u64) -> Option<(f64, f64, f64)> {
    let x: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.predicted)
        .map(f64::ln)
        .collect();
    let y: Vec<f64> = cells.iter().map(|c| c.median().0.ln()).collect();
    let (slope, _) = ols::line(&x, &y);
    if !slope.is_finite() {
        return None;
    }
    let n = cells.iter().map(|c| c.seeds.len()).min().unwrap_or(0);
    let (lo, hi) = bootstrap::interval(n, seed, |idx| {
        let y: Vec<f64> = cells.iter().map(|c| c.resampled(idx).ln()).collect();
        ols::line(&x, &y).0
    });
    (lo.is_finite() && hi.is_finite()).then_some((slope, lo, hi))
}

/// Every slope: per warmup arm, over all included cells and per preset.
pub fn slopes(cells: &[LawCell], seed: u64) -> Vec<Slope> {
    let mut warmups: Vec<u64> = cells.iter().map(|c| c.warmup).collect();
    warmups.sort_unstable();
    warmups.dedup();
    let mut presets: Vec<&str> = Vec::new();
    for c in cells {
        if !presets.contains(&c.preset.as_str()) {
            presets.push(&c.preset);
        }
    }
    let mut out = Vec::new();
    for w in warmups {
        let scopes = std::iter::once("all").chain(presets.iter().copied());
        for scope in scopes {
            let v: Vec<&LawCell> = cells
                .iter()
                .filter(|c| c.warmup == w && c.included() && (scope == "all" || c.preset == scope))
                .collect();
            if let Some((slope, lo, hi)) = fit(&v, seed) {
                out.push(Slope {
                    warmup: w,
                    scope: scope.into(),
                    cells: v.len(),
                    slope,
                    lo,
                    hi,
                });
            }
        }
    }
    out
}

/// The verdict of one warmup arm: `holds` or `fails: ...` naming the presets farthest from -1.
pub fn verdict(slopes: &[Slope], warmup: u64) -> String {
    let Some(all) = slopes
        .iter()
        .find(|s| s.warmup == warmup && s.scope == "all")
    else {
        return format!("untested: fewer than two fitted cells at warmup {warmup}");
    };
    if all.holds() {
        return "holds".into();
    }
    let mut per: Vec<&Slope> = slopes
        .iter()
        .filter(|s| s.warmup == warmup && s.scope != "all")
        .collect();
    per.sort_by(|a, b| {
        (b.slope - PREDICTED_SLOPE)
            .abs()
            .total_cmp(&(a.slope - PREDICTED_SLOPE).abs())
    });
    let worst: Vec<String> = per
        .iter()
        .take(NAME_WORST)
        .map(|s| format!("{} (slope {})", common::label(&s.scope), sig(s.slope)))
        .collect();
    format!(
        "fails: slope {} [{}, {}] excludes {PREDICTED_SLOPE}{}",
        sig(all.slope),
        sig(all.lo),
        sig(all.hi),
        if worst.is_empty() {
            String::new()
        } else {
            format!("; farthest from it: {}", worst.join(", "))
        }
    )
}

/// The rule, printed from the constants.
pub fn rule() -> String {
    format!(
        "OLS slope of log(median max stable lr) on log(closed-form output change) over (preset, L) cells at warmup {VERDICT_WARMUP}; the prediction holds if {PREDICTED_SLOPE} lies in the slope's bootstrap 95% interval (paired seeds resampled); cells whose median is censored (>= half the seeds censored on one side) or whose prediction is 0 are excluded"
    )
}

/// One line for the ledger (claims 6 and 7) from `stability-law/slope.csv`.
pub(crate) fn law_summary(d: &Data) -> Result<String> {
    let df = d.frame("stability-law/slope.csv")?;
    let (w, scope, n) = (
        f64s(&df, "warmup")?,
        strs(&df, "scope")?,
        f64s(&df, "cells")?,
    );
    let (s, lo, hi) = (
        f64s(&df, "slope")?,
        f64s(&df, "ci_lo")?,
        f64s(&df, "ci_hi")?,
    );
    let slopes: Vec<Slope> = (0..df.height())
        .map(|i| Slope {
            warmup: w[i] as u64,
            scope: scope[i].clone(),
            cells: n[i] as usize,
            slope: s[i],
            lo: lo[i],
            hi: hi[i],
        })
        .collect();
    let Some(all) = slopes
        .iter()
        .find(|s| s.warmup == VERDICT_WARMUP && s.scope == "all")
    else {
        return Ok(format!(
            "stability law: fewer than two fitted cells at warmup {VERDICT_WARMUP}"
        ));
    };
    let per: Vec<String> = slopes
        .iter()
        .filter(|s| s.warmup == VERDICT_WARMUP && s.scope != "all")
        .map(|s| format!("{} {}", common::label(&s.scope), sig(s.slope)))
        .collect();
    Ok(format!(
        "stability law (warmup {VERDICT_WARMUP}): slope of log max stable lr on log init-time output change {} [{}, {}] over {} cells (prediction {PREDICTED_SLOPE}: {}); per-preset slopes across depth: {}",
        sig(all.slope),
        sig(all.lo),
        sig(all.hi),
        all.cells,
        verdict(&slopes, VERDICT_WARMUP),
        if per.is_empty() {
            "none".into()
        } else {
            per.join(", ")
        }
    ))
}

/// (warmup, preset index, depth).
type CellKey = (u64, usize, u64);

/// The closed-form output change at the last layer of `preset` in `warmup`'s network.
fn predicted(w: &warmup::Config, preset: &str, depth: usize) -> Result<Option<f64>> {
    let rows = common::theory(
        &[preset.to_string()],
        &w.model(depth),
        &[Metric::OutputChange],
        &LayerSpec::Last,
    )?;
    Ok(rows
        .iter()
        .find(|r| r.layer == depth as u64 && r.missing.is_none())
        .map(|r| r.value)
        .filter(|v| v.is_finite() && *v > 0.0))
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let manifest = input(out, WARMUP_MANIFEST)?;
    let bytes = std::fs::read(&manifest).map_err(|source| Error::Io {
        path: manifest.display().to_string(),
        source,
    })?;
    let m: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Undefined(format!("{WARMUP_MANIFEST}: {e}")))?;
    let wc: warmup::Config = serde_json::from_value(m["config"].clone())
        .map_err(|e| Error::Undefined(format!("{WARMUP_MANIFEST}: config: {e}")))?;
    let df = crate::output::table::read_csv(&input(out, MAX_STABLE)?)?;
    let (p, l, w) = (
        strs(&df, "preset")?,
        f64s(&df, "depth")?,
        f64s(&df, "warmup")?,
    );
    let (seed, lr, cen) = (f64s(&df, "seed")?, f64s(&df, "lr")?, strs(&df, "censored")?);
    let mut by: BTreeMap<CellKey, Vec<(u64, f64, Censor)>> = BTreeMap::new();
    for i in 0..df.height() {
        let pi = wc.presets.iter().position(|x| *x == p[i]).ok_or_else(|| {
            Error::Undefined(format!("{MAX_STABLE}: preset {} not in its config", p[i]))
        })?;
        let censor = match cen[i].as_str() {
            "below" => Censor::Below,
            "above" => Censor::Above,
            _ => Censor::None,
        };
        by.entry((w[i] as u64, pi, l[i] as u64))
            .or_default()
            .push((seed[i] as u64, lr[i], censor));
    }
    let mut cells = Vec::new();
    let mut cache: BTreeMap<(usize, u64), Option<f64>> = BTreeMap::new();
    for ((warm, pi, depth), mut v) in by {
        v.sort_by_key(|x| x.0);
        let preset = &wc.presets[pi];
        let pred = match cache.get(&(pi, depth)) {
            Some(x) => *x,
            None => {
                let x = predicted(&wc, preset, depth as usize)?;
                cache.insert((pi, depth), x);
                x
            }
        };
        cells.push(LawCell {
            warmup: warm,
            preset: preset.clone(),
            depth,
            predicted: pred,
            seeds: v.iter().map(|x| (x.1, x.2)).collect(),
        });
    }
    law_table(c, out, &cells)?;
    let s = slopes(&cells, c.seed);
    slope_table(out, &s, &wc)?;
    figures(out, &cells, &s, &wc)
}

fn law_table(c: &Config, out: &mut Out, cells: &[LawCell]) -> Result<()> {
    let med: Vec<(f64, MedianCensor)> = cells.iter().map(LawCell::median).collect();
    let ci: Vec<(f64, f64)> = cells
        .iter()
        .map(|x| {
            let n = x.seeds.len();
            bootstrap::interval(n, c.seed, |idx| x.resampled(idx))
        })
        .collect();
    let count = |k: Censor| -> Vec<u64> {
        cells
            .iter()
            .map(|x| x.seeds.iter().filter(|s| s.1 == k).count() as u64)
            .collect()
    };
    let mut df = DataFrame::new_infer_height(vec![
        column("warmup", cells.iter().map(|x| x.warmup)),
        column("preset", cells.iter().map(|x| x.preset.clone())),
        column("depth", cells.iter().map(|x| x.depth)),
        column("predicted_output_change", cells.iter().map(|x| x.predicted)),
        column("median_max_lr", med.iter().map(|m| m.0)),
        column("ci_lo", ci.iter().map(|x| x.0)),
        column("ci_hi", ci.iter().map(|x| x.1)),
        column("n", cells.iter().map(|x| x.seeds.len() as u64)),
        column("censored_below", count(Censor::Below)),
        column("censored_above", count(Censor::Above)),
        column("median_censored", med.iter().map(|m| m.1.name())),
        column("included", cells.iter().map(LawCell::included)),
        column("excluded_because", cells.iter().map(LawCell::reason)),
    ])?;
    out.frame("law.csv", &mut df)?;
    // The closed-form predictions alone (deterministic: the golden table of this analysis).
    let mut seen = Vec::new();
    for x in cells {
        if !seen
            .iter()
            .any(|(p, l, _): &(String, u64, Option<f64>)| *p == x.preset && *l == x.depth)
        {
            seen.push((x.preset.clone(), x.depth, x.predicted));
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", seen.iter().map(|x| x.0.clone())),
        column("depth", seen.iter().map(|x| x.1)),
        column("predicted_output_change", seen.iter().map(|x| x.2)),
    ])?;
    out.frame("predicted.csv", &mut df)
}

fn slope_table(out: &mut Out, s: &[Slope], wc: &warmup::Config) -> Result<()> {
    let mut df = DataFrame::new_infer_height(vec![
        column("warmup", s.iter().map(|x| x.warmup)),
        column("scope", s.iter().map(|x| x.scope.clone())),
        column("cells", s.iter().map(|x| x.cells as u64)),
        column("slope", s.iter().map(|x| x.slope)),
        column("ci_lo", s.iter().map(|x| x.lo)),
        column("ci_hi", s.iter().map(|x| x.hi)),
        column("predicted_slope", s.iter().map(|_| PREDICTED_SLOPE)),
        column("holds", s.iter().map(Slope::holds)),
    ])?;
    out.frame("slope.csv", &mut df)?;
    let mut warmups: Vec<u64> = s.iter().map(|x| x.warmup).collect();
    warmups.dedup();
    let mut text = format!("stability law\nrule: {}\n", rule());
    for w in &warmups {
        text.push_str(&format!("warmup {w}: {}\n", verdict(s, *w)));
    }
    out.bytes("verdict.txt", text.as_bytes())?;
    let mut t = Table::new(
        format!(
            "Slope of log(median maximum stable lr) on log(init-time output change), {} branch, Adam, {} paired seeds; 95\\% bootstrap intervals over the seeds. The amplification prediction is a slope of ${PREDICTED_SLOPE}$. Pooled: one fit over every preset's cells. $^*$: the interval contains ${PREDICTED_SLOPE}$.",
            common::branch_label(&wc.branch),
            wc.seeds
        ),
        "tab:stability-law",
        &["fit", "cells", "slope", "95\\% CI"],
    );
    let mut warmup = None;
    for x in s {
        if warmup != Some(x.warmup) {
            t.group(if x.warmup == 0 {
                "no warmup".to_string()
            } else {
                format!("warmup {} updates", x.warmup)
            });
            warmup = Some(x.warmup);
        }
        t.row(vec![
            latex::Cell::Text(if x.scope == "all" {
                "pooled".into()
            } else {
                common::tex_label(&x.scope)
            }),
            latex::Cell::Int(x.cells as i64),
            latex::Cell::Num(x.slope),
            latex::Cell::Text(format!(
                "[{}, {}]{}",
                latex::fixed(x.lo, SLOPE_DECIMALS),
                latex::fixed(x.hi, SLOPE_DECIMALS),
                if x.holds() { "$^*$" } else { "" }
            )),
        ]);
    }
    t.write(out, "slope")
}

fn figures(out: &mut Out, cells: &[LawCell], s: &[Slope], wc: &warmup::Config) -> Result<()> {
    let mut warmups: Vec<u64> = cells.iter().map(|x| x.warmup).collect();
    warmups.dedup();
    for w in warmups {
        let fitted: Vec<&LawCell> = cells
            .iter()
            .filter(|x| x.warmup == w && x.included())
            .collect();
        let mut plot = LinePlot::new(
            &format!(
                "Measured max stable lr against the init-time output change (Adam, warmup {w}, median of {} seeds, 95% CI)",
                wc.seeds
            ),
            "predicted output change E||Δf||^2 at init",
            "measured max stable lr",
        );
        plot.y_log = true;
        plot.legend = Legend::Auto;
        for (i, p) in wc.presets.iter().enumerate() {
            let pts: Vec<(f64, f64, f64, f64)> = fitted
                .iter()
                .filter(|x| x.preset == *p)
                .filter_map(|x| {
                    let m = x.median().0;
                    let (lo, hi) = bootstrap::interval(x.seeds.len(), 0, |idx| x.resampled(idx));
                    x.predicted.map(|pr| (pr, m, lo, hi))
                })
                .collect();
            if !pts.is_empty() {
                plot.series.push(Series::points(common::label(p), i, &pts));
            }
        }
        if fitted.len() >= 2 {
            let x: Vec<f64> = fitted
                .iter()
                .filter_map(|c| c.predicted)
                .map(f64::ln)
                .collect();
            let y: Vec<f64> = fitted.iter().map(|c| c.median().0.ln()).collect();
            let (mx, my) = (
                x.iter().sum::<f64>() / x.len() as f64,
                y.iter().sum::<f64>() / y.len() as f64,
            );
            let (x0, x1) = (
                x.iter().copied().fold(f64::INFINITY, f64::min),
                x.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            let line = |slope: f64| {
                vec![
                    (x0.exp(), (my + slope * (x0 - mx)).exp()),
                    (x1.exp(), (my + slope * (x1 - mx)).exp()),
                ]
            };
            let n = wc.presets.len();
            plot.series.push(Series::line(
                format!("slope {PREDICTED_SLOPE} (prediction)"),
                n,
                line(PREDICTED_SLOPE),
            ));
            if let Some(a) = s.iter().find(|z| z.warmup == w && z.scope == "all") {
                plot.series.push(Series::line(
                    format!("fit: slope {}", sig(a.slope)),
                    n + 1,
                    line(a.slope),
                ));
            }
        }
        out.figure(&format!("measured_vs_predicted_warmup{w}"), &plot)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell whose every seed has max stable lr `k / predicted`, times a small seed spread.
    fn cell(preset: &str, depth: u64, pred: f64, power: f64) -> LawCell {
        LawCell {
            warmup: 0,
            preset: preset.into(),
            depth,
            predicted: Some(pred),
            seeds: (0..8)
                .map(|s| {
                    (
                        0.01 * pred.powf(power) * (1.0 + 0.01 * s as f64),
                        Censor::None,
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn slope_minus_one_holds_and_a_flat_law_fails() {
        let law: Vec<LawCell> = [(1.0, 6), (2.0, 12), (4.0, 24), (8.0, 48)]
            .iter()
            .flat_map(|&(p, l)| [cell("post", l, p, -1.0), cell("pre", l, p * 0.5, -1.0)])
            .collect();
        let s = slopes(&law, 0);
        let all = s.iter().find(|x| x.scope == "all").unwrap();
        assert!((all.slope + 1.0).abs() < 0.05, "{all:?}");
        assert_eq!(verdict(&s, 0), "holds");
        // Max lr independent of the prediction: slope 0, the prediction fails.
        let flat: Vec<LawCell> = [(1.0, 6), (2.0, 12), (4.0, 24)]
            .iter()
            .flat_map(|&(p, l)| [cell("post", l, p, 0.0), cell("pre", l, p * 3.0, -1.0)])
            .collect();
        let s = slopes(&flat, 0);
        let v = verdict(&s, 0);
        assert!(v.starts_with("fails") && v.contains("Post-LN"), "{v}");
        assert!(rule().contains(&PREDICTED_SLOPE.to_string()));
    }

    #[test]
    fn censored_and_unpredicted_cells_are_excluded() {
        let mut c = cell("post", 48, 8.0, -1.0);
        assert!(c.included());
        // Half the seeds fail at the grid's smallest lr: the median is censored.
        for s in c.seeds.iter_mut().take(4) {
            s.1 = Censor::Below;
        }
        assert!(!c.included());
        assert_eq!(c.reason(), "median censored below the grid");
        // Three of eight censored: kept.
        c.seeds[3].1 = Censor::None;
        assert!(c.included());
        let z = LawCell {
            predicted: None,
            ..cell("rezero", 6, 1.0, 0.0)
        };
        assert!(!z.included() && z.reason().starts_with("no prediction"));
        // Excluded cells do not enter the fit: one included cell leaves no slope.
        let s = slopes(&[c, z], 0);
        assert!(s.is_empty());
        assert!(verdict(&s, 0).starts_with("untested"));
    }
}
