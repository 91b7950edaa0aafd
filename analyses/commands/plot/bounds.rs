//! How large a `normscope plot` may be, checked before anything large is allocated: the
//! table's cells before it is parsed (counted in the CSV's bytes, read from the Parquet
//! footer), and the figure's panels, series and points before it is drawn, each against a
//! fixed maximum and against the memory this process may use ([`budget::check`]). A refusal
//! is bad input (exit status 2) naming the file and the flag to change.

use super::request::Request;
use crate::commands::text_table::describe;
use normscope_core::{Error, Result, budget};
use normscope_figure::{PALETTE, SIZE};
use std::path::Path;

/// Most panels of a figure (`--facet` values): 12 rows of two, a figure about 30 in tall.
pub const MAX_PANELS: usize = 24;

/// Most series of a panel (`--by` values): one per colour of the palette but the last, the
/// grey of Monte Carlo's reference marks.
pub const MAX_SERIES: usize = PALETTE.len() - 1;

/// Most points of a figure, all panels together (the largest table `reproduce` writes,
/// `data/training-demo/log.csv`, has about 80,000 rows).
pub const MAX_POINTS: usize = 200_000;

pub use crate::commands::table_bounds::MAX_TABLE_CELLS;

/// Bytes one point costs while a figure is drawn, in its three formats at once: its marks as
/// SVG text, as the SVG tree the PDF is converted from, and in the PDF.
const POINT_BYTES: u128 = 4096;

/// Bytes one panel costs beyond its points: its pixels (3 bytes each) in the raster, in the
/// PNG encoder and in the SVG tree's rendering, and its axes and texts.
const PANEL_BYTES: u128 = 4 * 3 * SIZE.0 as u128 * SIZE.1 as u128;

/// The file as the messages name it.
fn file(path: &Path) -> String {
    path.display().to_string()
}

/// Refuses a table too large to plot ([`crate::commands::table_bounds::check`]).
pub(super) fn check_table(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::commands::table_bounds::check(path, bytes, "to plot")
}

/// The memory drawing a figure of `panels` panels and `points` points takes, in bytes (an
/// upper bound: every format is drawn, and the text boxes checked once more).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::plot::bounds::figure_bytes;
/// assert!(figure_bytes(1, 100) < figure_bytes(2, 100));
/// assert!(figure_bytes(1, 100) < figure_bytes(1, 101));
/// assert!(figure_bytes(24, 200_000) < 2_000_000_000);
/// ```
pub fn figure_bytes(panels: usize, points: usize) -> u128 {
    PANEL_BYTES * panels as u128 + POINT_BYTES * points as u128
}

/// How many panels, series and points a request draws (series are counted over the whole
/// figure: every panel keeps one colour per series).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Panels: the `--facet` values (1 without it).
    pub panels: usize,
    /// Series: the `--by` values (1 without it).
    pub series: usize,
    /// Points: the rows chosen with a y value.
    pub points: usize,
}

/// Refuses a figure of more than [`MAX_PANELS`] panels, [`MAX_SERIES`] series or
/// [`MAX_POINTS`] points, or one that would not fit in memory ([`figure_bytes`]), naming the
/// flag that lowers it (`--facet`, `--by`, `--where`) and the table.
pub(super) fn check_figure(req: &Request, n: Counts) -> Result<()> {
    let path = &req.path;
    let grouping =
        |flag: &'static str, column: &Option<String>, count: usize, most: usize, each: &str| {
            Error::invalid(
                flag,
                column.as_deref().unwrap_or_default(),
                format!(
                    "a column with at most {most} values in the rows of {} chosen (it has {count}, \
                 one {each} each; add --where)",
                    file(path)
                ),
            )
        };
    if n.panels > MAX_PANELS {
        return Err(grouping(
            "--facet", &req.facet, n.panels, MAX_PANELS, "panel",
        ));
    }
    if n.series > MAX_SERIES {
        return Err(grouping("--by", &req.by, n.series, MAX_SERIES, "series"));
    }
    if n.points > MAX_POINTS {
        return Err(Error::invalid(
            "--where",
            describe(&req.filters),
            format!(
                "filters leaving at most {MAX_POINTS} points of {} to draw (they leave {})",
                file(path),
                n.points
            ),
        ));
    }
    budget::check(
        figure_bytes(n.panels, n.points),
        &format!("the figure of {}", file(path)),
        "the panels and points drawn (--facet, --where)",
    )
}
