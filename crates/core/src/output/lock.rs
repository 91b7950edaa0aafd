//! The output folder's lock: one `reproduce` writes into a folder at a time.
//!
//! The lock is an advisory lock ([`std::fs::File::try_lock`]) on the file [`FILE`] in the output
//! root, held until the [`OutputLock`] is dropped or the process ends (however it ends, so a
//! killed run never leaves the folder locked). The file itself is left in place: removing it
//! would let a run that opened it just before lock a file no other run sees.

use crate::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The lock file's name in the output root.
pub const FILE: &str = ".normscope.lock";

/// The held lock of an output folder.
///
/// # Examples
///
/// A second lock on the same folder fails at once while the first is held:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::Error;
/// use normscope_core::output::lock::{FILE, OutputLock};
///
/// let root = tempfile::tempdir()?;
/// let out = root.path().join("out");
/// let lock = OutputLock::acquire(&out)?;
/// assert!(out.join(FILE).is_file());
/// assert!(matches!(OutputLock::acquire(&out), Err(Error::Busy { .. })));
/// drop(lock);
/// let _again = OutputLock::acquire(&out)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct OutputLock {
    _file: File,
}

impl OutputLock {
    /// Creates `root` if missing and locks it, or fails at once with [`Error::Busy`] if another
    /// process (or another lock in this one) holds it. A lock file that is not a regular file
    /// (a FIFO would block the open) is refused as bad input.
    pub fn acquire(root: &Path) -> Result<OutputLock> {
        let io_err = |path: &Path, source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(root).map_err(|e| io_err(root, e))?;
        let path = root.join(FILE);
        let not_regular = || {
            Error::invalid(
                "--out-dir",
                path.display(),
                format!(
                    "a folder whose {FILE} is a regular file (or absent); it is a FIFO, device, folder or link: remove it"
                ),
            )
        };
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.file_type().is_file()) {
            return Err(not_regular());
        }
        let mut opts = OpenOptions::new();
        opts.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Never block on a FIFO swapped in after the check above.
            opts.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
        }
        let file = opts.open(&path).map_err(|e| io_err(&path, e))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(not_regular());
        }
        match file.try_lock() {
            Ok(()) => Ok(OutputLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(Error::Busy {
                path: root.display().to_string(),
            }),
            Err(TryLockError::Error(e)) => Err(io_err(&path, e)),
        }
    }
}
