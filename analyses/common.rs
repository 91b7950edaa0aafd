//! What the analyses share: the model and Monte Carlo settings of their configurations, the
//! two engines over many presets and depths, and turning rows into plotted series.

use normscope_core::closed_form::ClosedForm;
use normscope_core::engine::Plan;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::model::RawModel;
use normscope_core::monte_carlo::{McConfig, RawMc};
use normscope_core::placement::Preset;
use normscope_core::profile::EngineKind;
use normscope_core::profile::Row;
use normscope_core::spec::NormKind;
use normscope_core::tables::{self, mc_rows};
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, MC_COLOR, Series};
use serde::{Deserialize, Serialize};

/// The network of an analysis (both engines).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::common::{Mc, Model};
/// let m = Model::seeds();
/// assert_eq!((m.branch.as_str(), m.init.as_str()), ("linear", "xavier"));
/// // A linear branch with Xavier init has gain g = 1.
/// assert_eq!(m.gain(&Mc::full())?, 1.0);
/// assert_eq!(m.setting(&Mc::full())?, "linear branch, g = 1");
/// let raw = m.raw(8, &Mc::quick());
/// assert_eq!((raw.depth, raw.width, raw.tokens), (8, 32, 8));
/// assert_eq!(Model::relu_mlp().init, "he");
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Branch F (`normscope theory --help` lists them; Monte Carlo also `attention`).
    pub branch: String,
    /// Init scheme.
    pub init: String,
    /// `layer`, `rms` or `identity`.
    pub norm: NormKind,
}

impl Model {
    /// A model from its three names (checked later, by [`check`]).
    pub fn new(branch: &str, init: &str, norm: NormKind) -> Self {
        Model {
            branch: branch.into(),
            init: init.into(),
            norm,
        }
    }

    /// The seeds' setting: a linear branch with Xavier init (g = 1) and LayerNorm.
    pub fn seeds() -> Self {
        Model::new("linear", "xavier", NormKind::Layer)
    }

    /// A ReLU MLP (hidden 4d, He init) with LayerNorm.
    pub fn relu_mlp() -> Self {
        Model::new("relu-mlp", "he", NormKind::Layer)
    }

    /// The branch gain g of this model (`E||F(u)||^2 / ||u||^2` at unit input), as the closed
    /// form derives it from the branch and init.
    pub fn gain(&self, mc: &Mc) -> Result<f64> {
        let m = self.raw(1, mc).check()?;
        let b = normscope_core::branch::BranchModel::new(&m.branch, None, m.inputs.q0, m.inputs.c0);
        Ok(b.nominal_gain)
    }

    /// The setting for titles, e.g. `linear branch, g = 1` (g to four decimals).
    pub fn setting(&self, mc: &Mc) -> Result<String> {
        Ok(format!(
            "{} branch, g = {}",
            self.branch,
            short(self.gain(mc)?)
        ))
    }

    /// The raw model at depth `depth` with Monte Carlo width and tokens from `mc`.
    pub fn raw(&self, depth: usize, mc: &Mc) -> RawModel {
        RawModel {
            depth,
            branch: self.branch.clone(),
            init: self.init.clone(),
            norm: self.norm,
            width: mc.width,
            tokens: mc.tokens,
            ..RawModel::default()
        }
    }
}

/// Monte Carlo settings of an analysis.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::common::Mc;
/// let full = Mc::full();
/// assert_eq!((full.width, full.tokens, full.samples, full.seed), (128, 16, 32, 0));
/// let quick = Mc::quick();
/// assert_eq!((quick.width, quick.tokens, quick.samples), (32, 8, 8));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mc {
    /// Width d.
    pub width: usize,
    /// Tokens n per network.
    pub tokens: usize,
    /// Independent networks S per point.
    pub samples: usize,
    /// Base seed.
    #[serde(with = "crate::seed")]
    pub seed: u64,
}

impl Mc {
    /// Full-run defaults: d = 128, n = 16, S = 32.
    pub fn full() -> Self {
        Mc {
            width: 128,
            tokens: 16,
            samples: 32,
            seed: 0,
        }
    }

    /// `--quick` defaults: d = 32, n = 8, S = 8.
    pub fn quick() -> Self {
        Mc {
            width: 32,
            tokens: 8,
            samples: 8,
            seed: 0,
        }
    }

    fn raw(&self) -> RawMc {
        RawMc {
            samples: self.samples,
            seed: self.seed,
            ..RawMc::default()
        }
    }
}

/// Checks a list of depths: non-empty, each >= 1.
pub(crate) fn check_depths(field: &'static str, depths: &[usize]) -> Result<()> {
    if depths.is_empty() || depths.contains(&0) {
        return Err(Error::invalid(
            field,
            format!("{depths:?}"),
            "a non-empty list of integers >= 1",
        ));
    }
    Ok(())
}

/// Checks presets, model and Monte Carlo settings by building the Monte Carlo configuration of
/// every preset at `depth` (this also validates the closed-form model), and that a network and
/// a closed form of that depth fit in memory ([`normscope_core::budget`]).
pub fn check(presets: &[&'static Preset], model: &Model, mc: &Mc, depth: usize) -> Result<()> {
    if presets.is_empty() {
        return Err(Error::invalid(
            "presets",
            "[]",
            "a non-empty list of presets",
        ));
    }
    let cfg = mc_config(&model.raw(depth.max(1), mc), mc)?;
    for p in presets {
        cfg.model.stack(p)?;
    }
    // A network of this depth must fit (its tables are checked when the run knows them).
    normscope_core::monte_carlo::size::check_mc(&cfg, depth.max(1), Metric::ALL, 0)?;
    normscope_core::budget::check_closed_form(depth)
}

/// The Monte Carlo configuration of `raw` with the settings of `mc`.
pub(crate) fn mc_config(raw: &RawModel, mc: &Mc) -> Result<McConfig> {
    McConfig::new(raw, &mc.raw())
}

/// Presets by canonical name (built in, or loaded by the analysis's
/// [`crate::AnalysisConfig::setup`]): an analysis's defaults, resolved once when its
/// configuration is made (a configuration file's names resolve when it is read, through
/// `&'static Preset`'s `Deserialize`).
///
/// # Panics
///
/// If a name does not resolve: the defaults are the code's own.
///
/// # Examples
///
/// ```rust
/// let p = normscope_analyses::common::presets(&["pre", "post"]);
/// assert_eq!((p[0].name, p[1].label), ("pre", "Post-LN"));
/// ```
pub fn presets(names: &[&str]) -> Vec<&'static Preset> {
    names
        .iter()
        .map(|n| normscope_core::placement::find(n).expect("an analysis's default presets resolve"))
        .collect()
}

/// The presets' canonical names, comma separated (as a configuration's error shows them).
///
/// ```rust
/// use normscope_analyses::common::{names, presets};
/// assert_eq!(names(&presets(&["pre", "post-ln"])), "pre,post");
/// ```
pub fn names(presets: &[&Preset]) -> String {
    presets.iter().map(|p| p.name).collect::<Vec<_>>().join(",")
}

/// The typeset name of a branch (`ReLU MLP`), or the name escaped for LaTeX if unknown.
pub(crate) fn branch_label(name: &str) -> String {
    normscope_core::branch::BranchKind::parse(name).map_or_else(
        |_| normscope_core::output::latex::escape(name),
        |k| k.label().into(),
    )
}

/// The typeset name of an init scheme (`He`), or the name escaped for LaTeX if unknown.
pub(crate) fn init_label(name: &str) -> String {
    normscope_core::branch::Init::parse(name).map_or_else(
        |_| normscope_core::output::latex::escape(name),
        |i| i.label().into(),
    )
}

/// A preset's paper name (`Post-LN`) as LaTeX text (`%`, `&`, `_`, `#` escaped: a placement
/// file's label may hold them).
pub(crate) fn tex_label(preset: &Preset) -> String {
    normscope_core::output::latex::escape(preset.label)
}

/// Closed-form rows of `presets` at depth `raw.depth`, for `metrics` at `layers`.
pub fn theory(
    presets: &[&'static Preset],
    raw: &RawModel,
    metrics: &[Metric],
    layers: &LayerSpec,
) -> Result<Vec<Row>> {
    let model = raw.check()?;
    let plan = Plan::new(metrics, layers.clone());
    let mut notes = Vec::new();
    let rows = tables::rows(&ClosedForm::new(&model), &model, presets, &plan, &mut notes);
    print_notes(notes);
    rows
}

/// Prints an analysis's notes (missing values, skipped metrics) under its progress line.
fn print_notes(notes: Vec<String>) {
    for n in notes {
        normscope_core::output::console::note(format_args!("      note: {n}"));
    }
}

/// Monte Carlo rows of `presets` (95% CIs over `mc.samples` networks).
pub fn monte_carlo(
    presets: &[&'static Preset],
    raw: &RawModel,
    mc: &Mc,
    metrics: &[Metric],
    layers: &LayerSpec,
) -> Result<Vec<Row>> {
    let mut notes = Vec::new();
    let rows = mc_rows(presets, &mc_config(raw, mc)?, metrics, layers, &mut notes);
    print_notes(notes);
    rows
}

/// Rows of `presets` from `engine`.
pub fn rows(
    engine: EngineKind,
    presets: &[&'static Preset],
    raw: &RawModel,
    mc: &Mc,
    metrics: &[Metric],
    layers: &LayerSpec,
) -> Result<Vec<Row>> {
    match engine {
        EngineKind::Theory => theory(presets, raw, metrics, layers),
        EngineKind::Mc => monte_carlo(presets, raw, mc, metrics, layers),
        EngineKind::McF32 => Err(Error::Unsupported(
            "analyses run the Monte Carlo engine in f64 (the precision of data/)".into(),
        )),
        EngineKind::TheoryFiniteWidth => Err(Error::Unsupported(
            "analyses run the closed form uncorrected; the finite-width correction is applied by theory/compare --finite-width".into(),
        )),
    }
}

/// Rows tagged with the sweep parameters that made them (see
/// [`normscope_core::output::table::tagged_frame`]).
pub(crate) type Tagged = Vec<(Vec<f64>, Row)>;

/// A parameter sweep through both engines: `at(point, engine)` gives one point's tagged rows;
/// the closed form runs at every point of `theory_points`, Monte Carlo at every point of
/// `mc_points` (usually a coarser grid). Returns `(theory rows, Monte Carlo rows)`.
pub fn sweep<P: Copy>(
    theory_points: &[P],
    mc_points: &[P],
    at: impl Fn(P, EngineKind) -> Result<Tagged>,
) -> Result<(Tagged, Tagged)> {
    let mut theory = Vec::new();
    for &p in theory_points {
        theory.extend(at(p, EngineKind::Theory)?);
    }
    let mut mc = Vec::new();
    for &p in mc_points {
        mc.extend(at(p, EngineKind::Mc)?);
    }
    Ok((theory, mc))
}

/// Rows at the last layer of each depth in `depths`.
pub(crate) fn vs_depth(
    engine: EngineKind,
    presets: &[&'static Preset],
    model: &Model,
    mc: &Mc,
    depths: &[usize],
    metrics: &[Metric],
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for &d in depths {
        let raw = model.raw(d, mc);
        out.extend(rows(engine, presets, &raw, mc, metrics, &LayerSpec::Last)?);
    }
    Ok(out)
}

/// One metric at the last layer against the depth L: closed form over `depths`, Monte Carlo
/// over `mc_depths` for `mc_presets`, and the log-log figure of both.
pub(crate) struct DepthSweep<'a> {
    /// Presets of the closed form (and the legend, in colour order).
    pub presets: &'a [&'static Preset],
    /// Presets measured by Monte Carlo (a subset of `presets`).
    pub mc_presets: &'a [&'static Preset],
    /// The network.
    pub model: &'a Model,
    /// Monte Carlo settings.
    pub mc: &'a Mc,
    /// Closed-form depths.
    pub depths: Vec<usize>,
    /// Monte Carlo depths.
    pub mc_depths: &'a [usize],
}

impl DepthSweep<'_> {
    /// Runs both engines for `metric` and draws them: `(theory rows, mc rows, figure)`.
    pub fn run(
        &self,
        metric: Metric,
        title: &str,
        y_label: &str,
    ) -> Result<(Vec<Row>, Vec<Row>, LinePlot)> {
        let m = [metric];
        let theory = vs_depth(
            EngineKind::Theory,
            self.presets,
            self.model,
            self.mc,
            &self.depths,
            &m,
        )?;
        let mc = vs_depth(
            EngineKind::Mc,
            self.mc_presets,
            self.model,
            self.mc,
            self.mc_depths,
            &m,
        )?;
        let mut plot = LinePlot::new(title, "depth L (residual blocks)", y_label);
        plot.y_log = true;
        // Monte Carlo deeper than wide: the infinite-width closed form leaves out a deviation
        // that grows like L/d; the shade marks where it is of order one, past the range
        // L/d <= 1 the `finite-width` analysis fits its law on.
        let d = self.mc.width;
        if self.mc_depths.iter().any(|&l| l > d) {
            plot.shade_from = Some(d as f64);
            plot.x_label = format!("depth L (blocks; shaded: L > d = {d})");
        }
        add_both(
            &mut plot,
            self.presets,
            &theory,
            &mc,
            metric,
            by_depth,
            |_| true,
        );
        Ok((theory, mc, plot))
    }
}

/// A row, or a row tagged with sweep parameters (see [`normscope_core::output::table::tagged_frame`]).
///
/// # Examples
///
/// [`points`] plots either kind: plain rows against their depth, rows tagged with a swept gain
/// g against the tag (an exact row's interval is its value).
///
/// ```rust
/// use normscope_analyses::common::{points, AsRow};
/// use normscope_core::metrics::Metric;
/// use normscope_core::profile::{EngineKind, Profile, Row, Setup, Value};
/// let row = |depth: usize, v: f64| -> Row {
///     let mut p = Profile::new(EngineKind::Theory, "post", depth, Setup::default());
///     p.values.insert((Metric::StreamSq, depth, None), Value::Exact(v));
///     p.rows().remove(0)
/// };
/// let plain = [row(8, 7.0), row(2, 3.0)];
/// let by_depth = points(&plain, "post", Metric::StreamSq, |r| r.depth as f64, |_| true);
/// assert_eq!(by_depth, [(2.0, 3.0, 3.0, 3.0), (8.0, 7.0, 7.0, 7.0)]);
/// let tagged = [(vec![0.5], row(4, 5.0)), (vec![0.25], row(4, 9.0))];
/// assert_eq!(tagged[1].row().value, 9.0);
/// let by_gain = points(&tagged, "post", Metric::StreamSq, |t| t.0[0], |_| true);
/// assert_eq!(by_gain, [(0.25, 9.0, 9.0, 9.0), (0.5, 5.0, 5.0, 5.0)]);
/// ```
pub trait AsRow {
    /// The row.
    fn row(&self) -> &Row;
}

impl AsRow for Row {
    fn row(&self) -> &Row {
        self
    }
}

impl AsRow for (Vec<f64>, Row) {
    fn row(&self) -> &Row {
        &self.1
    }
}

/// `(x, value, ci_low, ci_high)` of the rows of `preset` and `metric` that pass `keep`, sorted
/// by x. Exact rows have a zero-width interval.
pub fn points<T: AsRow>(
    items: &[T],
    preset: &str,
    metric: Metric,
    x: impl Fn(&T) -> f64,
    keep: impl Fn(&Row) -> bool,
) -> Vec<(f64, f64, f64, f64)> {
    let mut v: Vec<_> = items
        .iter()
        .filter(|t| {
            let r = t.row();
            r.preset == preset && r.metric == metric && r.missing.is_none() && keep(r)
        })
        .map(|t| {
            let r = t.row();
            {
                let (lo, hi) = r.interval();
                (x(t), r.value, lo, hi)
            }
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The row with key (preset, metric, depth, layer, source), if present and not missing (a
/// missing row has no value to plot or compare; [`find_any`] returns it too).
pub fn find<'a>(
    rows: &'a [Row],
    preset: &str,
    metric: Metric,
    depth: u64,
    layer: u64,
    source: Option<u64>,
) -> Option<&'a Row> {
    find_any(rows, preset, metric, depth, layer, source).filter(|r| r.missing.is_none())
}

/// The row with key (preset, metric, depth, layer, source), if present, missing or not.
pub fn find_any<'a>(
    rows: &'a [Row],
    preset: &str,
    metric: Metric,
    depth: u64,
    layer: u64,
    source: Option<u64>,
) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.preset == preset
            && r.metric == metric
            && r.depth == depth
            && r.layer == layer
            && r.source == source
    })
}

/// The value of the row with that key, if present.
pub fn value(
    rows: &[Row],
    preset: &str,
    metric: Metric,
    depth: usize,
    layer: usize,
    source: Option<u64>,
) -> Option<f64> {
    find(rows, preset, metric, depth as u64, layer as u64, source).map(|r| r.value)
}

/// First block's over last block's mean-square weight gradient (`weight_grad_sq` at layers 1
/// and L) of `preset` at depth L, if both rows are present.
pub(crate) fn weight_grad_ratio(rows: &[Row], preset: &str, depth: usize) -> Option<f64> {
    let w = Metric::WeightGradSq;
    Some(value(rows, preset, w, depth, 1, None)? / value(rows, preset, w, depth, depth, None)?)
}

/// The x of a row: its depth L.
pub(crate) fn by_depth<T: AsRow>(t: &T) -> f64 {
    t.row().depth as f64
}

/// The x of a row: its layer l.
pub(crate) fn by_layer<T: AsRow>(t: &T) -> f64 {
    t.row().layer as f64
}

/// The x of a tagged row: its first tag (the swept parameter).
pub(crate) fn by_tag(t: &(Vec<f64>, Row)) -> f64 {
    t.0[0]
}

/// Adds, for each preset, the closed form as a line and the Monte Carlo estimates as points
/// with 95% CI bars in the same colour, plus one legend entry for the points.
pub(crate) fn add_both<T: AsRow>(
    plot: &mut LinePlot,
    presets: &[&'static Preset],
    theory: &[T],
    mc: &[T],
    metric: Metric,
    x: impl Fn(&T) -> f64 + Copy,
    keep: impl Fn(&Row) -> bool + Copy,
) {
    let mut any_mc = false;
    for (i, p) in presets.iter().enumerate() {
        let th = points(theory, p.name, metric, x, keep);
        plot.series.push(Series::line(
            p.label,
            i,
            th.iter().map(|q| (q.0, q.1)).collect(),
        ));
        let m = points(mc, p.name, metric, x, keep);
        any_mc |= !m.is_empty();
        plot.series.push(Series::points("", i, &m));
    }
    if any_mc {
        plot.series
            .push(Series::points("Monte Carlo, 95% CI", MC_COLOR, &[]));
    }
}

/// A metric's name in words for a figure title (the code name is in the file name).
pub fn title(m: Metric) -> &'static str {
    m.info().title
}

/// Log-spaced integers from 1 to `max` (`count` of them, deduplicated).
pub fn log_depths(max: usize, count: usize) -> Vec<usize> {
    LayerSpec::Log(count)
        .resolve(max)
        .unwrap_or_default()
        .into_iter()
        .filter(|&d| d >= 1)
        .collect()
}

/// The closed form's depths of an analysis that also runs Monte Carlo: log-spaced integers from
/// 1 to `max` ([`log_depths`]) and every Monte Carlo depth, so that the tables compare the two
/// engines at equal L without interpolation. Sorted, without repeats.
pub(crate) fn depth_grid(max: usize, count: usize, mc_depths: &[usize]) -> Vec<usize> {
    let mut d = log_depths(max, count);
    d.extend_from_slice(mc_depths);
    d.sort_unstable();
    d.dedup();
    d
}

/// A number for titles and captions: at most four decimals, no trailing zeros (`1`, `0.32`).
pub fn short(v: f64) -> String {
    format!("{}", (v * 1e4).round() / 1e4)
}

/// The largest of some depths (0 if none).
pub(crate) fn deepest(depths: &[usize]) -> usize {
    depths.iter().copied().max().unwrap_or(0)
}

/// How a figure's title names the intervals of medians over `seeds` values: `exact 95% CI`,
/// or `too few for an exact 95% CI` when `seeds` cannot bound a median at that level (fewer
/// than 6: [`normscope_core::stats::median_ci::rank`] 0), where [`drawn`] draws the medians
/// alone.
pub(crate) fn ci_note(seeds: u64) -> &'static str {
    use normscope_core::stats::{LEVEL, median_ci::rank};
    if rank(seeds, LEVEL).0 == 0 {
        "too few for an exact 95% CI"
    } else {
        "exact 95% CI"
    }
}

/// A point `(x, median, lo, hi)` of a median over `n` values as a figure draws it: when `n`
/// values cannot bound a median at 95% ([`normscope_core::stats::median_ci::rank`] 0: fewer
/// than 6, and the interval is the whole line) the ends collapse to the median, so the median
/// is drawn alone instead of the point being dropped. Otherwise the point is unchanged (an
/// end left unbounded by censored or unknown values is the callers' to drop, as before).
pub(crate) fn drawn(p: (f64, f64, f64, f64), n: usize) -> (f64, f64, f64, f64) {
    use normscope_core::stats::{LEVEL, median_ci::rank};
    if rank(n as u64, LEVEL).0 == 0 {
        (p.0, p.1, p.1, p.1)
    } else {
        p
    }
}

#[cfg(test)]
mod tests {
    use super::{ci_note, drawn};

    /// Five values cannot bound a median at 95% (2 x 0.5^5 = 0.0625 > 0.05), six can
    /// (0.03125): the point collapses to its median at five and is kept whole at six, and the
    /// title's note follows the same boundary.
    #[test]
    fn a_median_collapses_below_six_values_only() {
        let p = (3.0, 1.0, f64::NEG_INFINITY, f64::INFINITY);
        assert_eq!(drawn(p, 5), (3.0, 1.0, 1.0, 1.0));
        assert_eq!(drawn(p, 0), (3.0, 1.0, 1.0, 1.0));
        let q = (3.0, 1.0, 0.5, 2.0);
        assert_eq!(drawn(q, 6), q);
        assert_eq!(
            drawn(p, 6),
            p,
            "an unbounded end at n >= 6 is the caller's to drop"
        );
        assert_eq!(ci_note(5), "too few for an exact 95% CI");
        assert_eq!(ci_note(6), "exact 95% CI");
    }
}
