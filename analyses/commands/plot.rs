//! `normscope plot`: a figure of the user's own table (CSV or Parquet from any command) in the
//! house style of `data/`'s figures ([`normscope_figure::LinePlot`]): one series
//! per value of `--by`, one panel per value of `--facet`, rows chosen by `--where`, log axes
//! on request. A series whose rows carry an interval (`ci_low`/`ci_high` for `value` or
//! `median`, `<y>_ci_low`/`<y>_ci_high`) is drawn as points with their intervals (Monte
//! Carlo); one without, as a line (the closed form). Written atomically as PDF, PNG or SVG by
//! the extension of `--out`.

pub mod bounds;
pub mod labels;
pub mod request;

pub use request::Request;
use request::not_a_table;

use super::text_table::{
    cell, describe, interval_at, interval_of, matching, read_input, require, text_frame,
};
use bounds::Counts;
use normscope_core::metrics::Metric;
use normscope_core::{Error, Result};
use normscope_figure::facets::Facets;
use normscope_figure::{LinePlot, Series, render};
use polars::prelude::DataFrame;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Panels per row of a faceted figure.
pub const FACET_COLUMNS: usize = 2;

/// One point: `(x, y)` and its interval, if the row has one.
type Point = (f64, f64, Option<(f64, f64)>);

/// The series of one panel: each `--by` value with its points.
type Panel = Vec<(String, Vec<Point>)>;

/// A number of column `name` at `row`, refused (naming `field` and the table) if it is not a
/// finite one.
fn number(text: &str, field: &'static str, name: &str, row: usize, path: &Path) -> Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::invalid(
            field,
            name,
            format!(
                "a column of finite numbers (row {} of {} holds '{text}')",
                row + 1,
                path.display()
            ),
        )),
    }
}

/// The table of `req` as text, bounded before it is parsed ([`bounds::check_table`]): a file
/// that does not parse or has no rows is refused naming it.
fn table(path: &Path) -> Result<DataFrame> {
    let bytes = read_input(path)?;
    bounds::check_table(path, &bytes)?;
    let df = text_frame(path, bytes).map_err(|e| match e {
        Error::Table(p) => not_a_table(path, p),
        e => e,
    })?;
    if df.height() == 0 {
        return Err(Error::invalid(
            "PATH",
            path.display(),
            "a table with at least one row (it has a header only)",
        ));
    }
    Ok(df)
}

/// Refuses a column `name` (of `flag`) the table does not have, naming the table and listing
/// its columns.
fn column(df: &DataFrame, flag: &'static str, name: &str, path: &Path) -> Result<()> {
    require(df, name).map_err(|e| {
        Error::invalid(
            flag,
            crate::commands::visible::visible(name),
            format!("a column of {}; {e}", path.display()),
        )
    })
}

/// The panels, series and points `rows` of `df` give under `req`, counted before any is
/// collected; `--by` and `--facet` values that cannot be drawn as text are refused.
fn counts(df: &DataFrame, req: &Request, rows: &[usize]) -> Result<Counts> {
    let mut panels = HashSet::new();
    let mut series = HashSet::new();
    let mut points = 0;
    for &r in rows {
        if cell(df, &req.y, r)?.trim().is_empty() {
            continue;
        }
        points += 1;
        for (flag, c, seen) in [
            ("--facet", &req.facet, &mut panels),
            ("--by", &req.by, &mut series),
        ] {
            let v = match c {
                Some(c) => cell(df, c, r)?,
                None => String::new(),
            };
            if !seen.contains(&v) {
                labels::check_value(flag, &v, r, req)?;
                seen.insert(v);
            }
        }
    }
    Ok(Counts {
        panels: panels.len(),
        series: series.len(),
        points,
    })
}

/// The figure of `req` (not written), with notes on the rows left out.
pub fn figure(req: &Request) -> Result<(Facets, Vec<String>)> {
    labels::check_request(req)?;
    let path = req.path.as_path();
    let df = table(path)?;
    for (flag, c) in req.columns() {
        column(&df, flag, c, path)?;
    }
    for (c, _) in &req.filters {
        column(&df, "--where", c, path)?;
    }
    let rows = matching(&df, &req.filters)?;
    if rows.is_empty() {
        return Err(Error::invalid(
            "--where",
            describe(&req.filters),
            format!(
                "filters that some row of {} meets (none of its {} does)",
                path.display(),
                df.height()
            ),
        ));
    }
    bounds::check_figure(req, counts(&df, req, &rows)?)?;
    let interval = interval_of(&df, &req.y);
    // facet value -> series value -> points, in the order values first appear; the metrics of
    // each facet's rows and each series' legend text.
    let mut facets: Vec<(String, Panel)> = Vec::new();
    let mut facet_at: HashMap<String, usize> = HashMap::new();
    let mut metrics: Vec<Vec<String>> = Vec::new();
    let mut legends: Vec<String> = Vec::new();
    let has = |c: &str| df.column(c).is_ok();
    let mut colors: Vec<String> = Vec::new();
    let mut missing = 0usize;
    for &r in &rows {
        let y_text = cell(&df, &req.y, r)?;
        if y_text.trim().is_empty() {
            missing += 1;
            continue;
        }
        let x = number(&cell(&df, &req.x, r)?, "--x", &req.x, r, path)?;
        let y = number(&y_text, "--y", &req.y, r, path)?;
        let ci = match (interval_at(&df, interval.as_ref(), r)?, &interval) {
            (Some((l, h)), Some((lo, hi))) => Some((
                number(&l, "--y", lo, r, path)?,
                number(&h, "--y", hi, r, path)?,
            )),
            _ => None,
        };
        for (v, flag, on) in [(x, "--log-x", req.log_x), (y, "--log-y", req.log_y)] {
            if on && v <= 0.0 {
                return Err(Error::invalid(
                    flag,
                    v,
                    format!("positive values on a log axis (row {} is not)", r + 1),
                ));
            }
        }
        let f = match &req.facet {
            Some(c) => cell(&df, c, r)?,
            None => String::new(),
        };
        let s = match &req.by {
            Some(c) => cell(&df, c, r)?,
            None => String::new(),
        };
        if !colors.contains(&s) {
            colors.push(s.clone());
            // A preset's legend is its display name (`Pre-LN`) where the table has one; a
            // number is named by its column (`layer = 4`).
            legends.push(match req.by.as_deref() {
                Some("preset") if has("label") => cell(&df, "label", r)?,
                Some(c) if s.trim().parse::<f64>().is_ok() => format!("{c} = {s}"),
                _ => s.clone(),
            });
        }
        let fi = *facet_at.entry(f.clone()).or_insert_with(|| {
            facets.push((f, Vec::new()));
            metrics.push(Vec::new());
            facets.len() - 1
        });
        if has("metric") {
            let m = cell(&df, "metric", r)?;
            if !metrics[fi].contains(&m) {
                metrics[fi].push(m);
            }
        }
        let series = &mut facets[fi].1;
        match series.iter_mut().find(|(v, _)| *v == s) {
            Some((_, pts)) => pts.push((x, y, ci)),
            None => series.push((s, vec![(x, y, ci)])),
        }
    }
    if facets.is_empty() {
        return Err(Error::invalid(
            "--y",
            &req.y,
            format!(
                "a column with values in the rows of {} chosen (every one is missing)",
                path.display()
            ),
        ));
    }
    let mut notes = Vec::new();
    let mut plots = Vec::new();
    for (fi, (f, series)) in facets.iter().enumerate() {
        // `value` of one metric is that metric, by its title.
        let y_label = match metrics[fi].as_slice() {
            [m] if req.y == "value" => {
                Metric::from_name(m).map_or(m.clone(), |m| m.info().title.to_string())
            }
            _ => req.y.clone(),
        };
        let title = match (&req.title, &req.facet) {
            (Some(t), Some(c)) => format!("{t} ({c} = {f})"),
            (Some(t), None) => t.clone(),
            // A panel per metric is titled by the metric alone.
            (None, Some(c)) if c == "metric" => format!("{y_label} by {}", req.x),
            (None, Some(c)) => format!("{y_label} by {} ({c} = {f})", req.x),
            (None, None) => format!("{y_label} by {}", req.x),
        };
        let mut plot = LinePlot::new(&title, &req.x, &y_label);
        plot.x_log = req.log_x;
        plot.y_log = req.log_y;
        // Panels keep one colour per series: no folding of coinciding lines.
        plot.fold = facets.len() == 1;
        for (s, pts) in series {
            let color = colors.iter().position(|c| c == s).unwrap_or(0);
            let mut pts = pts.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if let Some(w) = pts
                .windows(2)
                .find(|w| w[0].0.to_bits() == w[1].0.to_bits())
            {
                let series = if req.by.is_none() {
                    "the one series".to_string()
                } else {
                    format!("series '{s}'")
                };
                return Err(Error::invalid(
                    "--by",
                    req.by.as_deref().unwrap_or("(none)"),
                    format!(
                        "a grouping under which each x appears once per series ({} = {} appears \
                         twice in {series}; add --by, --facet or --where on a column that \
                         tells the rows apart)",
                        req.x, w[0].0
                    ),
                ));
            }
            let label = if req.by.is_some() {
                legends[color].clone()
            } else {
                String::new()
            };
            // Rows with an interval are points with their bars; the others a line.
            let with: Vec<(f64, f64, f64, f64)> = pts
                .iter()
                .filter_map(|&(x, y, ci)| ci.map(|(l, h)| (x, y, l, h)))
                .collect();
            let line: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| p.2.is_none())
                .map(|p| (p.0, p.1))
                .collect();
            let both = !with.is_empty() && !line.is_empty();
            if !with.is_empty() {
                plot.series
                    .push(Series::points(label.clone(), color, &with));
            }
            if !line.is_empty() {
                let label = if both { String::new() } else { label };
                plot.series.push(Series::line(label, color, line));
            }
        }
        labels::check_axes(&plot)?;
        plots.push(plot);
    }
    // The house style draws a log axis over less than two decades linear (round ticks).
    for (on, flag, k) in [(req.log_x, "--log-x", 0), (req.log_y, "--log-y", 1)] {
        if on && plots.iter().any(|p| !axis_log(p, k)) {
            notes.push(format!(
                "{flag}: the values span less than two decades, drawn on a linear axis (its ticks are round)"
            ));
        }
    }
    if missing > 0 {
        notes.push(format!(
            "{missing} row(s) with no {} left out (missing values)",
            req.y
        ));
    }
    Ok((
        Facets {
            plots,
            columns: FACET_COLUMNS,
        },
        notes,
    ))
}

/// Whether the plot's axis `k` (0 = x, 1 = y) is drawn log-scale.
fn axis_log(p: &LinePlot, k: usize) -> bool {
    let m = p.merged();
    if k == 0 { m.x_log } else { m.y_log }
}

/// Draws the figure of `req` and writes it to `--out` atomically; returns notes on the rows
/// left out.
pub fn plot(req: &Request) -> Result<Vec<String>> {
    let ext = req
        .out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let Some(ext) = ext.filter(|e| matches!(e.as_str(), "pdf" | "png" | "svg")) else {
        return Err(Error::invalid(
            "--out",
            req.out.display(),
            "a file ending in .pdf, .png or .svg",
        ));
    };
    crate::runner::sidecar::check_out(&req.out)?;
    let (fig, notes) = figure(req)?;
    let drawn = if fig.plots.len() == 1 {
        render(&fig.plots[0], &req.out)?
    } else {
        render(&fig, &req.out)?
    };
    let bytes = match ext.as_str() {
        "pdf" => drawn.pdf,
        "png" => drawn.png,
        _ => drawn.svg,
    };
    crate::runner::sidecar::emit_with_provenance(Some(&req.out), &bytes)?;
    Ok(notes)
}
