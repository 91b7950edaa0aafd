//! The tables earlier analyses wrote, read back under the same output root: every file read
//! is recorded for the reading analysis's manifest ([`Data`]). The ledger and the training
//! analyses' claim functions read through it.

use normscope_core::output::table::{read_rows, read_tagged};
use normscope_core::profile::Row;
use normscope_core::{Error, Result};
use polars::prelude::DataFrame;
use std::path::Path;

/// Tables read by the ledger, relative to the output root (the training analyses' claim
/// functions read through it too, so the manifest lists every input).
///
/// # Examples
///
/// `Data` is built by the ledger ([`crate::claims::ledger`]); a table it reads that is
/// missing under the root is an error naming the analysis to run first:
///
/// ```rust
/// use normscope_analyses::claims::ledger;
/// let root = tempfile::tempdir().unwrap(); // an empty root
/// let err = ledger(root.path()).unwrap_err().to_string();
/// assert!(err.contains("data/effective-depth/theory.csv, which does not exist"));
/// assert!(err.contains("normscope reproduce --only effective-depth,claims"));
/// ```
pub struct Data<'a> {
    pub(crate) root: &'a Path,
    /// Every file read, relative to the root (`data/<id>/<file>`), for the manifest.
    pub(crate) read: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Data<'_> {
    /// The path of `data/<rel>`, recorded as read; an error naming the analysis to run if it
    /// is missing.
    pub(crate) fn path(&self, rel: &str) -> Result<std::path::PathBuf> {
        let path = self.root.join("data").join(rel);
        if !path.exists() {
            return Err(missing(rel));
        }
        self.read.borrow_mut().insert(format!("data/{rel}"));
        Ok(path)
    }

    pub(crate) fn rows(&self, rel: &str) -> Result<Vec<Row>> {
        read_rows(&self.path(rel)?)
    }

    /// `data/<rel>` as a data frame (any CSV written by an analysis).
    pub(crate) fn frame(&self, rel: &str) -> Result<DataFrame> {
        normscope_core::output::table::read_csv(&self.path(rel)?)
    }

    pub(crate) fn tagged(&self, rel: &str, tags: &[&str]) -> Result<Vec<(Vec<f64>, Row)>> {
        read_tagged(&self.path(rel)?, tags)
    }
}

/// The error for a table that is not there, naming the analysis to run first.
fn missing(rel: &str) -> Error {
    let id = rel.split('/').next().unwrap_or(rel);
    Error::Undefined(format!(
        "the claims ledger reads data/{rel}, which does not exist under the output root: run the `{id}` analysis first (e.g. `normscope reproduce --only {id},claims`)"
    ))
}
