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

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> Error {
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
    let dir = dir_of(path);
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

/// The folder `path` is written into (`.` for a bare file name).
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A temporary file of this process (`.normscope-XXXXXX`), registered for [`abandon`] from its
/// creation until it is [`released`](Temp::release) to be renamed, or dropped, which removes it.
pub(crate) struct Temp(Option<tempfile::TempPath>);

impl Temp {
    /// Creates a temporary file with `make` (which returns it with what else it made) and
    /// registers it for [`abandon`], both under the registry's lock: a signal's [`abandon`]
    /// either runs before the file exists (and this call then waits for good: the process is
    /// exiting) or after it is registered, so no file is created that `abandon` misses.
    pub(crate) fn create<T>(
        make: impl FnOnce() -> std::io::Result<(T, tempfile::TempPath)>,
    ) -> std::io::Result<(T, Temp)> {
        let mut reg = temp_files();
        let (made, path) = make()?;
        reg.push(path.to_path_buf());
        Ok((made, Temp(Some(path))))
    }

    /// Takes the file out of the registry, whose lock `reg` ([`registry`]) the caller holds
    /// until the file is renamed; the returned path still removes the file when dropped.
    pub(crate) fn release(mut self, reg: &mut Vec<PathBuf>) -> tempfile::TempPath {
        let path = self.0.take().expect("a Temp holds its path until released");
        reg.retain(|f| f.as_path() != &*path);
        path
    }
}

impl Drop for Temp {
    /// Removes the file while the registry's lock is held, so that a signal's [`abandon`]
    /// never finds it unregistered and still on disk.
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let mut reg = temp_files();
            reg.retain(|f| f.as_path() != &*path);
            drop(path);
            drop(reg);
        }
    }
}

/// The lock of the registry of temporary files: while it is held no [`abandon`] runs (a
/// signal's exit waits), so renames made under it all land before the process exits.
pub(crate) fn registry() -> MutexGuard<'static, Vec<PathBuf>> {
    temp_files()
}

/// A temporary file beside `path` holding the bytes produced by `fill`, flushed, and with
/// `durable` synced to disk (`fsync`), so that an error of a full disk shows here, before any
/// rename. It has the permission bits of the file at `path` it will replace, or 0644.
pub(crate) fn temp_with(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<Temp> {
    ensure_parent(path)?;
    let (mut file, temp) = Temp::create(|| {
        tempfile::Builder::new()
            .prefix(".normscope-")
            .tempfile_in(dir_of(path))
            .map(tempfile::NamedTempFile::into_parts)
    })
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
        file.set_permissions(perms).map_err(|e| io_err(path, e))?;
    }
    fill(&mut file)?;
    file.flush().map_err(|e| io_err(path, e))?;
    if durable {
        file.sync_all().map_err(|e| io_err(path, e))?;
    }
    Ok(temp)
}

/// Writes `path` atomically with the bytes produced by `fill`. A file it replaces keeps its
/// permission bits; a new file gets 0644.
pub(crate) fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let temp = temp_with(path, false, fill)?;
    let mut reg = registry();
    temp.release(&mut reg)
        .persist(path)
        .map_err(|e| io_err(path, e.error))?;
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
    write_with(path, |w| write_chunks(w, path, bytes))
}

/// Writes `bytes` to `w` in pieces of 1 MiB; an error names `path`.
pub(crate) fn write_chunks(w: &mut dyn Write, path: &Path, bytes: &[u8]) -> Result<()> {
    bytes
        .chunks(CHUNK)
        .try_for_each(|c| w.write_all(c))
        .map_err(|e| io_err(path, e))
}
