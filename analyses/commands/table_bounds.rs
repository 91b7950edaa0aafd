//! How large a table `plot` and `cite` may read, checked before it is parsed: its cells
//! (counted in a CSV's bytes, read from a Parquet file's footer) against a fixed maximum, and
//! the memory reading it takes (the file, its cells as text and, for Parquet, a bound on what
//! its column data decode to, [`extent`]) against what this process may use
//! ([`budget::check`]). A refusal is bad input (exit status 2) naming the file.
//!
//! The Parquet bound trusts what the file states about itself: the footer's counts and sizes
//! (Apache Parquet's `ColumnMetaData`) and each dictionary page's header. A negative count or
//! size is refused as a malformed file; a forged file whose data pages claim more than its
//! footer is not caught here.

use normscope_core::{Error, Result, budget};
use polars::prelude::{ParquetReader, PolarsError, SerReader};
use polars_parquet::parquet::compression::{Compression, DecompressionContext, decompress};
use polars_parquet::parquet::schema::types::PhysicalType;
use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
use polars_parquet_format::{PageHeader, PageType};
use std::path::Path;

/// Most cells (rows times columns) of a table `plot` or `cite` reads: about 4.6 times the
/// 3.6 million of `data/training-demo/log.csv`.
pub const MAX_TABLE_CELLS: u64 = 1 << 24;

/// Bytes of one cell of a table read as text, beyond the file's own bytes: a 16-byte string
/// view, its share of the column's buffers and validity, and the text copied once more.
const CELL_BYTES: u128 = 32;

/// What a refusal for size tells the user to change.
const SMALLER: &str = "the table's size (keep the rows and columns you need in a smaller table)";

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

/// What a table holds, read without parsing it ([`extent`]).
///
/// # Examples
///
/// A CSV of a header and one row of two columns: four separators and line ends, so at most
/// five cells, and no decoding beyond its own text.
///
/// ```rust
/// use normscope_analyses::commands::table_bounds::{Extent, extent};
/// let e: Extent = extent(std::path::Path::new("t.csv"), b"layer,value\n1,2\n")?;
/// assert_eq!((e.cells, e.uncompressed), (5, 0));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Rows times columns: for a CSV its separators and line ends plus one (an upper bound: a
    /// quoted comma counts); for Parquet the footer's rows times its schema's columns.
    pub cells: u64,
    /// An upper bound on the bytes the column data decode to (Parquet: [`extent`]'s bound;
    /// CSV: 0, the file is its own text).
    pub uncompressed: u64,
}

/// The [`Extent`] of the table in `bytes` (at `path`, CSV or Parquet by its extension).
///
/// A Parquet table's decoded size is bounded column chunk by column chunk from what the file
/// states, whatever the compression and encoding: a fixed-width column's values times their
/// width; a text (byte-array) column's values times the largest a value can be: its
/// dictionary's longest entry when the chunk is dictionary-encoded (every row may repeat it,
/// and decoding copies it into every row; its dictionary page is read for it), else the
/// chunk's decoded pages; plus a 16-byte view per value. A nested column (list, struct, map) is refused: `plot` and
/// `cite` read flat tables.
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
    let malformed = |why: &str| {
        Error::invalid(
            "PATH",
            path.display(),
            format!("a Parquet table of flat columns ({why})"),
        )
    };
    let mut decoded = 0u64;
    for chunk in meta.row_groups.iter().flat_map(|g| g.parquet_columns()) {
        let d = &chunk.descriptor().descriptor;
        let path_in_schema = &chunk.descriptor().path_in_schema;
        if d.max_rep_level > 0 || path_in_schema.len() > 1 {
            let name = path_in_schema.first().map_or("", |n| n.as_str());
            return Err(malformed(&format!(
                "column {} is nested: a list, struct or map",
                crate::commands::visible::visible(name)
            )));
        }
        let values = u64::try_from(chunk.num_values())
            .map_err(|_| malformed("its footer states a negative count of values"))?;
        let pages = u64::try_from(chunk.uncompressed_size())
            .map_err(|_| malformed("its footer states a negative column size"))?;
        let widest = match d.primitive_type.physical_type {
            PhysicalType::Boolean => 1,
            PhysicalType::Int32 | PhysicalType::Float => 4,
            PhysicalType::Int64 | PhysicalType::Double => 8,
            PhysicalType::Int96 => 12,
            PhysicalType::FixedLenByteArray(n) => n as u64,
            PhysicalType::ByteArray => {
                let first = chunk
                    .dictionary_page_offset()
                    .unwrap_or(chunk.data_page_offset());
                dictionary_widest(path, bytes, first, chunk.compression())?.unwrap_or(pages)
            }
        };
        decoded = decoded.saturating_add(values.saturating_mul(widest.saturating_add(16)));
    }
    Ok(Extent {
        cells: (meta.num_rows as u64).saturating_mul(cols as u64),
        uncompressed: decoded,
    })
}

/// The longest value of the dictionary page at byte `offset` of the file, if a dictionary
/// page of byte arrays starts there: its header (Apache Parquet's `PageHeader`, read with
/// polars' own Thrift types, at most 64 KiB of it), then the page decompressed with the
/// chunk's `codec` (after [`budget::check`] of its stated size) and its PLAIN values (a 4-byte
/// little-endian length, then the bytes) scanned for the longest. Where the values cannot be
/// read, the page's decoded size bounds the longest. `None` if no dictionary page starts at
/// `offset`.
fn dictionary_widest(
    path: &Path,
    bytes: &[u8],
    offset: i64,
    codec: Compression,
) -> Result<Option<u64>> {
    let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else {
        return Ok(None);
    };
    let mut cursor = std::io::Cursor::new(rest);
    let mut protocol = TCompactInputProtocol::new(&mut cursor, 1 << 16);
    let Ok(header) = PageHeader::read_from_in_protocol(&mut protocol) else {
        return Ok(None);
    };
    if header.type_ != PageType::DICTIONARY_PAGE {
        return Ok(None);
    }
    let (Ok(size), Ok(stored)) = (
        usize::try_from(header.uncompressed_page_size),
        usize::try_from(header.compressed_page_size),
    ) else {
        return Ok(None);
    };
    let start = cursor.position() as usize;
    let Some(data) = rest.get(start..start.saturating_add(stored)) else {
        return Ok(Some(size as u64));
    };
    budget::check(
        size as u128,
        &format!("reading a dictionary of {}", path.display()),
        SMALLER,
    )?;
    let page = if codec == Compression::Uncompressed {
        data.to_vec()
    } else {
        let mut out = vec![0u8; size];
        let mut ctx = DecompressionContext::Unset;
        if decompress(codec, data, &mut out, &mut ctx).is_err() {
            return Ok(Some(size as u64));
        }
        out
    };
    let (mut at, mut widest) = (0usize, 0u64);
    while let Some(len) = at.checked_add(4).and_then(|end| page.get(at..end)) {
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        widest = widest.max(len as u64);
        at = at.saturating_add(4).saturating_add(len);
    }
    Ok(Some(if at == page.len() {
        widest
    } else {
        size as u64
    }))
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
    budget::check(need, &format!("reading {}", path.display()), SMALLER)
}
