//! `normscope cite`: one number of a table that `reproduce` wrote (or a figure), with what a
//! citation needs: the number as stored and its interval, the file's state against its
//! manifest, the commit and the command that regenerate it, and a BibTeX entry.
//!
//! A table or figure under `ROOT/data/<analysis>/` or `ROOT/figures/<analysis>/` has its
//! manifest at `ROOT/data/<analysis>/manifest.json`, which records the commit, whether the
//! tree was clean, whether the run was `--quick`, and the sha256 of every output. A row is
//! chosen with `--where column=value` (as the file stores the value, compared as text) and
//! must be the only one that matches; the number is `--column` (default `value`) and its
//! interval the first pair of columns found among `<c>_lo`/`<c>_hi`, `<c>_ci_low`/`<c>_ci_high`
//! and, for `value`, `ci_low`/`ci_high`.

use super::text_table::{
    cell, column_names, describe, interval_of, matching, parse_filters, text_frame,
};
use crate::runner::manifest::sha256;
use normscope_core::input::{DATA_CAP, read, read_text};
use normscope_core::{Error, Result};
use polars::prelude::*;
use std::path::{Component, Path, PathBuf};

/// The year of the software citation (`date-released` of `CITATION.cff`; a test keeps them
/// equal).
pub const CITATION_YEAR: u32 = 2026;

/// The title of the software citation (`title` of `CITATION.cff`).
pub const CITATION_TITLE: &str = "normscope: where normalization belongs in residual networks (Pre-Norm, Post-Norm, DeepNorm), in closed form and Monte Carlo";

/// What to cite.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::cite::Request;
/// let r = Request::new("data/norms/verdicts.csv", &["norm=batch"], None);
/// assert_eq!(r.filters, [("norm".to_string(), "batch".to_string())]);
/// assert!(Request::new("t.csv", &["norm"], None).is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The table (CSV or Parquet) or figure (PDF, PNG, SVG).
    pub path: PathBuf,
    /// `--where column=value` filters, all of which the row must meet.
    pub filters: Vec<(String, String)>,
    /// `--column`: the number to cite (default `value`).
    pub column: Option<String>,
}

impl Request {
    /// Parses the `--where` filters (`column=value`).
    pub fn new(path: impl Into<PathBuf>, filters: &[&str], column: Option<&str>) -> Result<Self> {
        Ok(Request {
            path: path.into(),
            filters: parse_filters(filters)?,
            column: column.map(str::to_string),
        })
    }
}

/// The manifest of the analysis a path belongs to: `(root, analysis, path relative to root)`
/// from the last `data/<analysis>/` or `figures/<analysis>/` of the path.
fn locate(path: &Path) -> Result<(PathBuf, String, String)> {
    let parts: Vec<Component> = path.components().collect();
    let found = (0..parts.len().saturating_sub(2))
        .rev()
        .find(|&i| matches!(parts[i], Component::Normal(d) if d == "data" || d == "figures"));
    let Some(i) = found else {
        return Err(Error::invalid(
            "PATH",
            path.display(),
            "a table or figure under data/<analysis>/ or figures/<analysis>/, as reproduce writes them",
        ));
    };
    let root: PathBuf = parts[..i].iter().collect();
    let analysis = parts[i + 1].as_os_str().to_string_lossy().into_owned();
    let rel: Vec<String> = parts[i..]
        .iter()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok((root, analysis, rel.join("/")))
}

/// The one row meeting every filter.
fn the_row(df: &DataFrame, filters: &[(String, String)]) -> Result<usize> {
    let names = column_names(df);
    let rows = matching(df, filters)?;
    match rows.as_slice() {
        [r] => Ok(*r),
        [] => Err(Error::invalid(
            "--where",
            describe(filters),
            "filters that one row meets (none does)",
        )),
        many => {
            // The columns whose values tell the matching rows apart.
            let mut differ = Vec::new();
            for c in &names {
                let first = cell(df, c, many[0])?;
                let mut same = true;
                for &r in &many[1..] {
                    same &= cell(df, c, r)? == first;
                }
                if !same {
                    differ.push(c.as_str());
                }
            }
            Err(Error::invalid(
                "--where",
                describe(filters),
                format!(
                    "filters that one row meets ({} do; add one on {})",
                    many.len(),
                    differ.join(", ")
                ),
            ))
        }
    }
}

/// The citation of `req`, as lines of text.
pub fn cite(req: &Request) -> Result<String> {
    let (root, analysis, rel) = locate(&req.path)?;
    let manifest_path = root.join("data").join(&analysis).join("manifest.json");
    let text = read_text(&manifest_path).map_err(|why| {
        Error::invalid(
            "PATH",
            req.path.display(),
            format!(
                "a file whose analysis has its manifest at {} ({why})",
                manifest_path.display()
            ),
        )
    })?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::invalid(
            "PATH",
            manifest_path.display(),
            format!("a manifest written by normscope reproduce ({e})"),
        )
    })?;
    let figure = matches!(
        req.path.extension().and_then(|e| e.to_str()),
        Some("pdf" | "png" | "svg")
    );
    if figure && (!req.filters.is_empty() || req.column.is_some()) {
        return Err(Error::invalid(
            "--where",
            describe(&req.filters),
            "no row filter or column for a figure (cite a table's row, or the figure whole)",
        ));
    }
    let bytes = read(&req.path, "PATH", DATA_CAP)?;
    let recorded = manifest["outputs"][&rel].as_str();
    let state = match recorded {
        Some(h) if *h == sha256(&bytes) => "as the commit wrote it (sha256 matches the manifest)",
        Some(_) => "CHANGED since the commit (its sha256 differs from the manifest's)",
        None => "not among the manifest's outputs",
    };
    let commit = manifest["source"]["git_commit"]
        .as_str()
        .unwrap_or("unknown")
        .to_string();
    let dirty = manifest["source"]["dirty"].as_bool().unwrap_or(true);
    let quick = manifest["quick"].as_bool().unwrap_or(false);
    let version = manifest["crate_version"].as_str().unwrap_or("unknown");
    let mut out = String::new();
    let mut what = rel.clone();
    if figure {
        out += &format!("figure: {rel}\n");
    } else {
        let df = text_frame(&req.path, bytes)?;
        let row = the_row(&df, &req.filters)?;
        let column = req.column.clone().unwrap_or_else(|| "value".to_string());
        if df.column(&column).is_err() {
            let names: Vec<String> = df
                .get_column_names()
                .iter()
                .map(|s| s.to_string())
                .collect();
            return Err(Error::Unknown {
                kind: "column",
                name: column,
                valid: names.join(", "),
            });
        }
        let value = cell(&df, &column, row)?;
        if value.is_empty() {
            return Err(Error::invalid(
                "--column",
                &column,
                "a column with a value in this row (it is missing here)",
            ));
        }
        let interval = match interval_of(&df, &column) {
            Some((lo, hi)) => {
                let (l, h) = (cell(&df, &lo, row)?, cell(&df, &hi, row)?);
                if l.is_empty() || h.is_empty() {
                    String::new()
                } else {
                    format!(" [{l}, {h}] ({lo}, {hi})")
                }
            }
            None => String::new(),
        };
        let exact = interval.is_empty()
            && df.column("engine").is_ok()
            && cell(&df, "engine", row)?.starts_with("theory");
        let interval = if exact {
            " (exact: the closed form)".to_string()
        } else {
            interval
        };
        out += &format!("{column}: {value}{interval}\n");
        out += &format!(
            "row: {} (row {} of {rel})\n",
            describe(&req.filters),
            row + 1
        );
        what = format!("{rel}, {column} at {}", describe(&req.filters));
    }
    out += &format!("file: {rel}, {state}\n");
    out += &format!(
        "commit: {commit}{}\n",
        if dirty {
            " (the tree was dirty: the commit alone does not reproduce it)"
        } else {
            ""
        }
    );
    out += &format!(
        "regenerate: git checkout {commit} && cargo run --release -- reproduce --only {analysis}{}\n",
        if quick { " --quick" } else { "" }
    );
    let short: String = commit.chars().take(7).collect();
    out += &format!(
        "bibtex:\n@software{{normscope_{short},\n  author  = {{{{The normscope developers}}}},\n  title   = {{{CITATION_TITLE}}},\n  version = {{{version}}},\n  year    = {{{CITATION_YEAR}}},\n  note    = {{Commit {commit}; {what}}}\n}}\n"
    );
    Ok(out)
}
