//! `effective-depth`: eff_depth at the last layer against the depth L (log axis), closed form,
//! for Pre-LN, Post-LN and DeepNorm, from the CSV it writes.
//!
//! Default: linear branch with Xavier init (g = 1, the seeds' setting), q0 = 1, depths
//! log-spaced from 1 to 10^6.

use super::{Analysis, manifest};
use crate::config::{ModelConfig, RawModel};
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::output::figure::{LinePlot, Series};
use crate::output::table;
use crate::run::theory_rows_one;
use crate::theory::rows::Selection;
use crate::{Error, Result};
use polars::prelude::*;
use std::path::Path;

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "effective-depth",
    about: "effective depth (mean Jacobian path length) against L for Pre-LN, Post-LN, DeepNorm",
    run,
};

const PRESETS: [&str; 3] = ["pre", "post", "deepnorm"];
const MAX_DEPTH: usize = 1_000_000;
const DEPTHS: usize = 25;

/// How the papers name each preset in legends.
pub fn legend(preset: &str) -> &str {
    match preset {
        "pre" => "Pre-LN",
        "post" => "Post-LN",
        "deepnorm" => "DeepNorm",
        other => other,
    }
}

fn run(root: &Path) -> Result<()> {
    let id = ANALYSIS.id;
    let depths = LayerSpec::Log(DEPTHS).resolve(MAX_DEPTH)?;
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for &depth in &depths {
        let raw = RawModel {
            depth,
            ..RawModel::default()
        };
        let model: ModelConfig = raw.check()?;
        let sel = Selection {
            metrics: vec![Metric::EffDepth],
            layers: vec![depth],
            path_len_explicit: false,
        };
        for p in PRESETS {
            rows.extend(theory_rows_one(p, &model, &sel, &mut notes)?);
        }
    }
    let csv_rel = format!("data/{id}/theory.csv");
    table::write_rows(rows, &root.join(&csv_rel))?;

    // The figure is drawn from the CSV, as a user would.
    let df = table::read_csv(&root.join(&csv_rel))?;
    let preset = df.column("preset")?.str()?.clone();
    let depth = df.column("depth")?.cast(&DataType::Float64)?;
    let depth = depth.f64()?.clone();
    let value = df.column("value")?.f64()?.clone();
    let mut series = Vec::new();
    for p in PRESETS {
        let mut pts: Vec<(f64, f64)> = (0..df.height())
            .filter(|&i| preset.get(i) == Some(p))
            .filter_map(|i| Some((depth.get(i)?, value.get(i)?)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            return Err(Error::Undefined(format!("{csv_rel} has no rows for {p}")));
        }
        series.push(Series {
            label: legend(p).to_string(),
            points: pts,
        });
    }
    let plot = LinePlot {
        title: "Effective depth at init (closed form, g = 1)".into(),
        x_label: "depth L (residual blocks)".into(),
        y_label: "effective depth (mean path length)".into(),
        y_log: true,
        series,
    };
    let stem = format!("figures/{id}/eff_depth_vs_depth");
    plot.save(&root.join(&stem))?;
    let config = serde_json::json!({
        "engine": "theory",
        "presets": PRESETS,
        "depths": depths,
        "metric": "eff_depth",
        "layers": "last",
        "model": format!("{:?}", RawModel::default()),
    });
    manifest::write(
        root,
        id,
        &config,
        vec![],
        &[csv_rel, format!("{stem}.png"), format!("{stem}.svg")],
    )
}
