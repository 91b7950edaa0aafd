//! What `normscope plot` draws ([`Request`]: the table, the columns and flags, the figure).
//! How its table is read (as Parquet or CSV by its extension, refused naming the file when
//! it does not parse) is [`crate::commands::table_bounds`]'s.

use crate::commands::text_table::parse_filters;
use normscope_core::Result;
use std::path::PathBuf;

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

pub(crate) use crate::commands::table_bounds::not_a_table;
