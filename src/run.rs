//! The commands as library functions: the CLI, the analyses and the tests all call these.

use crate::branch::BranchModel;
use crate::config::{ModelConfig, TheoryConfig};
use crate::profile::Row;
use crate::symbolic::{self, Subs};
use crate::theory::MeanField;
use crate::theory::rows::{self, Selection};
use crate::{Error, Result};

/// Refuse tables larger than this many rows (ask for fewer layers or metrics instead).
pub const MAX_ROWS: u128 = 20_000_000;

/// The closed-form table of one stack.
pub fn theory_rows_one(
    name: &str,
    model: &ModelConfig,
    sel: &Selection,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let spec = model.stack(name)?;
    let branch = BranchModel::new(&model.branch, spec.beta, model.inputs.q0, model.inputs.c0);
    let mf = MeanField::run(&spec, &branch, model.inputs)?;
    rows::rows(&spec.preset, &mf, sel, notes)
}

/// The closed-form table of every preset of `cfg`, rows stacked. Notes on skipped metrics go to
/// `notes`.
pub fn theory_rows(cfg: &TheoryConfig, notes: &mut Vec<String>) -> Result<Vec<Row>> {
    let sel = Selection {
        metrics: cfg.metrics.clone(),
        layers: cfg.layers.resolve(cfg.model.depth)?,
        path_len_explicit: cfg.path_len_explicit,
    };
    let estimate = rows::estimate_rows(&sel) * cfg.presets.len() as u128;
    if estimate > MAX_ROWS {
        return Err(Error::invalid(
            "--layers",
            format!("{} layers", sel.layers.len()),
            format!(
                "at most {MAX_ROWS} rows per table; this selection would write up to {estimate} (coef, branch_weight and path_len have O(l) rows per layer): pick fewer layers (e.g. --layers log:20 or last) or metrics"
            ),
        ));
    }
    let mut out = Vec::new();
    for p in &cfg.presets {
        out.extend(theory_rows_one(p, &cfg.model, &sel, notes)?);
    }
    Ok(out)
}

/// Output format of `expand`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpandFormat {
    /// Plain text.
    Text,
    /// A LaTeX `align*` block ready to `\input`.
    Latex,
    /// A tidy CSV: `preset,depth,layer,source,expression,latex,value`.
    Csv,
}

impl ExpandFormat {
    /// Parses `text`, `latex` or `csv`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "text" => Ok(ExpandFormat::Text),
            "latex" | "tex" => Ok(ExpandFormat::Latex),
            "csv" => Ok(ExpandFormat::Csv),
            _ => Err(Error::Unknown {
                kind: "format",
                name: s.to_string(),
                valid: "text, latex, csv".into(),
            }),
        }
    }
}

fn source_name(j: usize, latex: bool) -> String {
    match (j, latex) {
        (0, false) => "x_0".into(),
        (0, true) => "x_0".into(),
        (j, false) => format!("F_{j}"),
        (j, true) => format!("F_{{{j}}}"),
    }
}

/// Largest depth `expand` accepts: it prints one exact coefficient per source, and the exact
/// polynomial algebra of some presets (Pre-Norm with an alpha override) is O(L^2).
pub const MAX_EXPAND_DEPTH: usize = 10_000;

/// Renders the exact expansion of preset `name` in `format`. Notes (e.g. a substituted symbol
/// whose value differs from the configured one) go to `notes`.
pub fn expand(
    name: &str,
    model: &ModelConfig,
    subs: &Subs,
    format: ExpandFormat,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>> {
    if model.depth > MAX_EXPAND_DEPTH {
        return Err(Error::invalid(
            "--depth",
            model.depth,
            format!(
                "at most {MAX_EXPAND_DEPTH} for expand; use `normscope theory --metrics coef --layers last` for numeric coefficients at any depth"
            ),
        ));
    }
    let spec = model.stack(name)?;
    let branch = BranchModel::new(&model.branch, spec.beta, model.inputs.q0, model.inputs.c0);
    let ex = symbolic::expand(&spec, &branch, model.inputs.q0, subs)?;
    let l = ex.depth;
    for s in symbolic::Sym::ALL {
        if let Some(r) = subs.get(s) {
            let v = symbolic::poly::rat_to_f64(r);
            let c = match s {
                symbolic::Sym::G => branch.nominal_gain,
                symbolic::Sym::Q0 => model.inputs.q0,
                _ => v,
            };
            if (v - c).abs() > 1e-12 * c.abs().max(1.0) {
                notes.push(format!(
                    "--subs {}={} differs from the configured {} = {}; values use the substituted one",
                    s.name(),
                    r,
                    s.name(),
                    c
                ));
            }
        }
    }
    let symbols: Vec<String> = ex
        .symbols
        .iter()
        .map(|s| format!("{} = {}", s.name(), ex.values[s.index()]))
        .collect();
    let header = format!(
        "preset {}, depth {l}, branch {} (init {}), final norm {}; B_0 = x_0, F_j = F_j(N_in(x_{{j-1}})) is the raw output of branch j; {}",
        spec.preset,
        model.branch.kind.name(),
        model.branch.init.name(),
        if spec.final_norm.is_norm() {
            "on"
        } else {
            "off"
        },
        if symbols.is_empty() {
            "no free symbols".to_string()
        } else {
            format!("symbols: {}", symbols.join(", "))
        }
    );
    let mut out = String::new();
    match format {
        ExpandFormat::Text => {
            out.push_str(&format!("# {header}\n"));
            let terms: Vec<String> = (0..=l)
                .map(|j| format!("C_{{{l},{j}}} {}", source_name(j, false)))
                .collect();
            out.push_str(&format!("x_{l} = {}\n", terms.join(" + ")));
            for (j, c) in ex.coefs.iter().enumerate() {
                out.push_str(&format!("C_{{{l},{j}}} = {} = {}\n", c.text(), ex.value(j)));
            }
        }
        ExpandFormat::Latex => {
            out.push_str(&format!("% normscope expand: {header}\n"));
            out.push_str("\\begin{align*}\n");
            for (j, c) in ex.coefs.iter().enumerate() {
                let lead = if j == 0 {
                    format!("x_{{{l}}} &= ")
                } else {
                    "&\\quad + ".into()
                };
                let end = if j == l { "" } else { " \\\\" };
                out.push_str(&format!(
                    "{lead}{} \\, {}{end}\n",
                    c.latex(),
                    source_name(j, true)
                ));
            }
            out.push_str("\\end{align*}\n");
        }
        ExpandFormat::Csv => {
            use polars::prelude::*;
            let n = l + 1;
            let mut df = DataFrame::new_infer_height(vec![
                Column::new("preset".into(), vec![spec.preset.as_str(); n]),
                Column::new("depth".into(), vec![l as u64; n]),
                Column::new("layer".into(), vec![l as u64; n]),
                Column::new("source".into(), (0..n as u64).collect::<Vec<_>>()),
                Column::new(
                    "expression".into(),
                    ex.coefs.iter().map(|c| c.text()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "latex".into(),
                    ex.coefs.iter().map(|c| c.latex()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "value".into(),
                    (0..n).map(|j| ex.value(j)).collect::<Vec<_>>(),
                ),
            ])?;
            let mut buf = Vec::new();
            crate::output::table::write_csv(&mut df, &mut buf)?;
            return Ok(buf);
        }
    }
    Ok(out.into_bytes())
}

/// A table of the presets: name, aliases, equation, source.
pub fn presets_text() -> String {
    let mut s = String::from("preset\taliases\tequation\tsource\n");
    for p in crate::placement::REGISTRY {
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            p.name,
            p.aliases.join(","),
            p.equation,
            p.source
        ));
    }
    s
}

/// Seconds after which a run shows its progress bar.
pub const PROGRESS_AFTER: f64 = 2.0;

/// A progress bar that stays hidden for the first [`PROGRESS_AFTER`] seconds and is drawn to
/// stderr only when stderr is a terminal (indicatif's stderr target hides otherwise).
struct DelayedBar {
    bar: indicatif::ProgressBar,
    start: std::time::Instant,
    shown: std::sync::atomic::AtomicBool,
}

impl crate::monte_carlo::Progress for DelayedBar {
    fn tick(&self) {
        use std::sync::atomic::Ordering;
        if !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed().as_secs_f64() > PROGRESS_AFTER
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        self.bar.inc(1);
    }
}

/// Monte Carlo rows of every preset of a request, with a progress bar on long runs.
pub fn mc_rows(
    presets: &[String],
    cfg: &crate::monte_carlo::McConfig,
    metrics: &[crate::metrics::Metric],
    layers: &crate::layers::LayerSpec,
) -> Result<Vec<Row>> {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some((cfg.samples * presets.len()) as u64),
        indicatif::ProgressDrawTarget::hidden(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template("mc [{bar:30}] {pos}/{len} networks, eta {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let progress = DelayedBar {
        bar,
        start: std::time::Instant::now(),
        shown: std::sync::atomic::AtomicBool::new(false),
    };
    let rows = crate::monte_carlo::run(presets, cfg, metrics, layers, &progress);
    progress.bar.finish_and_clear();
    rows
}

/// One row of `normscope compare`: the Monte Carlo row (preset, layer, source, metric,
/// estimate, interval) with the closed form next to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Closed form.
    pub theory: f64,
    /// Monte Carlo estimate and its interval.
    pub mc: Row,
    /// `mc - theory`.
    pub diff: f64,
    /// Finite-width allowance (see [`crate::monte_carlo::allowance`]).
    pub allowance: f64,
    /// Whether the closed form lies in `[ci_low - allowance, ci_high + allowance]`.
    pub agree: bool,
}

/// Runs both engines and compares them where both have a value.
pub fn compare(
    presets: &[String],
    cfg: &crate::monte_carlo::McConfig,
    metrics: &[crate::metrics::Metric],
    layers: &crate::layers::LayerSpec,
) -> Result<Vec<Comparison>> {
    use crate::monte_carlo::McKind;
    if cfg.kind == McKind::Transformer || (cfg.kind == McKind::Attention && !cfg.uniform) {
        return Err(Error::Unsupported(
            "the closed form has no softmax attention (random W_Q, W_K); compare with --uniform or --branch uniform-attention".into(),
        ));
    }
    let sel = Selection {
        metrics: metrics.to_vec(),
        layers: layers.resolve(cfg.model.depth)?,
        path_len_explicit: true,
    };
    let mc = mc_rows(presets, cfg, metrics, layers)?;
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for p in presets {
        let spec = cfg.model.stack(p)?;
        let theory = theory_rows_one(p, &cfg.model, &sel, &mut notes)?;
        let key = |r: &Row| (r.layer, r.source, r.metric);
        let th: std::collections::HashMap<_, f64> =
            theory.iter().map(|r| (key(r), r.value)).collect();
        for r in mc.iter().filter(|r| r.preset == spec.preset) {
            let Some(&t) = th.get(&key(r)) else { continue };
            let m = crate::metrics::Metric::from_name(r.metric).expect("rows carry registry names");
            let a = crate::monte_carlo::allowance::allowance(
                &spec,
                m,
                r.layer as usize,
                t,
                cfg.model.branch.width,
            );
            let (lo, hi) = r.interval();
            out.push(Comparison {
                theory: t,
                mc: r.clone(),
                diff: r.value - t,
                allowance: a,
                agree: t >= lo - a && t <= hi + a,
            });
        }
    }
    Ok(out)
}

/// The `compare` table as CSV bytes:
/// `preset,depth,layer,source,metric,theory,mc,stderr,ci_low,ci_high,n,diff,allowance,agree`.
pub fn compare_csv(rows: &[Comparison]) -> Result<Vec<u8>> {
    use crate::output::table::column;
    use polars::prelude::*;
    let mc = |f: fn(&Row) -> Option<f64>| rows.iter().map(|r| f(&r.mc)).collect::<Vec<_>>();
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", rows.iter().map(|r| r.mc.preset.as_str())),
        column("depth", rows.iter().map(|r| r.mc.depth)),
        column("layer", rows.iter().map(|r| r.mc.layer)),
        column("source", rows.iter().map(|r| r.mc.source)),
        column("metric", rows.iter().map(|r| r.mc.metric)),
        column("theory", rows.iter().map(|r| r.theory)),
        column("mc", rows.iter().map(|r| r.mc.value)),
        Column::new("stderr".into(), mc(|r| r.stderr)),
        Column::new("ci_low".into(), mc(|r| r.ci_low)),
        Column::new("ci_high".into(), mc(|r| r.ci_high)),
        column("n", rows.iter().map(|r| r.mc.n)),
        column("diff", rows.iter().map(|r| r.diff)),
        column("allowance", rows.iter().map(|r| r.allowance)),
        column("agree", rows.iter().map(|r| r.agree)),
    ])?;
    let mut buf = Vec::new();
    crate::output::table::write_csv(&mut df, &mut buf)?;
    Ok(buf)
}
