//! How each preset fails at its maximum stable learning rate: the class of the run at each
//! search's first failing rate (the high end of its bracket `[stable, failing)`), from
//! `warmup`'s runs and searches without warmup, per (tier, preset, depth, budget): one row's
//! searches are its seeds, independent draws.
//!
//! Why (issue 58, item 5): one `tau` of the stability law holds for the Post-Norm family and
//! not for Pre-LN, whose maximum stable rate is 20-200x above the law's line. A first failing
//! run that **diverged** (the divergence rule of [`normscope_core::train::run`]: a non-finite
//! loss or a loss far above the initial one), rather than collapsed on the plateau or stayed
//! slow ([`normscope_core::train::classify`]), is a different way to fail; the share that
//! diverged, with its Wilson 95% interval ([`normscope_core::stats::wilson`]), says whether
//! divergence is detected. It describes outcomes, not mechanisms: two presets whose runs both
//! end on the plateau may get there for different reasons. A search censored above (stable at
//! the cap) has no failing run, and one censored below (no rate stable, the budget too short
//! to tell) no bracket: both are counted apart, never as a failure mode.
//!
//! Output: `failure_modes.csv` of the `stability-law` analysis.

use super::training::{f64s, frame, strs};
use normscope_core::Result;
use normscope_core::output::table::column;
use normscope_core::stats::wilson;
use polars::prelude::DataFrame;
use std::collections::BTreeMap;

/// The failure modes of one (tier, preset).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::failure_mode::Modes;
/// let m = Modes { tier: "lm".into(), preset: "pre".into(), blocks: 24, steps: 300, diverged: 3, collapsed: 6, slow: 1, ..Modes::default() };
/// assert_eq!(m.failed(), 10);
/// let (lo, hi) = m.diverged_ci();
/// assert!(lo < 0.3 && 0.3 < hi);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Modes {
    /// Tier.
    pub tier: String,
    /// Preset name.
    pub preset: String,
    /// Depth in blocks.
    pub blocks: u64,
    /// The runs' updates (the tier's, or its longer budget's).
    pub steps: u64,
    /// Searches whose first failing run diverged.
    pub diverged: u64,
    /// ... collapsed on the plateau.
    pub collapsed: u64,
    /// ... was still slow (on the plateau, falling).
    pub slow: u64,
    /// Searches censored above: stable at the cap, no failing run.
    pub censored_above: u64,
    /// Searches censored below: no rate stable, no bracket.
    pub censored_below: u64,
}

impl Modes {
    /// Searches with a failing run.
    pub fn failed(&self) -> u64 {
        self.diverged + self.collapsed + self.slow
    }

    /// The Wilson 95% interval of the share of failing runs that diverged.
    pub fn diverged_ci(&self) -> (f64, f64) {
        wilson::interval(self.diverged, self.failed())
    }
}

/// The failure modes per (tier, preset, blocks, steps), in order of first appearance in
/// `searches`, from `warmup`'s `runs.csv` and `searches.csv` at warmup 0: each bracketed
/// search's run at its high end, matched on tier, preset, blocks, warmup, seed and rate.
///
/// Errors: a column missing, a failing rate with no run (the two tables do not belong
/// together), or a failing run of a stable class or one not known.
pub fn modes(runs: &DataFrame, searches: &DataFrame) -> Result<Vec<Modes>> {
    let key = |df: &DataFrame| -> Result<Vec<String>> {
        let cols: Vec<Vec<String>> = ["tier", "preset", "blocks", "warmup", "seed"]
            .iter()
            .map(|c| strs(df, c))
            .collect::<Result<_>>()?;
        Ok((0..df.height())
            .map(|i| {
                cols.iter()
                    .map(|c| c[i].as_str())
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect())
    };
    let (run_keys, run_lr, run_class) = (key(runs)?, f64s(runs, "lr")?, strs(runs, "class")?);
    let class: BTreeMap<(String, u64), String> = run_keys
        .into_iter()
        .zip(run_lr)
        .zip(run_class)
        .map(|((k, lr), c)| ((k, lr.to_bits()), c))
        .collect();
    let (tier, preset) = (strs(searches, "tier")?, strs(searches, "preset")?);
    let (blocks, steps) = (f64s(searches, "blocks")?, f64s(searches, "steps")?);
    let (warmup, censored) = (strs(searches, "warmup")?, strs(searches, "censored")?);
    let high = f64s(searches, "max_lr_bracket_high")?;
    let keys = key(searches)?;
    let bad = |what: String| normscope_core::Error::Undefined(format!("failure modes: {what}"));
    let mut out: Vec<Modes> = Vec::new();
    for i in 0..searches.height() {
        if warmup[i] != "0" {
            continue;
        }
        let (b, st) = (blocks[i] as u64, steps[i] as u64);
        let at = match out.iter().position(|m| {
            m.tier == tier[i] && m.preset == preset[i] && m.blocks == b && m.steps == st
        }) {
            Some(k) => k,
            None => {
                out.push(Modes {
                    tier: tier[i].clone(),
                    preset: preset[i].clone(),
                    blocks: b,
                    steps: st,
                    ..Modes::default()
                });
                out.len() - 1
            }
        };
        let m = &mut out[at];
        match censored[i].as_str() {
            "above" => {
                m.censored_above += 1;
                continue;
            }
            "below" => {
                m.censored_below += 1;
                continue;
            }
            _ => {}
        }
        let c = class
            .get(&(keys[i].clone(), high[i].to_bits()))
            .ok_or_else(|| {
                bad(format!(
                    "no run at the failing rate {} of search {}",
                    high[i], keys[i]
                ))
            })?;
        match c.as_str() {
            "diverged" => m.diverged += 1,
            "collapsed" => m.collapsed += 1,
            "slow" => m.slow += 1,
            other => {
                return Err(bad(format!(
                    "the run at the failing rate {} of search {} is {other}, not diverged, collapsed or slow",
                    high[i], keys[i]
                )));
            }
        }
    }
    Ok(out)
}

/// `failure_modes.csv`: tier, preset, blocks, steps, the counts, `failed`, and
/// `diverged_share` with its Wilson 95% interval (empty where nothing failed).
pub fn table(m: &[Modes]) -> Result<DataFrame> {
    let share = |f: fn((f64, f64), f64) -> f64| {
        m.iter()
            .map(|x| {
                let n = x.failed();
                let p = if n == 0 {
                    f64::NAN
                } else {
                    x.diverged as f64 / n as f64
                };
                if n == 0 {
                    f64::NAN
                } else {
                    f(x.diverged_ci(), p)
                }
            })
            .collect::<Vec<f64>>()
    };
    frame(vec![
        column("tier", m.iter().map(|x| x.tier.clone())),
        column("preset", m.iter().map(|x| x.preset.clone())),
        column("blocks", m.iter().map(|x| x.blocks)),
        column("steps", m.iter().map(|x| x.steps)),
        column("diverged", m.iter().map(|x| x.diverged)),
        column("collapsed", m.iter().map(|x| x.collapsed)),
        column("slow", m.iter().map(|x| x.slow)),
        column("censored_above", m.iter().map(|x| x.censored_above)),
        column("censored_below", m.iter().map(|x| x.censored_below)),
        column("failed", m.iter().map(Modes::failed)),
        column("diverged_share", share(|_, p| p)),
        column("diverged_share_ci_low", share(|ci, _| ci.0)),
        column("diverged_share_ci_high", share(|ci, _| ci.1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(rows: &[(&str, &str, u64, f64, &str)]) -> DataFrame {
        frame(vec![
            column("tier", rows.iter().map(|r| r.0.to_string())),
            column("preset", rows.iter().map(|r| r.1.to_string())),
            column("blocks", rows.iter().map(|_| 12u64)),
            column("warmup", rows.iter().map(|_| 0u64)),
            column("seed", rows.iter().map(|r| r.2)),
            column("lr", rows.iter().map(|r| r.3)),
            column("class", rows.iter().map(|r| r.4.to_string())),
        ])
        .unwrap()
    }

    fn searches(rows: &[(&str, &str, u64, f64, &str)]) -> DataFrame {
        frame(vec![
            column("tier", rows.iter().map(|r| r.0.to_string())),
            column("preset", rows.iter().map(|r| r.1.to_string())),
            column("blocks", rows.iter().map(|_| 12u64)),
            column("warmup", rows.iter().map(|_| 0u64)),
            column("seed", rows.iter().map(|r| r.2)),
            column("steps", rows.iter().map(|_| 300u64)),
            column("max_lr_bracket_high", rows.iter().map(|r| r.3)),
            column("censored", rows.iter().map(|r| r.4.to_string())),
        ])
        .unwrap()
    }

    #[test]
    fn the_run_at_each_failing_rate_is_counted_by_its_class() {
        // Pre-LN: seed 0 diverged at 0.1 (stable at 0.05), seed 1 collapsed at 0.2, seed 2
        // stable at the cap. Post-LN: seed 0 slow at 1e-3, seed 1 censored below.
        let r = runs(&[
            ("lm", "pre", 0, 0.05, "trained"),
            ("lm", "pre", 0, 0.1, "diverged"),
            ("lm", "pre", 1, 0.1, "trained"),
            ("lm", "pre", 1, 0.2, "collapsed"),
            ("lm", "pre", 2, 4.0, "trained"),
            ("lm", "post", 0, 1e-3, "slow"),
        ]);
        let s = searches(&[
            ("lm", "pre", 0, 0.1, "none"),
            ("lm", "pre", 1, 0.2, "none"),
            ("lm", "pre", 2, f64::NAN, "above"),
            ("lm", "post", 0, 1e-3, "none"),
            ("lm", "post", 1, 1e-5, "below"),
        ]);
        let m = modes(&r, &s).unwrap();
        assert_eq!(
            m[0],
            Modes {
                tier: "lm".into(),
                preset: "pre".into(),
                blocks: 12,
                steps: 300,
                diverged: 1,
                collapsed: 1,
                slow: 0,
                censored_above: 1,
                censored_below: 0,
            }
        );
        // Censored below: counted apart, not a failure mode.
        assert_eq!(
            (
                m[1].preset.as_str(),
                m[1].slow,
                m[1].failed(),
                m[1].censored_below
            ),
            ("post", 1, 1, 1)
        );
        let t = table(&m).unwrap();
        let share: Vec<u64> = f64s(&t, "diverged_share")
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(share, [0.5f64.to_bits(), 0.0f64.to_bits()]);
        assert_eq!(
            f64s(&t, "diverged_share_ci_low").unwrap()[0].to_bits(),
            wilson::interval(1, 2).0.to_bits()
        );
        // A failing rate without its run: the tables do not belong together.
        let lost = searches(&[("lm", "pre", 0, 0.3, "none")]);
        let e = modes(&r, &lost).unwrap_err().to_string();
        assert!(e.contains("no run at the failing rate"), "{e}");
        // A failing rate whose run was stable: the tables contradict each other.
        let stable = searches(&[("lm", "pre", 0, 0.05, "none")]);
        let e = modes(&r, &stable).unwrap_err().to_string();
        assert!(e.contains("is trained, not diverged"), "{e}");
    }
}
