//! Tidy tables through polars: rows to a `DataFrame`, CSV out (and back in for figures).
//!
//! Floats are written by polars' default shortest round-trip formatter; empty fields are
//! nulls. Rows are sorted by key before writing, so equal inputs give byte-identical files.

use crate::profile::{EngineKind, Row, sort_rows};
use crate::{Error, Result};
use polars::prelude::*;
use std::io::Write;
use std::path::Path;

/// The names of the tidy columns: the only place they are spelled (the `compare` table
/// reuses them for the columns it shares).
pub mod col {
    /// Preset name.
    pub const PRESET: &str = "preset";
    /// `theory` or `mc`.
    pub const ENGINE: &str = "engine";
    /// Depth L.
    pub const DEPTH: &str = "depth";
    /// Layer l.
    pub const LAYER: &str = "layer";
    /// Source j or path length k.
    pub const SOURCE: &str = "source";
    /// Metric name.
    pub const METRIC: &str = "metric";
    /// Value or estimate.
    pub const VALUE: &str = "value";
    /// Standard error.
    pub const STDERR: &str = "stderr";
    /// Lower end of the 95% interval.
    pub const CI_LOW: &str = "ci_low";
    /// Upper end of the 95% interval.
    pub const CI_HIGH: &str = "ci_high";
    /// Number of samples.
    pub const N: &str = "n";
    /// Why there is no value (empty when there is one).
    pub const MISSING: &str = "missing";
}

/// The tidy column names, in order.
pub const COLUMNS: [&str; 12] = [
    col::PRESET,
    col::ENGINE,
    col::DEPTH,
    col::LAYER,
    col::SOURCE,
    col::METRIC,
    col::VALUE,
    col::STDERR,
    col::CI_LOW,
    col::CI_HIGH,
    col::N,
    col::MISSING,
];

/// A named polars column from an iterator of values.
pub fn column<T, I>(name: &str, values: I) -> Column
where
    I: IntoIterator<Item = T>,
    Series: NamedFrom<Vec<T>, [T]>,
{
    Column::new(name.into(), values.into_iter().collect::<Vec<T>>())
}

/// Builds the tidy frame (rows sorted by key).
pub fn frame(mut rows: Vec<Row>) -> Result<DataFrame> {
    sort_rows(&mut rows);
    unsorted_frame(&rows)
}

/// The tidy frame of rows in the order given.
fn unsorted_frame(rows: &[Row]) -> Result<DataFrame> {
    let df = DataFrame::new_infer_height(vec![
        column(col::PRESET, rows.iter().map(|r| r.preset.as_str())),
        column(col::ENGINE, rows.iter().map(|r| r.engine.name())),
        column(col::DEPTH, rows.iter().map(|r| r.depth)),
        column(col::LAYER, rows.iter().map(|r| r.layer)),
        column(col::SOURCE, rows.iter().map(|r| r.source)),
        column(col::METRIC, rows.iter().map(|r| r.metric.name())),
        column(col::VALUE, rows.iter().map(|r| r.finite())),
        column(col::STDERR, rows.iter().map(|r| r.stderr)),
        column(col::CI_LOW, rows.iter().map(|r| r.ci_low)),
        column(col::CI_HIGH, rows.iter().map(|r| r.ci_high)),
        column(col::N, rows.iter().map(|r| r.n)),
        column(col::MISSING, rows.iter().map(|r| r.missing.as_deref())),
    ])?;
    Ok(df)
}

/// Writes a frame as CSV to any writer.
pub fn write_csv(df: &mut DataFrame, w: &mut dyn Write) -> Result<()> {
    // The last guard of "a non-finite number is never written as a result": a value without
    // a number is null (written empty, with its reason where the table has a missing column).
    for col in df.columns() {
        if let Ok(values) = col.f64()
            && let Some(i) = values
                .iter()
                .position(|v| v.is_some_and(|x| !x.is_finite()))
        {
            return Err(Error::Undefined(format!(
                "refusing to write a non-finite number: column '{}', row {} ({})",
                col.name(),
                i + 1,
                values.get(i).unwrap_or(f64::NAN)
            )));
        }
    }
    CsvWriter::new(w).include_header(true).finish(df)?;
    Ok(())
}

/// The CSV bytes of tidy rows, as [`write_rows`] writes them.
pub fn rows_csv(rows: Vec<Row>) -> Result<Vec<u8>> {
    let mut df = frame(rows)?;
    let mut buf = Vec::new();
    write_csv(&mut df, &mut buf)?;
    Ok(buf)
}

/// Writes rows as a tidy CSV file, atomically (an error while writing names the file).
pub fn write_rows(rows: Vec<Row>, path: &Path) -> Result<()> {
    super::atomic::write_bytes(path, &rows_csv(rows)?)
}

/// Reads a CSV written by [`write_rows`] (or any CSV) into a frame.
pub fn read_csv(path: &Path) -> Result<DataFrame> {
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .map_err(Error::Table)?
        .finish()?;
    Ok(df)
}

/// Builds a frame of rows tagged with numeric parameters (e.g. the gain g or the skip scale
/// alpha of a sweep): the `tags` columns first, then the tidy columns. Items are sorted by tags,
/// then by row key.
pub fn tagged_frame(tags: &[&str], mut items: Vec<(Vec<f64>, Row)>) -> Result<DataFrame> {
    items.sort_by(|a, b| {
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.1.key_cmp(&b.1))
    });
    let rows: Vec<Row> = items.iter().map(|i| i.1.clone()).collect();
    let mut cols: Vec<Column> = tags
        .iter()
        .enumerate()
        .map(|(k, t)| column(t, items.iter().map(|i| i.0[k])))
        .collect();
    // Already in order: keep it (frame() would re-sort by row key alone).
    let body = unsorted_frame(&rows)?;
    cols.extend(body.columns().iter().cloned());
    Ok(DataFrame::new_infer_height(cols)?)
}

/// Reads a tidy CSV (optionally with leading numeric `tags` columns, see [`tagged_frame`])
/// back into rows. Unknown metric or engine names are an error naming the file.
pub fn read_tagged(path: &Path, tags: &[&str]) -> Result<Vec<(Vec<f64>, Row)>> {
    let df = read_csv(path)?;
    let bad = |what: String| Error::Undefined(format!("{}: {what}", path.display()));
    let f64s = |name: &str| -> Result<Vec<Option<f64>>> {
        Ok(df
            .column(name)?
            .cast(&DataType::Float64)?
            .f64()?
            .iter()
            .collect())
    };
    let preset: Vec<String> = df
        .column(col::PRESET)?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect();
    let engine: Vec<String> = df
        .column(col::ENGINE)?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect();
    let metric: Vec<String> = df
        .column(col::METRIC)?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect();
    let [depth, layer, source, value, stderr, ci_low, ci_high, n] = [
        col::DEPTH,
        col::LAYER,
        col::SOURCE,
        col::VALUE,
        col::STDERR,
        col::CI_LOW,
        col::CI_HIGH,
        col::N,
    ]
    .map(f64s);
    let (depth, layer, source, value) = (depth?, layer?, source?, value?);
    let (stderr, ci_low, ci_high, n) = (stderr?, ci_low?, ci_high?, n?);
    // An all-empty `missing` column is read as nulls of whatever type polars infers.
    let missing: Vec<Option<String>> = df
        .column(col::MISSING)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|s| s.filter(|s| !s.is_empty()).map(str::to_string))
        .collect();
    let tag_cols: Vec<Vec<Option<f64>>> = tags.iter().map(|t| f64s(t)).collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let m = crate::metrics::Metric::from_name(&metric[i])
            .ok_or_else(|| bad(format!("unknown metric '{}'", metric[i])))?;
        let engine = EngineKind::from_name(&engine[i])
            .ok_or_else(|| bad(format!("unknown engine '{}'", engine[i])))?;
        let int = |v: Option<f64>| v.map(|x| x as u64);
        out.push((
            tag_cols.iter().map(|c| c[i].unwrap_or(f64::NAN)).collect(),
            Row {
                preset: preset[i].clone(),
                engine,
                depth: int(depth[i]).unwrap_or(0),
                layer: int(layer[i]).unwrap_or(0),
                source: int(source[i]),
                metric: m,
                value: value[i].unwrap_or(f64::NAN),
                stderr: stderr[i],
                ci_low: ci_low[i],
                ci_high: ci_high[i],
                n: int(n[i]),
                missing: missing[i].clone(),
            },
        ));
    }
    Ok(out)
}

/// Reads a tidy CSV written by [`write_rows`] back into rows.
pub fn read_rows(path: &Path) -> Result<Vec<Row>> {
    Ok(read_tagged(path, &[])?.into_iter().map(|t| t.1).collect())
}
