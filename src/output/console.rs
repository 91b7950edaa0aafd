//! Standard output and standard error without panics: `println!` panics when the reader of a
//! pipe has gone (`normscope reproduce --list | head -1`) or the device is full
//! (`> /dev/full`). Here every write returns [`Error::Console`] instead: the binary ends a
//! closed pipe quietly with status 141 (128 + SIGPIPE, what a shell reports for a tool killed by
//! the signal) and any other failure with status 2, before an output folder is written (a
//! `reproduce` says its first line before it creates the folder).
//!
//! [`note`] is for messages in the middle of work that cannot stop it (a note under a
//! progress line): a failure is remembered, and [`failed`] reports it when the work is done.

use crate::{Error, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a [`note`] could not be written.
static NOTE_FAILED: AtomicBool = AtomicBool::new(false);

fn console_err(stream: &'static str, source: std::io::Error) -> Error {
    Error::Console { stream, source }
}

/// Writes `bytes` to standard output and flushes it.
pub fn out(bytes: &[u8]) -> Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes)
        .and_then(|()| o.flush())
        .map_err(|e| console_err("standard output", e))
}

/// Writes `line` and a newline to standard error.
pub fn say(line: impl std::fmt::Display) -> Result<()> {
    let mut e = std::io::stderr().lock();
    writeln!(e, "{line}")
        .and_then(|()| e.flush())
        .map_err(|e| console_err("standard error", e))
}

/// Writes `line` to standard error; a failure is remembered for [`failed`], not returned.
pub fn note(line: impl std::fmt::Display) {
    if say(line).is_err() {
        NOTE_FAILED.store(true, Ordering::Relaxed);
    }
}

/// [`Error::Console`] if a [`note`] could not be written since the process started.
pub fn failed() -> Result<()> {
    if NOTE_FAILED.load(Ordering::Relaxed) {
        Err(console_err(
            "standard error",
            std::io::Error::other("a message could not be written"),
        ))
    } else {
        Ok(())
    }
}
