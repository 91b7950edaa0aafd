//! A file and its companion (a `--out` file and its provenance sidecar
//! `FILE.manifest.json`) written together: both land, or the old pair stays.
//!
//! [`check_pair`] refuses, before anything runs, a companion path that could never be written
//! as one: a folder, symlink, FIFO or device there (as [`atomic::check_target`] refuses them at
//! the file's own path), or a companion name longer than its file system takes (`NAME_MAX`,
//! 255 bytes on common file systems) while the file's own name would fit.
//!
//! [`write_pair`] then takes these steps, all in the file's folder:
//!
//! 1. the companion's bytes go to a temporary file (`.normscope-XXXXXX`), flushed and synced
//!    to disk (`fsync`, so that a full disk fails here);
//! 2. the same for the file's bytes;
//! 3. an old companion, if there is one, gets a second name, a temporary hard link (or, on a
//!    file system without hard links, a synced temporary copy);
//! 4. the companion's temporary file is renamed over the companion, and the folder synced;
//! 5. the file's temporary file is renamed over the file, and the folder synced;
//! 6. the second name of the old companion is removed.
//!
//! Each rename replaces its target in one step (`rename(2)`), so at no time is either path
//! missing or partly written. Which pair is there:
//!
//! - **An error** (returned; the command exits 1): at steps 1 to 4, the old pair, untouched,
//!   and no temporary file. At step 5, the old companion is put back from its second name (or
//!   the new companion removed if there was none before): the old pair again. Only if that
//!   rename fails as well (the folder became unwritable in between) does a new companion stand
//!   beside the old file: the old file's bytes are still there, and the mismatch is detectable
//!   as below.
//! - **A signal** (SIGINT, SIGTERM, SIGHUP: the binary's handler calls
//!   [`super::staging::abandon`]): the temporary files are registered with
//!   [`atomic::abandon`], and steps 4 to 6 run under the registry's lock, which `abandon`
//!   takes first. A signal before step 4 removes the temporary files: the old pair. A signal
//!   during steps 4 to 6 waits until they are done: the new pair. The two renames are never
//!   separated by a signal's exit.
//! - **A crash** (`kill -9`, power loss; no handler runs): before step 4, the old pair, and
//!   temporary files `.normscope-XXXXXX` left in the folder. Between steps 4 and 5, the new
//!   companion beside the old file: the user's old bytes are never lost, and the pair is
//!   detectably mismatched, because the companion records the sha256 of the file it describes
//!   (a provenance sidecar's `sha256`), which the old file does not have. After step 5, the new
//!   pair (and perhaps the temporary second name of the old companion). The folder is synced
//!   after each rename (where its file system allows), so after a power loss the renames on
//!   disk are a prefix of the ones made: the same three states.
//!
//! Whatever the outcome, the file never stands beside a companion that was written for other
//! bytes without the old bytes of the file being the ones there: a new file always has its
//! new companion.

use super::atomic::{self, Temp, io_err};
use crate::{Error, Result};
use std::path::Path;

/// The limit on a file name, in bytes, where the file system does not state its own: Linux's
/// `NAME_MAX`.
pub const NAME_MAX: u64 = 255;

/// Checks, before anything runs, that `path` (the value of `field`, e.g. `--out`) and its
/// `companion` (described as `what`, e.g. `provenance sidecar`) can be written as a pair:
/// `path` passes [`atomic::check_target`], nothing but a regular file is at `companion` (an
/// existing folder, symlink, FIFO or device is never replaced), and the companion's name fits
/// the file system's limit on names. Bad input, so exit status 2; the message names `field`,
/// and the companion's path when that path is the problem.
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::pair::check_pair;
/// let dir = tempfile::tempdir().unwrap();
/// let out = dir.path().join("t.csv");
/// let side = dir.path().join("t.csv.manifest.json");
/// assert!(check_pair("--out", &out, &side, "provenance sidecar").is_ok());
/// std::fs::create_dir(&side).unwrap();
/// let e = check_pair("--out", &out, &side, "provenance sidecar").unwrap_err();
/// assert!(e.is_bad_input() && e.to_string().contains("t.csv.manifest.json"));
/// ```
pub fn check_pair(field: &'static str, path: &Path, companion: &Path, what: &str) -> Result<()> {
    atomic::check_target(field, path)?;
    if let Ok(meta) = std::fs::symlink_metadata(companion)
        && !meta.file_type().is_file()
    {
        let t = meta.file_type();
        let kind = if t.is_symlink() {
            "a symlink"
        } else if t.is_dir() {
            "a folder"
        } else {
            "a FIFO, socket or device"
        };
        return Err(Error::invalid(
            field,
            companion.display(),
            format!(
                "a file whose {what} (this path) is absent or a regular file; it is {kind}, \
                 and an existing folder, symlink, FIFO or device is never replaced"
            ),
        ));
    }
    let len = |p: &Path| p.file_name().map_or(0, |n| n.len() as u64);
    let max = normscope_numeric::sys::name_max(atomic::dir_of(path)).unwrap_or(NAME_MAX);
    let extra = len(companion).saturating_sub(len(path));
    if len(companion) > max {
        return Err(Error::invalid(
            field,
            path.display(),
            format!(
                "a file name of at most {} bytes (this one has {}): its {what} adds {extra} \
                 bytes to it, and a name in this folder may have at most {max}",
                max.saturating_sub(extra),
                len(path)
            ),
        ));
    }
    Ok(())
}

/// Writes `bytes` to `path` and `companion_bytes` to `companion` (in the same folder) so that
/// both land or neither: the steps and the guarantee at each are in the module documentation.
/// An error names the path that failed (exit status 1).
///
/// # Examples
///
/// ```rust
/// use normscope_core::output::pair::write_pair;
/// let dir = tempfile::tempdir().unwrap();
/// let (out, side) = (dir.path().join("t.csv"), dir.path().join("t.csv.manifest.json"));
/// write_pair(&out, b"x\n1\n", &side, b"{}\n").unwrap();
/// assert_eq!(std::fs::read(&out).unwrap(), b"x\n1\n");
/// assert_eq!(std::fs::read(&side).unwrap(), b"{}\n");
/// // A companion that cannot land (here a folder in its place) leaves the old file as it was.
/// std::fs::remove_file(&side).unwrap();
/// std::fs::create_dir(&side).unwrap();
/// assert!(write_pair(&out, b"x\n2\n", &side, b"{}\n").is_err());
/// assert_eq!(std::fs::read(&out).unwrap(), b"x\n1\n");
/// ```
pub fn write_pair(
    path: &Path,
    bytes: &[u8],
    companion: &Path,
    companion_bytes: &[u8],
) -> Result<()> {
    write_pair_with(path, bytes, companion, companion_bytes, &mut |_| Ok(()))
}

/// A step of [`write_pair`], as the module documentation numbers them (a test fails one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    CompanionTemp,
    FileTemp,
    Backup,
    CompanionRename,
    FileRename,
}

/// [`write_pair`], with `fault` called right before each step: an error it returns fails that
/// step.
fn write_pair_with(
    path: &Path,
    bytes: &[u8],
    companion: &Path,
    companion_bytes: &[u8],
    fault: &mut dyn FnMut(Step) -> std::io::Result<()>,
) -> Result<()> {
    let mut at = |step: Step, target: &Path| fault(step).map_err(|e| io_err(target, e));
    let side = atomic::temp_with(companion, true, |w| {
        at(Step::CompanionTemp, companion)?;
        atomic::write_chunks(w, companion, companion_bytes)
    })?;
    let file = atomic::temp_with(path, true, |w| {
        at(Step::FileTemp, path)?;
        atomic::write_chunks(w, path, bytes)
    })?;
    at(Step::Backup, companion)?;
    let old = second_name(companion)?;
    let dir = atomic::dir_of(path);
    let mut reg = atomic::registry();
    let (side, file) = (side.release(&mut reg), file.release(&mut reg));
    let old = old.map(|o| o.release(&mut reg));
    at(Step::CompanionRename, companion)?;
    side.persist(companion)
        .map_err(|e| io_err(companion, e.error))?;
    sync_dir(dir);
    let landed = at(Step::FileRename, path)
        .and_then(|()| file.persist(path).map_err(|e| io_err(path, e.error)));
    // On failure, the old companion goes back (best effort): the old pair again. On success,
    // its second name goes, before the lock does (a signal's exit would miss it after).
    match (&landed, old) {
        (Err(_), Some(old)) => {
            let _ = old.persist(companion);
        }
        (Err(_), None) => {
            let _ = std::fs::remove_file(companion);
        }
        (Ok(()), old) => drop(old),
    }
    sync_dir(dir);
    drop(reg);
    landed
}

/// A second name for the companion there now, if any, so that it can be put back: a hard
/// link, or a copy where the file system has no hard links.
fn second_name(companion: &Path) -> Result<Option<Temp>> {
    match std::fs::symlink_metadata(companion) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(companion, e)),
        Ok(m) if !m.file_type().is_file() => {
            return Err(io_err(
                companion,
                std::io::Error::other("no longer a regular file; it is never replaced"),
            ));
        }
        Ok(_) => {}
    }
    let linked = Temp::create(|| {
        tempfile::Builder::new()
            .prefix(".normscope-")
            .make_in(atomic::dir_of(companion), |p| {
                std::fs::hard_link(companion, p)
            })
            .map(|link| ((), link.into_temp_path()))
    });
    if let Ok(((), link)) = linked {
        return Ok(Some(link));
    }
    let old = crate::input::read_capped(companion, crate::input::TEXT_CAP).map_err(|e| {
        io_err(
            companion,
            std::io::Error::other(format!("cannot keep a copy to put back on failure: {e}")),
        )
    })?;
    atomic::temp_with(companion, true, |w| {
        atomic::write_chunks(w, companion, &old)
    })
    .map(Some)
}

/// Syncs folder `dir` to disk, so that the renames in it are; where the file system does not
/// allow it, nothing (the renames are made either way).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: [Step; 5] = [
        Step::CompanionTemp,
        Step::FileTemp,
        Step::Backup,
        Step::CompanionRename,
        Step::FileRename,
    ];

    /// Each file in `dir` by name, with its bytes.
    fn contents(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_failure_at_any_step_leaves_the_old_pair() {
        for old_companion in [true, false] {
            for failing in STEPS {
                let dir = tempfile::tempdir().unwrap();
                let (out, side) = (dir.path().join("t.csv"), dir.path().join("t.csv.json"));
                std::fs::write(&out, "old file").unwrap();
                if old_companion {
                    std::fs::write(&side, "old companion").unwrap();
                }
                let before = contents(dir.path());
                let mut seen = Vec::new();
                let err = write_pair_with(&out, b"new file", &side, b"new companion", &mut |s| {
                    seen.push(s);
                    if s == failing {
                        Err(std::io::Error::other("injected"))
                    } else {
                        Ok(())
                    }
                })
                .unwrap_err();
                let case = format!("failing at {failing:?}, old companion {old_companion}");
                assert_eq!(seen.last(), Some(&failing), "{case}");
                let named = if failing == Step::FileRename || failing == Step::FileTemp {
                    &out
                } else {
                    &side
                };
                assert_eq!(
                    err.to_string(),
                    format!("{}: injected", named.display()),
                    "{case}"
                );
                // The old pair, byte for byte, and no file more or less.
                assert_eq!(contents(dir.path()), before, "{case}");
            }
        }
    }

    #[test]
    fn both_land_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let (out, side) = (dir.path().join("t.csv"), dir.path().join("t.csv.json"));
        std::fs::write(&out, "old file").unwrap();
        std::fs::write(&side, "old companion").unwrap();
        let mut seen = Vec::new();
        write_pair_with(&out, b"new file", &side, b"new companion", &mut |s| {
            seen.push(s);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, STEPS);
        let want = [("t.csv", "new file"), ("t.csv.json", "new companion")]
            .map(|(n, b)| (n.to_string(), b.as_bytes().to_vec()));
        assert_eq!(contents(dir.path()), want.into());
    }

    #[test]
    fn a_companion_name_past_the_limit_is_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a".repeat(249));
        let side = dir
            .path()
            .join(format!("{}.manifest.json", "a".repeat(249)));
        let e = check_pair("--out", &out, &side, "provenance sidecar").unwrap_err();
        assert!(e.is_bad_input());
        let text = e.to_string();
        assert!(
            text.starts_with("invalid --out = ") && text.contains("at most 241 bytes"),
            "{text}"
        );
        assert!(
            check_pair(
                "--out",
                &dir.path().join("a".repeat(241)),
                &dir.path()
                    .join(format!("{}.manifest.json", "a".repeat(241))),
                "provenance sidecar"
            )
            .is_ok()
        );
    }
}
