//! How large a table `plot` and `cite` may read, checked before it is parsed: its cells
//! (counted in a CSV's bytes, read from a Parquet file's footer) against a fixed maximum, and
//! the memory reading it takes (the file, its cells as text and, for Parquet, the column data
//! its footer says the pages decompress to) against what this process may use
//! ([`budget::check`]). A refusal is bad input (exit status 2) naming the file.
//!
//! The Parquet bound reads the sizes the footer states (`total_uncompressed_size` of every
//! column chunk, Apache Parquet's `ColumnMetaData`); a negative size is refused as a malformed
//! file. The page headers are not walked: a forged file whose pages claim more than its footer
//! passes this check, and polars then bounds each page by its own header.

use normscope_core::{Error, Result, budget};
use polars::prelude::{ParquetReader, PolarsError, SerReader};
use std::path::Path;

/// Most cells (rows times columns) of a table `plot` or `cite` reads: about 4.6 times the
/// 3.6 million of `data/training-demo/log.csv`.
pub const MAX_TABLE_CELLS: u64 = 1 << 24;

/// Bytes of one cell of a table read as text, beyond the file's own bytes: a 16-byte string
/// view, its share of the column's buffers and validity, and the text copied once more.
const CELL_BYTES: u128 = 32;

/// Whether the table at `path` is read as Parquet (by its extension; else as CSV).
pub fn is_parquet(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// A table that does not parse, refused as bad input naming the file and what polars found.
pub fn not_a_table(path: &Path, e: PolarsError) -> Error {
    let kind = if is_parquet(path) {
        "a Parquet table"
    } else {
        "a CSV table with a header row"
    };
    Error::invalid("PATH", path.display(), format!("{kind} (it is not: {e})"))
}

/// What a table holds, read without parsing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Rows times columns: for a CSV its separators and line ends plus one (an upper bound: a
    /// quoted comma counts); for Parquet the footer's rows times its schema's columns.
    pub cells: u64,
    /// The bytes the column data decompress to (Parquet: the sum of the footer's
    /// `total_uncompressed_size`; CSV: 0, the file is its own text).
    pub uncompressed: u64,
}

/// The [`Extent`] of the table in `bytes` (at `path`, CSV or Parquet by its extension).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::table_bounds::{Extent, extent};
/// let e = extent(std::path::Path::new("t.csv"), b"a,b\n1,2\n")?;
/// assert_eq!(e, Extent { cells: 5, uncompressed: 0 });
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn extent(path: &Path, bytes: &[u8]) -> Result<Extent> {
    if !is_parquet(path) {
        let ends = bytes.iter().filter(|&&b| b == b',' || b == b'\n').count();
        return Ok(Extent {
            cells: ends as u64 + 1,
            uncompressed: 0,
        });
    }
    let mut reader = ParquetReader::new(std::io::Cursor::new(bytes));
    let cols = reader.schema().map_err(|e| not_a_table(path, e))?.len();
    let meta = reader.get_metadata().map_err(|e| not_a_table(path, e))?;
    let mut uncompressed = 0u64;
    for chunk in meta.row_groups.iter().flat_map(|g| g.parquet_columns()) {
        let size = u64::try_from(chunk.uncompressed_size()).map_err(|_| {
            Error::invalid(
                "PATH",
                path.display(),
                "a Parquet table (its footer states a negative column size)",
            )
        })?;
        uncompressed = uncompressed.saturating_add(size);
    }
    Ok(Extent {
        cells: (meta.num_rows as u64).saturating_mul(cols as u64),
        uncompressed,
    })
}

/// Refuses a table of more than [`MAX_TABLE_CELLS`] cells, or one that would not fit in memory
/// once read as text, before it is parsed; `purpose` ("to plot", "to cite") ends the
/// message's first clause.
pub fn check(path: &Path, bytes: &[u8], purpose: &str) -> Result<()> {
    let e = extent(path, bytes)?;
    if e.cells > MAX_TABLE_CELLS {
        return Err(Error::invalid(
            "PATH",
            path.display(),
            format!(
                "a table of at most {MAX_TABLE_CELLS} cells (rows times columns) {purpose}; it \
                 has about {}: keep the rows and columns you need in a smaller table",
                e.cells
            ),
        ));
    }
    // The file, its decompressed column data twice (decoded, then cast to text) and its
    // cells as text.
    let need =
        2 * bytes.len() as u128 + 2 * u128::from(e.uncompressed) + CELL_BYTES * u128::from(e.cells);
    budget::check(
        need,
        &format!("reading {}", path.display()),
        "the table's size (keep the rows and columns you need in a smaller table)",
    )
}
