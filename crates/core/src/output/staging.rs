//! Staging: outputs that belong together are written into a private folder of the output root
//! and moved into place whole, so an interrupted run never leaves a manifest beside files it
//! does not describe.
//!
//! A [`Stage`] is a folder `root/.normscope-staging-<label>-XXXXXX` (a unique name). Files are
//! written into it at their final relative paths ([`Stage::write`]); [`Stage::commit`] then
//! moves its top-level entries (for an analysis, `figures/<id>` and `data/<id>`) over the ones
//! in the root, each by one rename. A stage that is dropped without being committed (an error,
//! a panic) is removed with what it holds, and so is every stage in flight when the binary's
//! SIGINT/SIGTERM handler calls [`abandon`].
//!
//! Every step that creates or moves something in a stage runs under one process-wide lock, which
//! [`abandon`] takes and never gives back: a write or move already under way finishes, none
//! starts after, and nothing is left for the removal to miss.
//!
//! What `kill -9` (no handler runs) leaves: the stage folders, which the next run removes
//! ([`remove_leftovers`]), and, only if it strikes within the few renames of a commit, an
//! entry already moved out of the root and its replacement not yet moved in. The order of the
//! renames (see [`Stage::commit`]) keeps the manifest consistent even then: it is gone together
//! with, or before, the files it lists, and back only after them.
//!
//! Fault injection for tests: with the environment variable [`FAULT_ENV`] set to `n`, the
//! process exits at once with status [`FAULT_EXIT`], running no cleanup (as if killed), right
//! before its n-th staging step, counted from 1: creating a stage, writing a staged file, or
//! one rename of a commit.

use super::atomic;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Name prefix of every stage folder in an output root.
pub const STAGE_PREFIX: &str = ".normscope-staging-";

/// Name prefix of the temporary files of [`atomic`] writes (and of [`STAGE_PREFIX`]).
pub const TEMP_PREFIX: &str = ".normscope-";

/// Environment variable of the fault-injection hook (see the module documentation).
pub const FAULT_ENV: &str = "NORMSCOPE_FAULT_AT";

/// Exit status of a run stopped by the fault-injection hook.
pub const FAULT_EXIT: i32 = 86;

/// The stages of this process that exist now; the lock every staging step holds.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn in_flight() -> MutexGuard<'static, Vec<PathBuf>> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts a staging step and stops the process at the one [`FAULT_ENV`] names.
fn step() {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    static DONE: AtomicU64 = AtomicU64::new(0);
    let at = AT.get_or_init(|| std::env::var(FAULT_ENV).ok()?.parse().ok());
    if let Some(at) = *at
        && DONE.fetch_add(1, Ordering::SeqCst) + 1 == at
    {
        std::process::exit(FAULT_EXIT);
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A staging folder in an output root; removed with its contents when dropped.
///
/// # Examples
///
/// Files written into a stage appear in the output root only when it is committed, and the
/// stage folder is gone afterwards:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::output::staging::{STAGE_PREFIX, Stage};
///
/// let root = tempfile::tempdir()?;
/// let stage = Stage::new(root.path(), "demo")?;
/// let name = stage.path().file_name().unwrap().to_string_lossy().into_owned();
/// assert!(name.starts_with(&format!("{STAGE_PREFIX}demo-")));
/// stage.write("data/demo/x.csv", b"a\n1\n")?;
/// assert!(!root.path().join("data").exists());
/// let dir = stage.path().to_path_buf();
/// stage.commit(root.path(), &["data/demo"])?;
/// assert_eq!(std::fs::read(root.path().join("data/demo/x.csv"))?, b"a\n1\n");
/// assert!(!dir.exists());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Stage {
    dir: PathBuf,
}

impl Stage {
    /// Creates `root/.normscope-staging-<label>-XXXXXX` (`root` must exist).
    pub fn new(root: &Path, label: &str) -> Result<Stage> {
        let mut reg = in_flight();
        step();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{STAGE_PREFIX}{label}-"))
            .tempdir_in(root)
            .map_err(|e| io_err(root, e))?
            .keep();
        reg.push(dir.clone());
        Ok(Stage { dir })
    }

    /// The stage folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to `rel` (a relative path such as `data/<id>/x.csv`) in the stage,
    /// atomically. An error names the file by its final path, `rel` in the output root.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let _reg = in_flight();
        step();
        atomic::write_bytes(&self.dir.join(rel), bytes).map_err(|e| match e {
            Error::Io { source, .. } => {
                let root = self.dir.parent().unwrap_or(Path::new("."));
                io_err(&root.join(rel), source)
            }
            e => e,
        })
    }

    /// Moves `entries` (relative paths such as `figures/<id>`, `data/<id>`) from the stage into
    /// `root`, replacing what is there: first every existing `root/<entry>` is moved into the
    /// stage, from the last entry to the first, then every staged entry is moved into `root`,
    /// from the first to the last. An entry the stage does not hold is only removed from
    /// `root`. Put the entry holding the manifest last: it is then the first to go and the last
    /// to arrive. The stage, with the old entries, is removed afterwards. If a move fails, the
    /// moves already made are undone (best effort), so `root` keeps its previous outputs, and
    /// the first error is returned.
    pub fn commit(self, root: &Path, entries: &[&str]) -> Result<()> {
        let reg = in_flight();
        // A stopped run's analysis never lands: the stage goes when `self` drops.
        crate::interrupt::check()?;
        let old = self.dir.join(".old");
        std::fs::create_dir(&old).map_err(|e| io_err(&old, e))?;
        // What has moved so far, so that a failed rename (disk error, permissions) can put
        // everything back: the old outputs return, the new ones go back into the stage.
        let mut aside: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut placed: Vec<(PathBuf, PathBuf)> = Vec::new();
        let result = (|| -> Result<()> {
            for (i, rel) in entries.iter().enumerate().rev() {
                let target = root.join(rel);
                if std::fs::symlink_metadata(&target).is_ok() {
                    step();
                    let kept = old.join(i.to_string());
                    std::fs::rename(&target, &kept).map_err(|e| io_err(&target, e))?;
                    aside.push((kept, target));
                }
            }
            for rel in entries {
                let (staged, target) = (self.dir.join(rel), root.join(rel));
                if std::fs::symlink_metadata(&staged).is_ok() {
                    atomic::ensure_parent(&target)?;
                    step();
                    std::fs::rename(&staged, &target).map_err(|e| io_err(&target, e))?;
                    placed.push((target, staged));
                }
            }
            Ok(())
        })();
        if result.is_err() {
            // Best effort, newest first; the error reported is the first one.
            let mut lost = false;
            for (from, to) in placed.iter().rev().chain(aside.iter().rev()) {
                lost |= std::fs::rename(from, to).is_err();
            }
            if lost {
                // Some old outputs could not go back: keep them out of the stage (which is
                // removed on drop) under a name no cleanup touches, and say where.
                let keep = root.join(format!(
                    "normscope-recovered-{}",
                    self.dir
                        .file_name()
                        .map_or("stage".into(), |n| n.to_string_lossy().into_owned())
                ));
                if std::fs::rename(&old, &keep).is_ok() {
                    crate::output::console::note(format_args!(
                        "warning: some earlier outputs could not be put back; they are in {}",
                        keep.display()
                    ));
                }
            }
        }
        drop(reg);
        result
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let mut reg = in_flight();
        let _ = std::fs::remove_dir_all(&self.dir);
        reg.retain(|d| d != &self.dir);
    }
}

/// Removes every stage of this process, and every temporary file of an [`atomic`] write (an
/// interrupted `--out`), and blocks every later staging step and rename for good (a step
/// under way finishes first). For a SIGINT/SIGTERM handler, right before the process exits.
pub fn abandon() {
    let reg = in_flight();
    for dir in reg.iter() {
        let _ = std::fs::remove_dir_all(dir);
    }
    atomic::abandon();
    std::mem::forget(reg);
}

/// The binaries' SIGINT, SIGTERM and SIGHUP handler: [`abandon`] (a write or move already
/// under way finishes first, so each analysis is in place whole or not at all), one line on
/// standard error, and exit status 130.
pub fn exit_on_interrupt() {
    use std::io::Write;
    abandon();
    let _ = writeln!(
        std::io::stderr(),
        "\ninterrupted: outputs not yet in place were discarded"
    );
    std::process::exit(130);
}

/// Removes what killed runs left in `root`: stage folders, and temporary files (`.normscope-*`,
/// and the `*.png.tmp.png` / `*.svg.tmp.svg` of earlier versions) directly in `data/<id>/` and
/// `figures/<id>/` for each of `ids`. Call it only while holding the root's
/// [`super::lock::OutputLock`], so that no other run's files are in flight.
pub fn remove_leftovers(root: &Path, ids: &[&str]) -> Result<()> {
    // (name, path, is a folder, is a regular file), symlinks not followed.
    let entries = |dir: &Path| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| {
                let t = e.file_type().ok();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.path(),
                    t.is_some_and(|t| t.is_dir()),
                    t.is_some_and(|t| t.is_file()),
                )
            })
    };
    for (name, path, dir, _) in entries(root) {
        if name.starts_with(STAGE_PREFIX) && dir {
            std::fs::remove_dir_all(&path).map_err(|e| io_err(&path, e))?;
        }
    }
    for id in ids {
        for kind in ["data", "figures"] {
            for (name, path, _, file) in entries(&root.join(kind).join(id)) {
                let temp = name.starts_with(TEMP_PREFIX)
                    || name.ends_with(".png.tmp.png")
                    || name.ends_with(".svg.tmp.svg");
                if temp && file {
                    std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_commit_puts_the_old_outputs_back() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/x.csv"), "old").unwrap();
        // `b` is a regular file, so the staged `b/y/z.csv` cannot be moved under it.
        std::fs::write(root.join("b"), "a file").unwrap();
        let stage = Stage::new(root, "test").unwrap();
        stage.write("a/x.csv", b"new").unwrap();
        stage.write("b/y/z.csv", b"new").unwrap();
        assert!(stage.commit(root, &["a", "b/y"]).is_err());
        assert_eq!(
            std::fs::read_to_string(root.join("a/x.csv")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_to_string(root.join("b")).unwrap(), "a file");
        let left: Vec<_> = std::fs::read_dir(root).unwrap().flatten().collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
