//! Atomic file output: write a temporary file with a unique name (`.normscope-XXXXXX`) in the
//! target's directory, then rename it over the target, so a failure never leaves a partial or
//! truncated file. Every error names the target file (a full disk included).

use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

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
pub fn ensure_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    }
    Ok(())
}

/// Writes `path` atomically with the bytes produced by `fill`.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
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
        let perms = std::fs::Permissions::from_mode(0o644);
        tmp.as_file()
            .set_permissions(perms)
            .map_err(|e| io_err(path, e))?;
    }
    fill(tmp.as_file_mut())?;
    tmp.as_file_mut().flush().map_err(|e| io_err(path, e))?;
    tmp.persist(path).map_err(|e| io_err(path, e.error))?;
    Ok(())
}

/// Writes `bytes` to `path` atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |w| w.write_all(bytes).map_err(|e| io_err(path, e)))
}
