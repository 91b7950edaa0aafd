//! Input files read with a bound: a file is opened only if it is a regular file, and read only
//! up to a size cap, so a FIFO never hangs a run and a device (`/dev/zero`) or an oversized file
//! is refused before its bytes are read.
//!
//! The caps, by kind of file:
//!
//! | kind | cap | read by |
//! |---|---|---|
//! | [`TEXT_CAP`] | 16 MiB | placement files, `--config` files, grid files, manifests, `shard.json`, the bench's script outputs |
//! | [`DATA_CAP`] | 1 GiB | a shard's result files and the tables and figures whose sha256 a manifest records |
//!
//! The file is opened non-blocking (a FIFO swapped in after the check is refused, not waited
//! on), checked again through its open handle, and read through a `take(cap + 1)`, so a file
//! that grows past the cap while it is read is refused as well.
//!
//! Numbers typed on the command line are read with [`literal_f64`], which refuses a number f64
//! cannot hold.

use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The size cap of text inputs (placement, config and grid files, manifests): 16 MiB.
pub const TEXT_CAP: u64 = 16 << 20;

/// The size cap of data inputs (a shard's result files, files hashed for a manifest): 1 GiB.
pub const DATA_CAP: u64 = 1 << 30;

/// Why a path cannot be read as an input, or `None` if it can: not a regular file (a folder,
/// FIFO, socket or device), or larger than `cap` bytes. A missing file is left to the read.
pub fn refusal(path: &Path, cap: u64) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    refusal_of(&meta, cap)
}

fn refusal_of(meta: &std::fs::Metadata, cap: u64) -> Option<String> {
    if !meta.is_file() {
        let t = meta.file_type();
        let kind = if t.is_dir() {
            "a folder"
        } else {
            kind_of_special(&t)
        };
        return Some(format!("it is {kind}, not a regular file"));
    }
    (meta.len() > cap).then(|| {
        format!(
            "it has {} bytes, more than the {} bytes an input may have",
            meta.len(),
            cap
        )
    })
}

#[cfg(unix)]
fn kind_of_special(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn kind_of_special(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// An input that could not be read: why, and whether it is the file's fault (refused: not a
/// regular file, too large) or the system's (an I/O error while reading).
///
/// # Examples
///
/// ```rust
/// use normscope_core::input::{read_capped, ReadError, TEXT_CAP};
/// let tmp = tempfile::tempdir()?;
/// let dir = tmp.path();
/// // A folder is refused; a missing file is the system's error.
/// match read_capped(dir, TEXT_CAP) {
///     Err(ReadError::Refused(why)) => assert_eq!(why, "it is a folder, not a regular file"),
///     other => panic!("{other:?}"),
/// }
/// let missing = read_capped(&dir.join("none.toml"), TEXT_CAP).unwrap_err();
/// assert!(matches!(&missing, ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound));
/// // A file over the cap is refused too.
/// let file = dir.join("a.txt");
/// std::fs::write(&file, "abcd")?;
/// assert_eq!(read_capped(&file, 4).unwrap(), b"abcd");
/// assert!(matches!(read_capped(&file, 3), Err(ReadError::Refused(_))));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub enum ReadError {
    /// Missing or unreadable: the I/O error.
    Io(std::io::Error),
    /// Not a regular file or too large: why, in words.
    Refused(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Refused(why) => f.write_str(why),
        }
    }
}

/// Reads the bytes of `path` if it is a regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> std::result::Result<Vec<u8>, ReadError> {
    if let Some(why) = refusal(path, cap) {
        return Err(ReadError::Refused(why));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never block on a FIFO swapped in after the check above.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if let Some(why) = refusal_of(&meta, cap) {
        return Err(ReadError::Refused(why));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::Refused(format!(
            "it grew past the {cap} bytes an input may have while it was read"
        )));
    }
    Ok(bytes)
}

/// [`read_capped`] as an [`Error::Io`] naming the file (an I/O failure, exit status 1) or, for a
/// refused file, [`Error::InvalidParam`] naming `field` (bad input, exit status 2).
pub fn read(path: &Path, field: &'static str, cap: u64) -> Result<Vec<u8>> {
    read_capped(path, cap).map_err(|e| match e {
        ReadError::Io(source) => Error::Io {
            path: path.display().to_string(),
            source,
        },
        ReadError::Refused(why) => Error::invalid(
            field,
            path.display(),
            format!("a regular file of at most {cap} bytes ({why})"),
        ),
    })
}

/// Reads `path` as UTF-8 text of at most [`TEXT_CAP`] bytes; the error is a message in words
/// (the caller names the file and field).
pub fn read_text(path: &Path) -> std::result::Result<String, String> {
    let bytes = read_capped(path, TEXT_CAP).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text ({e})"))
}

/// A number as typed, for every float flag: refused if f64 cannot hold it (`1e400` would read
/// as infinity, `1e-400` as zero), so a value is never silently another one. `inf` and `nan`
/// pass here and are refused by the flag's own check.
pub fn literal_f64(s: &str) -> std::result::Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s} is not a number"))?;
    let word = s.trim().trim_start_matches(['+', '-']).to_ascii_lowercase();
    let named = ["inf", "infinity", "nan"].contains(&word.as_str());
    if x.is_infinite() && !named {
        return Err(format!(
            "{s} is beyond f64's range (at most {:e} in magnitude)",
            f64::MAX
        ));
    }
    let mantissa = word.split(['e', 'E']).next().unwrap_or("");
    if x == 0.0 && mantissa.chars().any(|c| ('1'..='9').contains(&c)) {
        return Err(format!(
            "{s} is below f64's smallest number ({:e}) and would read as 0",
            f64::from_bits(1)
        ));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_under_the_cap_are_read_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        std::fs::write(&p, "x = 1\n").unwrap();
        assert_eq!(read_capped(&p, 6).unwrap(), b"x = 1\n");
        assert!(matches!(read_capped(&p, 5), Err(ReadError::Refused(_))));
        let why = read_text(dir.path()).unwrap_err();
        assert!(why.contains("a folder"), "{why}");
        assert!(matches!(
            read_capped(&dir.path().join("missing"), 6),
            Err(ReadError::Io(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_devices_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        normscope_numeric::sys::mkfifo(&fifo).unwrap();
        let why = read_text(&fifo).unwrap_err();
        assert!(why.contains("a FIFO"), "{why}");
        let why = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(why.contains("a device"), "{why}");
    }

    #[test]
    fn a_refusal_is_bad_input_naming_the_field() {
        let e = read(Path::new("/dev/null"), "--placements", TEXT_CAP).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("invalid --placements = /dev/null"), "{s}");
        assert!(e.is_bad_input());
    }
}
