//! Tidy tables through polars: rows to a `DataFrame`, CSV out (and back in for figures).
//!
//! Floats are written by polars' default shortest round-trip formatter; empty fields are
//! nulls. Rows are sorted by key before writing, so equal inputs give byte-identical files.

use crate::profile::{EngineKind, ModelSettings, Row, Setup, sort_rows};
use crate::{Error, Result};
use polars::prelude::*;
use std::io::Write;
use std::path::Path;

/// The names of the tidy columns: the only place they are spelled (the `compare` table
/// reuses them for the columns it shares).
pub mod col {
    /// Preset name.
    pub const PRESET: &str = "preset";
    /// The preset's name in papers.
    pub(crate) const LABEL: &str = "label";
    /// `theory` or `mc`.
    pub const ENGINE: &str = "engine";
    /// Branch F.
    pub(crate) const BRANCH: &str = "branch";
    /// Init scheme.
    pub(crate) const INIT: &str = "init";
    /// Branch gain g.
    pub const G: &str = "g";
    /// Norm kind.
    pub(crate) const NORM: &str = "norm";
    /// Width d.
    pub(crate) const WIDTH: &str = "width";
    /// Tokens n.
    pub(crate) const TOKENS: &str = "tokens";
    /// Networks S.
    pub(crate) const SAMPLES: &str = "samples";
    /// Base seed.
    pub(crate) const SEED: &str = "seed";
    /// MLP hidden width / d.
    pub(crate) const HIDDEN_RATIO: &str = "hidden_ratio";
    /// Attention heads.
    pub(crate) const HEADS: &str = "heads";
    /// Skip scale alpha (override).
    pub(crate) const ALPHA: &str = "alpha";
    /// DeepNet's beta (override).
    pub(crate) const BETA: &str = "beta";
    /// Branch multiplier lambda (override).
    pub(crate) const LAMBDA: &str = "lambda";
    /// Final norm forced on or off (override).
    pub(crate) const FINAL_NORM: &str = "final_norm";
    /// Input second moment q0.
    pub(crate) const Q0: &str = "q0";
    /// Input correlation c0.
    pub(crate) const C0: &str = "c0";
    /// Norm epsilon.
    pub(crate) const EPS: &str = "eps";
    /// Exact path polynomial up to this depth (Monte Carlo).
    pub(crate) const PATH_MAX: &str = "path_max";
    /// Depth L.
    pub const DEPTH: &str = "depth";
    /// Layer l.
    pub(crate) const LAYER: &str = "layer";
    /// Source j or path length k.
    pub(crate) const SOURCE: &str = "source";
    /// Metric name.
    pub(crate) const METRIC: &str = "metric";
    /// Value or estimate.
    pub(crate) const VALUE: &str = "value";
    /// Standard error.
    pub(crate) const STDERR: &str = "stderr";
    /// Lower end of the 95% interval.
    pub(crate) const CI_LOW: &str = "ci_low";
    /// Upper end of the 95% interval.
    pub(crate) const CI_HIGH: &str = "ci_high";
    /// Number of samples.
    pub const N: &str = "n";
    /// Why there is no value (empty when there is one).
    pub(crate) const MISSING: &str = "missing";
}

/// The tidy column names, in order.
pub const COLUMNS: [&str; 31] = [
    col::PRESET,
    col::LABEL,
    col::ENGINE,
    col::BRANCH,
    col::INIT,
    col::G,
    col::NORM,
    col::WIDTH,
    col::TOKENS,
    col::SAMPLES,
    col::SEED,
    col::HIDDEN_RATIO,
    col::HEADS,
    col::ALPHA,
    col::BETA,
    col::LAMBDA,
    col::FINAL_NORM,
    col::Q0,
    col::C0,
    col::EPS,
    col::PATH_MAX,
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

/// The tidy frame of rows in the order given, for a caller that orders them itself (e.g. the
/// cells of a grid in grid order, each cell's rows sorted by key: `analyses::mc_grid`).
pub fn frame_in_order(rows: &[Row]) -> Result<DataFrame> {
    unsorted_frame(rows)
}

/// The settings columns of `rows` ([`crate::profile::Setup`]: `label` and `branch` to `path_max`
/// of [`COLUMNS`]; tidy tables put the engine after the label).
pub fn setup_columns(rows: &[&Row]) -> Vec<Column> {
    let s = |f: fn(&Setup) -> Option<&str>| -> Vec<Option<&str>> {
        rows.iter().map(|r| f(&r.setup)).collect()
    };
    let u = |f: fn(&Setup) -> Option<u64>| -> Vec<Option<u64>> {
        rows.iter().map(|r| f(&r.setup)).collect()
    };
    let f = |f: fn(&ModelSettings) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(&r.setup.model)).collect()
    };
    vec![
        column(col::LABEL, rows.iter().map(|r| r.setup.label.as_str())),
        Column::new(col::BRANCH.into(), s(|x| x.branch.as_deref())),
        Column::new(col::INIT.into(), s(|x| x.init.as_deref())),
        column(col::G, rows.iter().map(|r| r.setup.g)),
        Column::new(col::NORM.into(), s(|x| x.norm.as_deref())),
        Column::new(col::WIDTH.into(), u(|x| x.width)),
        Column::new(col::TOKENS.into(), u(|x| x.tokens)),
        Column::new(col::SAMPLES.into(), u(|x| x.samples)),
        Column::new(col::SEED.into(), u(|x| x.seed)),
        Column::new(col::HIDDEN_RATIO.into(), f(|m| m.hidden_ratio)),
        Column::new(col::HEADS.into(), u(|x| x.model.heads)),
        Column::new(col::ALPHA.into(), f(|m| m.alpha)),
        Column::new(col::BETA.into(), f(|m| m.beta)),
        Column::new(col::LAMBDA.into(), f(|m| m.lambda)),
        Column::new(col::FINAL_NORM.into(), s(|x| x.model.final_norm.as_deref())),
        Column::new(col::Q0.into(), f(|m| m.q0)),
        Column::new(col::C0.into(), f(|m| m.c0)),
        Column::new(col::EPS.into(), f(|m| m.eps)),
        Column::new(col::PATH_MAX.into(), u(|x| x.model.path_max)),
    ]
}

/// The tidy frame of rows in the order given.
fn unsorted_frame(rows: &[Row]) -> Result<DataFrame> {
    let refs: Vec<&Row> = rows.iter().collect();
    let mut cols = vec![column(col::PRESET, rows.iter().map(|r| r.preset.as_str()))];
    cols.extend(setup_columns(&refs));
    cols.insert(2, column(col::ENGINE, rows.iter().map(|r| r.engine.name())));
    cols.extend([
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
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The last guard of "a non-finite number is never written as a result": a frame with a
/// non-finite float is refused, naming the column and row (a value without a number is null,
/// written empty, with its reason where the table has a `missing` column).
fn check_finite(df: &DataFrame) -> Result<()> {
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
    Ok(())
}

/// Writes a frame as CSV to any writer.
pub(crate) fn write_csv(df: &mut DataFrame, w: &mut dyn Write) -> Result<()> {
    check_finite(df)?;
    CsvWriter::new(w).include_header(true).finish(df)?;
    Ok(())
}

/// Writes a frame as Parquet to any writer: typed columns (an all-empty column keeps its type,
/// which CSV readers cannot guess), zstd-compressed, one row group. The same frame gives the
/// same bytes. `metadata` becomes the file's key-value metadata (none if empty).
fn write_parquet_with(
    df: &mut DataFrame,
    w: &mut dyn Write,
    metadata: &[(String, String)],
) -> Result<()> {
    check_finite(df)?;
    let kv = (!metadata.is_empty())
        .then(|| polars::io::parquet::write::KeyValueMetadata::from_static(metadata.to_vec()));
    ParquetWriter::new(w)
        .with_compression(ParquetCompression::Zstd(None))
        .with_key_value_metadata(kv)
        .set_parallel(false)
        .finish(df)?;
    Ok(())
}

/// The key-value file metadata of Parquet `bytes` (as [`Format::encode_with`] writes it,
/// after polars' own `ARROW:schema`): `(key, value)` pairs in file order, a key without a
/// value read as the empty string.
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::table::{Format, column, parquet_metadata};
/// use polars::prelude::DataFrame;
/// let mut df = DataFrame::new_infer_height(vec![column("x", [1.5])]).unwrap();
/// let meta = [("k".to_string(), "{\"a\":1}".to_string())];
/// let bytes = Format::Parquet.encode_with(&mut df, &meta).unwrap();
/// let read = parquet_metadata(&bytes).unwrap();
/// assert_eq!(read.iter().find(|m| m.0 == "k"), Some(&meta[0]));
/// let plain = parquet_metadata(&Format::Parquet.encode(&mut df).unwrap()).unwrap();
/// assert!(plain.iter().all(|m| m.0 == "ARROW:schema"));
/// ```
pub fn parquet_metadata(bytes: &[u8]) -> Result<Vec<(String, String)>> {
    let mut reader = ParquetReader::new(std::io::Cursor::new(bytes));
    let meta = reader.get_metadata()?;
    Ok(meta
        .key_value_metadata()
        .iter()
        .flatten()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect())
}

/// The file format of a table, from the output path's extension.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::output::table::{Format, column};
/// use polars::prelude::DataFrame;
/// use std::path::Path;
///
/// assert_eq!(Format::of(Some(Path::new("q.PARQUET"))), Format::Parquet);
/// assert_eq!(Format::of(Some(Path::new("q.csv"))), Format::Csv);
/// assert_eq!(Format::of(None), Format::Csv);
///
/// let mut df = DataFrame::new_infer_height(vec![column("layer", [1i64, 2])])?;
/// assert_eq!(Format::Csv.encode(&mut df)?, b"layer\n1\n2\n");
/// assert!(Format::Parquet.encode(&mut df)?.starts_with(b"PAR1"));
/// // A table for reading: columns aligned, values as the CSV writes them.
/// let mut df = DataFrame::new_infer_height(vec![column("layer", [1i64, 10])])?;
/// assert_eq!(Format::Table.encode(&mut df)?, b"layer\n    1\n   10\n");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    /// Comma-separated text (any extension but `.parquet`, and standard output).
    Csv,
    /// Apache Parquet (`.parquet`).
    Parquet,
    /// Aligned text columns for reading in a terminal (`--format table`).
    Table,
}

impl Format {
    /// Parquet for a path ending in `.parquet` (any case), CSV otherwise.
    pub fn of(path: Option<&Path>) -> Self {
        match path.and_then(|p| p.extension()) {
            Some(e) if e.eq_ignore_ascii_case("parquet") => Format::Parquet,
            _ => Format::Csv,
        }
    }

    /// `--format` if given, else [`Format::of`] the output path; Parquet is refused on
    /// standard output (binary), naming `--format`.
    pub fn chosen(flag: Option<Format>, path: Option<&Path>) -> Result<Self> {
        let f = flag.unwrap_or_else(|| Self::of(path));
        if f == Format::Parquet && path.is_none() {
            return Err(crate::Error::invalid(
                "--format",
                "parquet",
                "csv or table on standard output (Parquet is binary: give --out FILE.parquet)",
            ));
        }
        Ok(f)
    }

    /// The bytes of `df` in this format.
    pub fn encode(self, df: &mut DataFrame) -> Result<Vec<u8>> {
        self.encode_with(df, &[])
    }

    /// The bytes of `df` in this format, a Parquet file carrying `metadata` as its file-level
    /// key-value metadata (the provenance of a standalone `--out`; CSV and the terminal table
    /// have no place for it).
    pub fn encode_with(self, df: &mut DataFrame, metadata: &[(String, String)]) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        match self {
            Format::Csv => write_csv(df, &mut buf)?,
            Format::Parquet => write_parquet_with(df, &mut buf, metadata)?,
            Format::Table => {
                write_csv(df, &mut buf)?;
                buf = aligned(&String::from_utf8_lossy(&buf)).into_bytes();
            }
        }
        Ok(buf)
    }
}

/// The fields of one CSV line (quoted fields with doubled quotes, as polars writes them): a
/// comma inside double quotes (a label such as `"Pre-LN, branch/sqrt(L)"`) does not split,
/// and `""` inside quotes is a quote.
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::table::csv_fields;
/// assert_eq!(csv_fields(r#"a,"b, c",,"d""e""#), ["a", "b, c", "", "d\"e"]);
/// ```
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

/// A CSV as aligned columns: numbers right-aligned, text left-aligned, two spaces apart.
fn aligned(csv: &str) -> String {
    let rows: Vec<Vec<String>> = csv.lines().map(csv_fields).collect();
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |k: usize| {
        rows.iter()
            .map(|r| r.get(k).map_or(0, |f| f.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..cols).map(width).collect();
    // A column is numeric when every value below the header is a number or empty.
    let numeric: Vec<bool> = (0..cols)
        .map(|k| {
            rows.iter()
                .skip(1)
                .filter_map(|r| r.get(k))
                .all(|f| f.is_empty() || f.parse::<f64>().is_ok())
        })
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = (0..cols)
            .map(|k| {
                let f = r.get(k).map_or("", String::as_str);
                if numeric[k] {
                    format!("{f:>w$}", w = widths[k])
                } else {
                    format!("{f:<w$}", w = widths[k])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The CSV bytes of tidy rows, as [`write_rows`] writes them.
pub(crate) fn rows_csv(rows: Vec<Row>) -> Result<Vec<u8>> {
    let mut df = frame(rows)?;
    let mut buf = Vec::new();
    write_csv(&mut df, &mut buf)?;
    Ok(buf)
}

/// Writes rows as a tidy CSV file, atomically (an error while writing names the file).
pub fn write_rows(rows: Vec<Row>, path: &Path) -> Result<()> {
    super::atomic::write_bytes(path, &rows_csv(rows)?)
}

/// Reads a CSV written by [`write_rows`] (or any CSV) into a frame: a regular file of at most
/// [`crate::input::DATA_CAP`] bytes. Column types are inferred, except that a `seed` column
/// that does not parse as inferred (a seed of 2^63 or more beside smaller ones: inference reads
/// i64) is read as text.
pub fn read_csv(path: &Path) -> Result<DataFrame> {
    let bytes = crate::input::read(path, "input table", crate::input::DATA_CAP)?;
    let read = |seed_as_text: bool| {
        let mut opts = CsvReadOptions::default().with_has_header(true);
        if seed_as_text {
            let schema = Schema::from_iter([Field::new("seed".into(), DataType::String)]);
            opts = opts.with_schema_overwrite(Some(std::sync::Arc::new(schema)));
        }
        opts.into_reader_with_file_handle(std::io::Cursor::new(&bytes))
            .finish()
    };
    let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let has_seed = header
        .split(|&b| b == b',')
        .any(|c| c.strip_suffix(b"\r").unwrap_or(c) == b"seed");
    match read(false) {
        Err(_) if has_seed => Ok(read(true)?),
        r => Ok(r?),
    }
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
    // Text columns; an all-empty one is read as nulls of whatever type polars infers, and a
    // column a file lacks is all nulls.
    let strs = |name: &str| -> Result<Vec<Option<String>>> {
        let Ok(c) = df.column(name) else {
            return Ok(vec![None; df.height()]);
        };
        Ok(c.cast(&DataType::String)?
            .str()?
            .iter()
            .map(|s| s.filter(|s| !s.is_empty()).map(str::to_string))
            .collect())
    };
    let opt_f64s = |name: &str| -> Result<Vec<Option<f64>>> {
        if df.column(name).is_err() {
            return Ok(vec![None; df.height()]);
        }
        f64s(name)
    };
    let opt_strs = |name: &str| -> Result<Vec<Option<String>>> {
        if df.column(name).is_err() {
            return Ok(vec![None; df.height()]);
        }
        strs(name)
    };
    let [preset, label, engine, metric, branch, init, norm, missing] = [
        col::PRESET,
        col::LABEL,
        col::ENGINE,
        col::METRIC,
        col::BRANCH,
        col::INIT,
        col::NORM,
        col::MISSING,
    ]
    .map(strs);
    let (preset, label, engine, metric) = (preset?, label?, engine?, metric?);
    let (branch, init, norm, missing) = (branch?, init?, norm?, missing?);
    let final_norm = opt_strs(col::FINAL_NORM)?;
    let [g, width, tokens, samples, seed] =
        [col::G, col::WIDTH, col::TOKENS, col::SAMPLES, col::SEED].map(opt_f64s);
    let (g, width, tokens, samples, seed) = (g?, width?, tokens?, samples?, seed?);
    let [
        hidden_ratio,
        heads,
        alpha,
        beta,
        lambda,
        q0,
        c0,
        eps,
        path_max,
    ] = [
        col::HIDDEN_RATIO,
        col::HEADS,
        col::ALPHA,
        col::BETA,
        col::LAMBDA,
        col::Q0,
        col::C0,
        col::EPS,
        col::PATH_MAX,
    ]
    .map(opt_f64s);
    let (hidden_ratio, heads, alpha, beta, lambda) =
        (hidden_ratio?, heads?, alpha?, beta?, lambda?);
    let (q0, c0, eps, path_max) = (q0?, c0?, eps?, path_max?);
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
    let tag_cols: Vec<Vec<Option<f64>>> = tags.iter().map(|t| f64s(t)).collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        let m = crate::metrics::Metric::from_name(&text(&metric[i]))
            .ok_or_else(|| bad(format!("unknown metric '{}'", text(&metric[i]))))?;
        let engine = EngineKind::from_name(&text(&engine[i]))
            .ok_or_else(|| bad(format!("unknown engine '{}'", text(&engine[i]))))?;
        let int = |v: Option<f64>| v.map(|x| x as u64);
        let setup = Setup {
            label: text(&label[i]),
            branch: branch[i].clone(),
            init: init[i].clone(),
            g: g[i],
            norm: norm[i].clone(),
            width: int(width[i]),
            tokens: int(tokens[i]),
            samples: int(samples[i]),
            seed: int(seed[i]),
            model: ModelSettings {
                hidden_ratio: hidden_ratio[i],
                heads: int(heads[i]),
                alpha: alpha[i],
                beta: beta[i],
                lambda: lambda[i],
                final_norm: final_norm[i].clone(),
                q0: q0[i],
                c0: c0[i],
                eps: eps[i],
                path_max: int(path_max[i]),
            },
        };
        out.push((
            tag_cols.iter().map(|c| c[i].unwrap_or(f64::NAN)).collect(),
            Row {
                preset: text(&preset[i]),
                setup: std::sync::Arc::new(setup),
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
