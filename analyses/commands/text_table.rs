//! Tables read as text, for `cite` and `plot`: every value as the file stores it (a CSV's
//! characters; a Parquet column cast to text), rows chosen by `--where column=value` filters.

use super::visible::visible;
use normscope_core::input::{DATA_CAP, read};
use normscope_core::{Error, Result};
use polars::prelude::*;
use std::path::Path;

/// The bytes of an input table or figure: a missing path is refused as bad input (`PATH`,
/// exit 2), as is anything but a regular file of at most [`DATA_CAP`] bytes.
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Err(Error::invalid(
            "PATH",
            path.display(),
            "an existing table or figure (no such file)",
        ));
    }
    read(path, "PATH", DATA_CAP)
}

/// The texts of an interval's two columns at `row`, if the table has them and both hold a
/// value there.
pub fn interval_at(
    df: &DataFrame,
    pair: Option<&(String, String)>,
    row: usize,
) -> Result<Option<(String, String)>> {
    let Some((lo, hi)) = pair else {
        return Ok(None);
    };
    let (l, h) = (cell(df, lo, row)?, cell(df, hi, row)?);
    Ok((!l.trim().is_empty() && !h.trim().is_empty()).then_some((l, h)))
}

/// Parses `--where` filters (`column=value`; the value may be empty or contain `=`).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::text_table::parse_filters;
/// let f = parse_filters(&["metric=grad_sq", "note=a=b"])?;
/// assert_eq!(f[1], ("note".to_string(), "a=b".to_string()));
/// assert!(parse_filters(&["=x"]).is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn parse_filters(filters: &[&str]) -> Result<Vec<(String, String)>> {
    filters
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(c, v)| (c.trim().to_string(), v.to_string()))
                .filter(|(c, _)| !c.is_empty())
                .ok_or_else(|| Error::invalid("--where", f, "column=value, e.g. metric=grad_sq"))
        })
        .collect()
}

/// The table's column names.
pub fn column_names(df: &DataFrame) -> Vec<String> {
    df.get_column_names()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Refuses a column the table does not have, listing those it has (with a suggestion); the
/// names, read from the file and the command line, are printed [`visible`].
pub fn require(df: &DataFrame, name: &str) -> Result<()> {
    if df.column(name).is_ok() {
        return Ok(());
    }
    Err(Error::Unknown {
        kind: "column",
        name: visible(name),
        valid: column_names(df)
            .iter()
            .map(visible)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The rows of `df` meeting every filter, in order; a filter on a column the table does not
/// have is refused.
pub fn matching(df: &DataFrame, filters: &[(String, String)]) -> Result<Vec<usize>> {
    for (c, _) in filters {
        require(df, c)?;
    }
    let mut rows = Vec::new();
    for r in 0..df.height() {
        let mut all = true;
        for (c, v) in filters {
            all &= cell(df, c, r)? == *v;
        }
        if all {
            rows.push(r);
        }
    }
    Ok(rows)
}

/// The table as text columns (every value as the file stores it).
pub fn text_frame(path: &Path, bytes: Vec<u8>) -> Result<DataFrame> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let df = match ext.as_str() {
        "csv" => CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
            .into_reader_with_file_handle(std::io::Cursor::new(bytes))
            .finish()?,
        "parquet" => {
            let df = ParquetReader::new(std::io::Cursor::new(bytes)).finish()?;
            let cols = df
                .columns()
                .iter()
                .map(|c| c.cast(&DataType::String))
                .collect::<PolarsResult<Vec<_>>>()?;
            DataFrame::new_infer_height(cols)?
        }
        _ => {
            return Err(Error::invalid(
                "PATH",
                path.display(),
                "a table (.csv, .parquet) or a figure (.pdf, .png, .svg)",
            ));
        }
    };
    Ok(df)
}

/// The text of column `name` at `row` (empty for a null).
pub fn cell(df: &DataFrame, name: &str, row: usize) -> Result<String> {
    let col = df.column(name)?;
    Ok(col.str()?.get(row).unwrap_or_default().to_string())
}

/// The filters as `column=value` words, or `(none)`.
pub fn describe(filters: &[(String, String)]) -> String {
    if filters.is_empty() {
        return "(none)".to_string();
    }
    filters
        .iter()
        .map(|(c, v)| format!("{c}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The columns whose interval is the bare `ci_low`/`ci_high` of their table (its one estimate):
/// `value` (metric tables), `median` (`trained-lens/summary.csv`), `median_over_top`
/// (`encoder-decoder/profile.csv`), `admin_minus_pre_log2_tau` (`stability-law/contrast.csv`)
/// and `mc` (`normscope compare`).
pub const BARE_INTERVAL: [&str; 5] = [
    "value",
    "median",
    "median_over_top",
    "admin_minus_pre_log2_tau",
    "mc",
];

/// The 95% interval columns of `column`, if the table has them: `<c>_ci_low`/`<c>_ci_high`,
/// or `ci_low`/`ci_high` for a table's one estimate ([`BARE_INTERVAL`]); the vocabulary of
/// every table (docs/data.md, "Column vocabulary").
pub fn interval_of(df: &DataFrame, column: &str) -> Option<(String, String)> {
    let has = |c: &str| df.get_column_names().iter().any(|n| n.as_str() == c);
    let mut pairs = vec![(format!("{column}_ci_low"), format!("{column}_ci_high"))];
    if BARE_INTERVAL.contains(&column) {
        pairs.push(("ci_low".into(), "ci_high".into()));
    }
    pairs.into_iter().find(|(l, h)| has(l) && has(h))
}
