//! Tidy tables through polars: rows to a `DataFrame`, CSV out (and back in for figures).
//!
//! Floats are written by polars' default shortest round-trip formatter; empty fields are
//! nulls. Rows are sorted by key before writing, so equal inputs give byte-identical files.

use crate::profile::{Row, sort_rows};
use crate::{Error, Result};
use polars::prelude::*;
use std::io::Write;
use std::path::Path;

/// The column names, in order.
pub const COLUMNS: [&str; 11] = [
    "preset", "engine", "depth", "layer", "source", "metric", "value", "stderr", "ci_low",
    "ci_high", "n",
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
    let df = DataFrame::new_infer_height(vec![
        column("preset", rows.iter().map(|r| r.preset.as_str())),
        column("engine", rows.iter().map(|r| r.engine)),
        column("depth", rows.iter().map(|r| r.depth)),
        column("layer", rows.iter().map(|r| r.layer)),
        column("source", rows.iter().map(|r| r.source)),
        column("metric", rows.iter().map(|r| r.metric)),
        column("value", rows.iter().map(|r| r.value)),
        column("stderr", rows.iter().map(|r| r.stderr)),
        column("ci_low", rows.iter().map(|r| r.ci_low)),
        column("ci_high", rows.iter().map(|r| r.ci_high)),
        column("n", rows.iter().map(|r| r.n)),
    ])?;
    Ok(df)
}

/// Writes a frame as CSV to any writer.
pub fn write_csv(df: &mut DataFrame, w: &mut dyn Write) -> Result<()> {
    CsvWriter::new(w).include_header(true).finish(df)?;
    Ok(())
}

/// Writes rows as a tidy CSV file, atomically.
pub fn write_rows(rows: Vec<Row>, path: &Path) -> Result<()> {
    let mut df = frame(rows)?;
    super::atomic::write_with(path, |w| write_csv(&mut df, w))
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
