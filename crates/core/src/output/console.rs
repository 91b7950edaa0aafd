//! Standard output and standard error without panics: `println!` panics when the reader of a
//! pipe has gone (`normscope reproduce --list | head -1`) or the device is full
//! (`> /dev/full`). Here every write returns [`Error::Console`] instead: the binary ends a
//! closed pipe quietly with status 141 (128 + SIGPIPE, what a shell reports for a tool killed by
//! the signal) and any other failure with status 1 (the environment failed, as for `--help >
//! /dev/full`; a bad input whose error cannot be written keeps its status 2), before an output folder is written (a
//! `reproduce` says its first line before it creates the folder).
//!
//! [`note`] is for messages in the middle of work that cannot stop it (a note under a
//! progress line): a failure is remembered, and [`failed`] reports it when the work is done.

use crate::{Error, Result};
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// Whether a [`note`] could not be written: 0 no, 1 yes, 2 because the reader went away.
static NOTE_FAILED: AtomicU8 = AtomicU8::new(0);

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
    if let Err(e) = say(line) {
        let code = if e.is_closed_pipe() { 2 } else { 1 };
        NOTE_FAILED.fetch_max(code, Ordering::Relaxed);
    }
}

/// [`Error::Console`] if a [`note`] could not be written since the process started.
pub fn failed() -> Result<()> {
    let kind = match NOTE_FAILED.load(Ordering::Relaxed) {
        0 => return Ok(()),
        2 => std::io::ErrorKind::BrokenPipe,
        _ => std::io::ErrorKind::Other,
    };
    Err(console_err(
        "standard error",
        std::io::Error::new(kind, "a message could not be written"),
    ))
}
