//! `deepnorm-alpha`: the path from Post-LN to DeepNorm at one depth L. Along
//! `alpha = alpha_DN^s`, `beta = beta_DN^s` (s from 0, Post-LN, to 1, DeepNorm with Wang et
//! al. 2022's constants), and along alpha alone (beta = 1): the effective depth, the weights of
//! x_0 and of the first branch in x_L, and the gradient at x_0. Tests seed 002's "DeepNorm keeps
//! Post-Norm's depth and avoids vanishing gradients".

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::output::table::tagged_frame;
use normscope_core::placement::{self, Overrides};
use normscope_core::profile::EngineKind;
use normscope_core::profile::Row;
use normscope_core::spec::SkipScale;
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, Mark, Series};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "deepnorm-alpha",
    about: "from Post-LN (alpha = 1) to DeepNorm's alpha and beta: effective depth and weights",
    claims: &[5],
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
/// use normscope_analyses::deepnorm_alpha::Config;
/// let c = Config::full();
/// assert_eq!((c.depth, c.steps), (64, 21));
/// assert_eq!(c.mc_s, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
/// assert_eq!(c.model.branch, "linear");
/// assert_eq!(Config::quick().mc_s, vec![0.0, 1.0]);
/// assert_eq!(Config::quick().mc.samples, 8);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Depth L (DeepNorm's constants are those of this depth).
    pub depth: usize,
    /// Closed form: points s in [0, 1] (evenly spaced), and the Monte Carlo points.
    pub steps: usize,
    /// Monte Carlo: the values of s measured.
    pub mc_s: Vec<f64>,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

/// DeepNorm's (alpha, beta) at depth L (Wang et al. 2022; see `placement::deepnorm`).
pub fn constants(depth: usize) -> Result<(f64, f64)> {
    if depth == 0 {
        return Err(Error::invalid("depth", 0, "an integer >= 1"));
    }
    let spec = placement::DEEPNORM.stack_with(depth, &Overrides::default())?;
    let alpha = match spec.block(1).skip {
        SkipScale::Alpha(a) => a,
        SkipScale::One | SkipScale::AdminOmega => 1.0,
    };
    Ok((alpha, spec.beta.unwrap_or(1.0)))
}

/// The sweep columns of the CSVs (alpha and beta are every row's own `alpha`, `beta`).
pub(crate) const TAGS: [&str; 2] = ["s", "alpha_only"];

const METRICS: [Metric; 3] = [Metric::EffDepth, Metric::BranchWeight, Metric::GradSq];

fn keep(r: &Row) -> bool {
    let m = r.metric;
    (m != Metric::BranchWeight || r.source.is_some_and(|s| s <= 1))
        && (m != Metric::GradSq || r.layer == 0)
}

/// Rows at (alpha, beta), tagged `[s, alpha_only]` (`alpha_only` is 1 on the beta = 1 family,
/// 0 on the path to DeepNorm) and labelled by the network they are ([`label`]): the preset is
/// `deepnorm` with both scales overridden, which at s = 0 is Post-LN.
fn at(
    c: &Config,
    s: f64,
    alpha: f64,
    beta: f64,
    alpha_only: bool,
    engine: EngineKind,
) -> Result<Vec<(Vec<f64>, Row)>> {
    let mut raw = c.model.raw(c.depth, &c.mc);
    raw.alpha = Some(alpha);
    raw.beta = Some(beta);
    let layers = LayerSpec::List(vec![0, c.depth]);
    let rows = common::rows(
        engine,
        &[placement::DEEPNORM],
        &raw,
        &c.mc,
        &METRICS,
        &layers,
    )?;
    let setup = rows.first().map(|r| {
        std::sync::Arc::new(normscope_core::profile::Setup {
            label: label(s, alpha_only),
            ..(*r.setup).clone()
        })
    });
    Ok(rows
        .into_iter()
        .filter(keep)
        .map(|mut r| {
            if let Some(setup) = &setup {
                r.setup = setup.clone();
            }
            (vec![s, f64::from(u8::from(alpha_only))], r)
        })
        .collect())
}

/// The name of the network at point `s` of a family: Post-LN at s = 0 (alpha = beta = 1),
/// DeepNorm at the path's s = 1, else the family's formula.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::deepnorm_alpha::label;
/// assert_eq!(label(0.0, false), "Post-LN");
/// assert_eq!(label(1.0, false), "DeepNorm");
/// assert_eq!(label(0.5, false), "alpha = alpha_DN^s, beta = beta_DN^s");
/// assert_eq!(label(1.0, true), "alpha = alpha_DN^s, beta = 1");
/// ```
pub fn label(s: f64, alpha_only: bool) -> String {
    match (s, alpha_only) {
        (0.0, _) => "Post-LN",
        (1.0, false) => "DeepNorm",
        (_, false) => "alpha = alpha_DN^s, beta = beta_DN^s",
        (_, true) => "alpha = alpha_DN^s, beta = 1",
    }
    .to_string()
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            depth: 64,
            steps: 21,
            mc_s: vec![0.0, 0.25, 0.5, 0.75, 1.0],
            model: Model::seeds(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_s: vec![0.0, 1.0],
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("deepnorm-alpha.depth", &[self.depth])?;
        if self.steps < 2 {
            return Err(Error::invalid(
                "deepnorm-alpha.steps",
                self.steps,
                "an integer >= 2",
            ));
        }
        if let Some(bad) = self.mc_s.iter().find(|s| !(0.0..=1.0).contains(*s)) {
            return Err(Error::invalid(
                "deepnorm-alpha.mc_s",
                bad,
                "numbers in [0, 1]",
            ));
        }
        common::check(&[placement::DEEPNORM], &self.model, &self.mc, self.depth)?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

/// One curve of a figure, `(alpha, value, ci_low, ci_high)` sorted by alpha: metric `m` (source
/// `src`) on the family `beta_one` (alpha alone) or the path to DeepNorm. Rows exist at layers 0
/// and L: the gradient is read at x_0 (layer 0), every other curve at x_L (at layer 0, x_0's
/// weight is trivially 1; mixing the two drew a sawtooth).
fn curve(
    rows: &[(Vec<f64>, Row)],
    m: Metric,
    src: Option<u64>,
    beta_one: bool,
) -> Vec<(f64, f64, f64, f64)> {
    let at_layer = |r: &Row| {
        if r.metric == Metric::GradSq {
            r.layer == 0
        } else {
            r.layer == r.depth
        }
    };
    let mut v: Vec<(f64, f64, f64, f64)> = rows
        .iter()
        .filter(|(t, r)| {
            r.metric == m
                && r.source == src
                && (t[1] > 0.5) == beta_one
                && r.missing.is_none()
                && at_layer(r)
                && keep(r)
        })
        .map(|(_, r)| {
            let (lo, hi) = r.interval();
            (r.setup.model.alpha.unwrap_or(1.0), r.value, lo, hi)
        })
        .collect();
    v.sort_by(|x, y| x.0.total_cmp(&y.0));
    v
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let (a, b) = constants(c.depth)?;
    // (s, alpha, beta, alpha_only): the path to DeepNorm, and alpha alone at beta = 1.
    let mut grid = Vec::new();
    // The closed form also runs at the Monte Carlo points, so the tables compare them at equal s.
    let mut points: Vec<f64> = (0..c.steps)
        .map(|i| i as f64 / (c.steps - 1) as f64)
        .chain(c.mc_s.iter().copied())
        .collect();
    points.sort_by(f64::total_cmp);
    points.dedup_by(|x, y| x.total_cmp(y).is_eq());
    for s in points {
        grid.push((s, a.powf(s), b.powf(s), false));
        grid.push((s, a.powf(s), 1.0, true));
    }
    let mc_grid: Vec<_> = c
        .mc_s
        .iter()
        .map(|&s| (s, a.powf(s), b.powf(s), false))
        .collect();
    let (theory, mc) = common::sweep(&grid, &mc_grid, |(s, alpha, beta, only), engine| {
        at(c, s, alpha, beta, only, engine)
    })?;
    let pick = curve;
    let line = |label: &str, color, pts: Vec<(f64, f64, f64, f64)>, dashed: bool| Series {
        label: label.into(),
        points: pts.iter().map(|p| (p.0, p.1)).collect(),
        mark: if dashed { Mark::Dashed } else { Mark::Line },
        color,
    };
    let title = format!(
        "Post-LN to DeepNorm (alpha = {a:.2}, beta = {b:.2}), L = {}",
        c.depth
    );
    for (stem, m, src, y_label) in [
        (
            "eff_depth_vs_alpha",
            Metric::EffDepth,
            None,
            "effective depth (mean path)",
        ),
        (
            "x0_weight_vs_alpha",
            Metric::BranchWeight,
            Some(0),
            "x_0's share of ||x||^2 at layer L",
        ),
        (
            "first_branch_weight_vs_alpha",
            Metric::BranchWeight,
            Some(1),
            "F_1's share of ||x||^2 at layer L",
        ),
        (
            "grad_x0_vs_alpha",
            Metric::GradSq,
            None,
            "mean-square gradient at x_0",
        ),
    ] {
        let mut plot = LinePlot::new(&title, "skip scale alpha", y_label);
        plot.x_log = false;
        plot.y_log = true;
        plot.series.push(line(
            "alpha and beta (Post-LN to DeepNorm)",
            0,
            pick(&theory, m, src, false),
            false,
        ));
        plot.series.push(line(
            "alpha alone (beta = 1)",
            1,
            pick(&theory, m, src, true),
            true,
        ));
        plot.series.push(Series::points(
            "Monte Carlo, 95% CI",
            0,
            &pick(&mc, m, src, false),
        ));
        out.figure(stem, &plot)?;
    }
    out.frame("theory.csv", &mut tagged_frame(&TAGS, theory)?)?;
    out.frame("mc.csv", &mut tagged_frame(&TAGS, mc)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnalysisConfig;

    #[test]
    fn each_curve_has_one_point_per_alpha() {
        let c = Config::quick();
        let (a, b) = constants(c.depth).unwrap();
        let mut rows = Vec::new();
        for i in 0..c.steps {
            let s = i as f64 / (c.steps - 1) as f64;
            rows.extend(at(&c, s, a.powf(s), b.powf(s), false, EngineKind::Theory).unwrap());
        }
        for (m, src) in [
            (Metric::BranchWeight, Some(0)),
            (Metric::BranchWeight, Some(1)),
            (Metric::EffDepth, None),
            (Metric::GradSq, None),
        ] {
            let pts = curve(&rows, m, src, false);
            assert_eq!(pts.len(), c.steps, "{m:?} {src:?}: {pts:?}");
            assert!(pts.windows(2).all(|w| w[0].0 < w[1].0), "{m:?}: {pts:?}");
        }
        // x_0's share of x_L at the Post-LN end is below 1 (its layer-0 share is 1).
        let x0 = curve(&rows, Metric::BranchWeight, Some(0), false);
        assert!(x0[0].1 < 1.0, "{x0:?}");
    }
}
