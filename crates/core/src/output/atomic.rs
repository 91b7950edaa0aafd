//! Atomic file output: write a temporary file with a unique name (`.normscope-XXXXXX`) in the
//! target's directory, then rename it over the target, so a failure never leaves a partial or
//! truncated file. Every error names the target file (a full disk included).
//!
//! The temporary files in flight are registered: [`abandon`] (called by the binary's
//! SIGINT/SIGTERM handler through [`super::staging::abandon`]) removes them and blocks every
//! later rename, so an interrupted write neither lands nor leaves its temporary file.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The temporary files of this process being written now; the lock each rename holds.
static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temp_files() -> MutexGuard<'static, Vec<PathBuf>> {
    TEMP_FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary file of this process and blocks every later rename for good (a rename
/// under way finishes first). For a signal handler, right before the process exits.
pub fn abandon() {
    let reg = temp_files();
    for f in reg.iter() {
        let _ = std::fs::remove_file(f);
    }
    std::mem::forget(reg);
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Checks, before anything runs, that `path` can take a file the user asked for (`field`, e.g.
/// `--out`): its folder exists, and it is not a folder, symlink, FIFO or device (those are
/// never replaced). Bad input, so exit status 2.
pub fn check_target(field: &'static str, path: &Path) -> Result<()> {
    let text = path.as_os_str().to_string_lossy();
    if path.file_name().is_none() || text.ends_with('/') {
        return Err(Error::invalid(
            field,
            path.display(),
            "a path to a file, not a folder (it ends in / or ..)",
        ));
    }
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.file_type().is_file()
    {
        return Err(Error::invalid(
            field,
            path.display(),
            "a path to a regular file (an existing folder, symlink, FIFO or device is not replaced)",
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Error::invalid(
            field,
            path.display(),
            format!(
                "a path in an existing folder ({} is not one)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Creates `path`'s parent directories.
pub(crate) fn ensure_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    }
    Ok(())
}

/// Writes `path` atomically with the bytes produced by `fill`. A file it replaces keeps its
/// permission bits; a new file gets 0644.
pub(crate) fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    ensure_parent(path)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".normscope-")
        .tempfile_in(dir)
        .map_err(|e| io_err(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A replaced file keeps its permissions (a 0600 table stays private); a new one is 0644.
        let mode = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or(0o644, |m| m.permissions().mode() & 0o7777);
        let perms = std::fs::Permissions::from_mode(mode);
        tmp.as_file()
            .set_permissions(perms)
            .map_err(|e| io_err(path, e))?;
    }
    let name = tmp.path().to_path_buf();
    temp_files().push(name.clone());
    let filled = fill(tmp.as_file_mut())
        .and_then(|()| tmp.as_file_mut().flush().map_err(|e| io_err(path, e)));
    let mut reg = temp_files();
    reg.retain(|f| f != &name);
    filled?;
    tmp.persist(path).map_err(|e| io_err(path, e.error))?;
    drop(reg);
    Ok(())
}

/// Bytes per `write` call: a signal is handled when a system call returns, so one write of
/// hundreds of MB would hold an interrupt back until the file is complete.
const CHUNK: usize = 1 << 20;

/// Writes `bytes` to `out` atomically ([`write_bytes`]), or to standard output
/// ([`super::console::out`]) when there is no `out` (`--out -` or none given).
pub fn emit(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match out {
        Some(p) => write_bytes(p, bytes),
        None => super::console::out(bytes),
    }
}

/// Writes `bytes` to `path` atomically, in pieces of 1 MiB (a signal is handled between them).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |w| {
        bytes
            .chunks(CHUNK)
            .try_for_each(|c| w.write_all(c))
            .map_err(|e| io_err(path, e))
    })
}
