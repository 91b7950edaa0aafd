//! `normscope cite`: one number of a table that `reproduce` wrote (or a figure), with what a
//! citation needs: the number as stored and its interval, the file's state against its
//! manifest, the commit and the command that regenerate it, and a BibTeX entry.
//!
//! A table or figure under `ROOT/data/<analysis>/` or `ROOT/figures/<analysis>/` has its
//! manifest at `ROOT/data/<analysis>/manifest.json`, which records the commit, whether the
//! tree was clean, whether the run was `--quick`, and the sha256 of every output. A row is
//! chosen with `--where column=value` (as the file stores the value, compared as text) and
//! must be the only one that matches; the number is `--column` (default `value`) and its
//! interval the columns `<c>_ci_low`/`<c>_ci_high` or, for a table's one estimate (`value`,
//! `median`, ..., [`super::text_table::BARE_INTERVAL`]), `ci_low`/`ci_high`.

use super::text_table::{
    cell, column_names, describe, interval_at, interval_of, matching, parse_filters, read_input,
    require, text_frame,
};
use crate::runner::manifest::sha256;
use normscope_core::input::read_text;
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
/// let r = Request::new("data/norms/verdicts.csv", &["norm=batch"], None)?;
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

/// `path` made absolute and without `.` or `..` (lexically: `data/x/../x/t.csv` is
/// `data/x/t.csv`).
fn normalized(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path).map_err(|e| {
        Error::invalid(
            "PATH",
            path.display(),
            format!("a path this system resolves ({e})"),
        )
    })?;
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The manifest of the analysis a path belongs to: `(root, analysis, path relative to root)`
/// from the last `data/<analysis>/` or `figures/<analysis>/` of the normalized path whose
/// `data/<analysis>/manifest.json` exists.
fn locate(path: &Path) -> Result<(PathBuf, String, String)> {
    let abs = normalized(path)?;
    let parts: Vec<Component> = abs.components().collect();
    let found = (0..parts.len().saturating_sub(2)).rev().find(|&i| {
        matches!(parts[i], Component::Normal(d) if d == "data" || d == "figures") && {
            let root: PathBuf = parts[..i].iter().collect();
            root.join("data")
                .join(parts[i + 1].as_os_str())
                .join("manifest.json")
                .is_file()
        }
    });
    let Some(i) = found else {
        return Err(Error::invalid(
            "PATH",
            path.display(),
            "a table or figure under data/<analysis>/ or figures/<analysis>/ whose analysis has \
             its manifest (data/<analysis>/manifest.json), as reproduce writes them",
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

/// `text` with BibTeX's and LaTeX's special characters escaped.
fn bibtex_escape(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars() {
        match ch {
            '_' | '%' | '&' | '#' | '$' | '{' | '}' => {
                out.push('\\');
                out.push(ch);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '\\' => out.push_str("\\textbackslash{}"),
            _ => out.push(ch),
        }
    }
    out
}

/// The command that regenerates the analysis: the manifest's recorded invocation (a run of
/// the default `reproduce` when it recorded the bare command of earlier versions) at its
/// commit.
fn regenerate(commit: &str, invocation: &str) -> String {
    let args = invocation
        .strip_prefix("normscope")
        .unwrap_or(invocation)
        .trim();
    let args = if args.is_empty() { "reproduce" } else { args };
    format!("git checkout {commit} && cargo run --release -- {args}")
}

/// The one row meeting every filter.
fn the_row(df: &DataFrame, filters: &[(String, String)]) -> Result<usize> {
    let names = column_names(df);
    let rows = matching(df, filters)?;
    match rows.as_slice() {
        [r] => Ok(*r),
        [] => {
            // The first filter no row meets on its own, with values the column does hold.
            let mut hint = String::new();
            for (c, v) in filters {
                let rows = matching(df, &[(c.clone(), v.clone())])?;
                if rows.is_empty() {
                    let mut seen: Vec<String> = Vec::new();
                    for r in 0..df.height() {
                        let x = cell(df, c, r)?;
                        if !seen.contains(&x) {
                            seen.push(x);
                        }
                        if seen.len() == 5 {
                            break;
                        }
                    }
                    hint = format!("; {c} holds e.g. {}", seen.join(", "));
                    break;
                }
            }
            Err(Error::invalid(
                "--where",
                describe(filters),
                format!("filters that one row meets (none does{hint})"),
            ))
        }
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
    let ext = req
        .path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let figure = matches!(ext.as_str(), "pdf" | "png" | "svg");
    if figure && !req.filters.is_empty() {
        return Err(Error::invalid(
            "--where",
            describe(&req.filters),
            "no row filter for a figure (cite a table's row, or the figure whole)",
        ));
    }
    if figure && let Some(c) = &req.column {
        return Err(Error::invalid(
            "--column",
            c,
            "no column for a figure (cite a table's column, or the figure whole)",
        ));
    }
    let bytes = read_input(&req.path)?;
    let (root, analysis, rel) = locate(&req.path)?;
    let manifest_path = root.join("data").join(&analysis).join("manifest.json");
    let text = read_text(&manifest_path).map_err(|why| {
        Error::invalid(
            "PATH",
            req.path.display(),
            format!(
                "a file whose manifest {} can be read ({why})",
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
    let Some(recorded) = manifest["outputs"][&rel].as_str() else {
        return Err(Error::invalid(
            "PATH",
            req.path.display(),
            format!("a file its analysis's manifest lists among its outputs ({rel} is not)"),
        ));
    };
    let state = if recorded == sha256(&bytes) {
        "as the commit wrote it (sha256 matches the manifest)"
    } else {
        "CHANGED since the commit (its sha256 differs from the manifest's)"
    };
    let commit = manifest["source"]["git_commit"]
        .as_str()
        .unwrap_or("unknown")
        .to_string();
    let dirty = manifest["source"]["dirty"].as_bool().unwrap_or(true);
    let invocation = manifest["invocation"].as_str().unwrap_or("normscope");
    let version = manifest["crate_version"].as_str().unwrap_or("unknown");
    let mut out = String::new();
    let mut what = rel.clone();
    if figure {
        out += &format!("figure: {rel}\n");
    } else {
        let df = text_frame(&req.path, bytes)?;
        let row = the_row(&df, &req.filters)?;
        let column = req.column.clone().unwrap_or_else(|| "value".to_string());
        require(&df, &column)?;
        let value = cell(&df, &column, row)?;
        if value.is_empty() {
            return Err(Error::invalid(
                "--column",
                &column,
                "a column with a value in this row (it is missing here)",
            ));
        }
        let pair = interval_of(&df, &column);
        let exact = df.column("engine").is_ok() && cell(&df, "engine", row)?.starts_with("theory");
        let interval = match (interval_at(&df, pair.as_ref(), row)?, &pair) {
            (Some((l, h)), Some((lo, hi))) => format!(" [{l}, {h}] ({lo}, {hi})"),
            _ if exact => " (exact: the closed form)".to_string(),
            _ => format!(
                " (no interval: the table has no {column}_ci_low/{column}_ci_high{} for \
                 this row)",
                if super::text_table::BARE_INTERVAL.contains(&column.as_str()) {
                    ", ci_low/ci_high"
                } else {
                    ""
                }
            ),
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
    out += &format!("regenerate: {}\n", regenerate(&commit, invocation));
    // One key per cited number: the commit and a hash of what is cited.
    let short: String = commit.chars().take(7).collect();
    let tag: String = sha256(what.as_bytes()).chars().take(6).collect();
    out += &format!(
        "bibtex:\n@software{{normscope_{short}_{tag},\n  author  = {{{{The normscope developers}}}},\n  title   = {{{CITATION_TITLE}}},\n  version = {{{version}}},\n  year    = {{{CITATION_YEAR}}},\n  note    = {{Commit {commit}; {}}}\n}}\n",
        bibtex_escape(&what)
    );
    Ok(out)
}
