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
//!
//! Nothing of the file or its manifest is trusted: every manifest value is checked before use,
//! every value printed is escaped for where it goes (a report line, a shell word
//! ([`shell_quote`]), a BibTeX field), and a file whose bytes differ from its manifest's
//! sha256, or, in a git checkout, from what git holds, is refused (exit status 1) unless
//! [`field@Request::allow_changed`], when its entry is marked modified.

mod against_git;
mod bibtex;
mod invocation;
mod recorded;
pub mod shell_quote;

use super::text_table::{
    cell, column_names, describe, interval_at, interval_of, matching, parse_filters, read_input,
    require, text_frame,
};
use super::visible::visible;
use crate::runner::manifest::sha256;
use against_git::Verdict;
use normscope_core::input::{TEXT_CAP, read};
use normscope_core::{Error, Result};
use polars::prelude::*;
use recorded::Recorded;
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
    /// `--allow-changed`: cite a file that differs from its manifest or from git, its entry
    /// marked modified (otherwise refused, exit status 1).
    pub allow_changed: bool,
}

impl Request {
    /// Parses the `--where` filters (`column=value`).
    pub fn new(path: impl Into<PathBuf>, filters: &[&str], column: Option<&str>) -> Result<Self> {
        Ok(Request {
            path: path.into(),
            filters: parse_filters(filters)?,
            column: column.map(str::to_string),
            allow_changed: false,
        })
    }
}

/// `path` as the system resolves it: absolute, with every symbolic link followed (so `..`
/// after a linked folder goes where the system goes, and the manifest is that of the file
/// actually read).
fn resolved(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|e| {
        Error::invalid(
            "PATH",
            path.display(),
            format!("a path this system resolves ({})", visible(e)),
        )
    })
}

/// The manifest of the analysis a path belongs to: `(root, analysis, path relative to root)`
/// from the last `data/<analysis>/` or `figures/<analysis>/` of the resolved path whose
/// `data/<analysis>/manifest.json` exists.
fn locate(path: &Path) -> Result<(PathBuf, String, String)> {
    let abs = resolved(path)?;
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

/// The command that regenerates the analysis: the manifest's recorded arguments, each a
/// POSIX shell word ([`shell_quote::join`]), at its commit.
fn regenerate(commit: Option<&str>, args: &[String]) -> String {
    let run = format!("cargo run --release -- {}", shell_quote::join(args));
    match commit {
        Some(c) => format!("git checkout {c} && {run}"),
        None => format!("{run}  # at the commit that wrote it, which the manifest does not record"),
    }
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
                    hint = format!("; {} holds e.g. {}", visible(c), visible(seen.join(", ")));
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
                    visible(differ.join(", "))
                ),
            ))
        }
    }
}

/// The lines of a table's number (`<column>: <value> <interval>` and `row: ...`), and what
/// the entry cites.
fn number(req: &Request, bytes: Vec<u8>, rel: &str) -> Result<(String, String)> {
    super::table_bounds::check(&req.path, &bytes, "to cite")?;
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
        // The table has the interval's columns but this row leaves an end empty: an
        // unbounded end (e.g. a ratio whose denominator's interval reaches 0), which the
        // row's other columns state.
        (None, Some((lo, hi))) => {
            let end = |c: &str| -> Result<String> {
                let v = cell(&df, c, row)?;
                Ok(if v.trim().is_empty() {
                    "missing".to_string()
                } else {
                    v
                })
            };
            format!(
                " [{}, {}] ({lo}, {hi}): an end of the interval is missing in this row \
                 (unbounded or not measured; the row says why)",
                end(lo)?,
                end(hi)?
            )
        }
        _ => format!(
            " (no interval: the table has no {column}_ci_low/{column}_ci_high{} for this row)",
            if super::text_table::BARE_INTERVAL.contains(&column.as_str()) {
                ", ci_low/ci_high"
            } else {
                ""
            }
        ),
    };
    let lines = format!(
        "{}: {}\nrow: {} (row {} of {})\n",
        visible(&column),
        visible(format!("{value}{interval}")),
        visible(describe(&req.filters)),
        row + 1,
        visible(rel)
    );
    Ok((
        lines,
        format!("{rel}, {column} at {}", describe(&req.filters)),
    ))
}

/// The file's state: the report's words for it, and why it is not as its commit wrote it, if
/// it is not. `verdict` is git's ([`against_git::check`]), asked only of a file whose sha256
/// matches its manifest's.
fn state(verdict: Option<Verdict>) -> (String, Option<String>) {
    match verdict {
        None => {
            let why = "its sha256 differs from the manifest's";
            (
                format!("CHANGED since the commit ({why})"),
                Some(why.into()),
            )
        }
        Some(Verdict::Matches(how)) => (
            format!("as the commit wrote it (sha256 matches the manifest; {how})"),
            None,
        ),
        Some(Verdict::Differs(how)) => {
            let why = format!(
                "its sha256 matches the manifest, but {how}: edited and resealed, or not committed"
            );
            (format!("CHANGED against the commit ({why})"), Some(why))
        }
        Some(Verdict::Unverified(why)) => (
            format!("sha256 matches the manifest; not verified against the commit ({why})"),
            None,
        ),
    }
}

/// The citation of `req`, as lines of text. A file not as its commit wrote it is an error
/// (exit status 1) unless [`field@Request::allow_changed`].
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
    let manifest_rel = format!("data/{analysis}/manifest.json");
    let manifest_path = root.join(&manifest_rel);
    let text = read(&manifest_path, "manifest", TEXT_CAP)?;
    let manifest: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        Error::invalid(
            "PATH",
            visible(manifest_path.display()),
            format!("a manifest written by normscope reproduce ({e})"),
        )
    })?;
    let recorded = Recorded::read(&manifest, &manifest_path, &rel)?;
    let verdict = (recorded.sha256 == sha256(&bytes)).then(|| {
        against_git::check(
            &root,
            recorded.commit.as_deref(),
            (&rel, &bytes),
            (&manifest_rel, &text),
        )
    });
    let (state, modified) = state(verdict);
    // Bad input (a filter, a column) is refused before a changed file is.
    let (mut out, what) = if figure {
        (format!("figure: {}\n", visible(&rel)), rel.clone())
    } else {
        number(req, bytes, &rel)?
    };
    if modified.is_some() && !req.allow_changed {
        return Err(Error::Io {
            path: visible(req.path.display()),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{state}; --allow-changed cites it anyway, its BibTeX entry marked modified"
                ),
            ),
        });
    }
    out += &format!("file: {}, {state}\n", visible(&rel));
    let commit = recorded.commit.as_deref();
    out += &format!(
        "commit: {}{}\n",
        commit.unwrap_or("unknown (the manifest records none)"),
        match recorded.dirty {
            Some(true) => " (the tree was dirty: the commit alone does not reproduce it)",
            None if commit.is_some() => " (whether the tree was dirty is not recorded)",
            _ => "",
        }
    );
    if recorded.quick {
        out += "quick: a --quick run (reduced defaults, not the full run's numbers)\n";
    }
    out += &format!("regenerate: {}\n", regenerate(commit, &recorded.args));
    let entry = bibtex::Cited {
        commit,
        version: &recorded.version,
        what: &what,
        modified: modified.as_deref(),
    };
    out += &format!("bibtex:\n{}", entry.entry());
    Ok(out)
}
