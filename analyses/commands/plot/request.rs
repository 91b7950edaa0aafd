//! What `normscope plot` draws ([`Request`]: the table, the columns and flags, the figure),
//! and how its table is read: as Parquet or CSV by its extension, refused naming the file
//! when it does not parse.

use crate::commands::text_table::parse_filters;
use normscope_core::{Error, Result};
use polars::prelude::PolarsError;
use std::path::{Path, PathBuf};

/// What to plot.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::plot::Request;
/// let r = Request::new("t.csv", "layer", "value", "grad.pdf");
/// assert_eq!((r.x.as_str(), r.y.as_str(), r.by, r.log_y), ("layer", "value", None, false));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The table (CSV or Parquet).
    pub path: PathBuf,
    /// `--x`: the column on the x axis.
    pub x: String,
    /// `--y`: the column on the y axis.
    pub y: String,
    /// `--by`: one series per value of this column.
    pub by: Option<String>,
    /// `--facet`: one panel per value of this column.
    pub facet: Option<String>,
    /// `--where column=value` filters.
    pub filters: Vec<(String, String)>,
    /// `--log-x`.
    pub log_x: bool,
    /// `--log-y`.
    pub log_y: bool,
    /// `--title` (default: "y by x").
    pub title: Option<String>,
    /// `--out`: the figure, `.pdf`, `.png` or `.svg`.
    pub out: PathBuf,
}

impl Request {
    /// A request for `y` against `x` of the table at `path`, written to `out`, with no grouping,
    /// filter or log axis.
    pub fn new(path: impl Into<PathBuf>, x: &str, y: &str, out: impl Into<PathBuf>) -> Self {
        Request {
            path: path.into(),
            x: x.into(),
            y: y.into(),
            by: None,
            facet: None,
            filters: Vec::new(),
            log_x: false,
            log_y: false,
            title: None,
            out: out.into(),
        }
    }

    /// The columns named by `--x`, `--y`, `--by` and `--facet`, with their flags.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("--x", Some(&self.x)),
            ("--y", Some(&self.y)),
            ("--by", self.by.as_ref()),
            ("--facet", self.facet.as_ref()),
        ]
        .into_iter()
        .filter_map(|(flag, c)| Some((flag, c?.as_str())))
    }

    /// With `--where` filters.
    pub fn with_filters(mut self, filters: &[&str]) -> Result<Self> {
        self.filters = parse_filters(filters)?;
        Ok(self)
    }
}

/// Whether the table at `path` is read as Parquet (by its extension; else as CSV).
pub(crate) fn is_parquet(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// A table that does not parse, refused as bad input naming the file and what polars found.
pub(crate) fn not_a_table(path: &Path, e: PolarsError) -> Error {
    let kind = if is_parquet(path) {
        "a Parquet table"
    } else {
        "a CSV table with a header row"
    };
    Error::invalid("PATH", path.display(), format!("{kind} (it is not: {e})"))
}
