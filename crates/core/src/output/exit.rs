//! How the binaries end: a clap parse error as one line (exit 2), help and version as clap
//! renders them (exit 1 with one line when they cannot be written), and a failed command as one `error:` line with exit status 2 for bad input
//! ([`crate::Error::is_bad_input`]), 141 for a closed pipe (the status a shell reports for a
//! tool ended by SIGPIPE) and 1 otherwise.

use super::console;
use crate::Result;
use std::process::ExitCode;

/// The exit status of a clap parse failure: help and version are printed as clap renders them
/// (exit 0, or 141 on a closed pipe; on a full device or another failure to write, one
/// `error: cannot write to standard output: ...` line on standard error and exit 1, a failure
/// of the environment); an error is printed as one line without the usage and `--help` hint
/// lines (exit 2).
#[cfg(feature = "cli")]
pub fn parse_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return match console::out(text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.is_closed_pipe() => ExitCode::from(141),
            Err(e) => {
                console::note(format_args!("error: {}", error_line(&e)));
                ExitCode::FAILURE
            }
        };
    }
    console::note(parse_error_line(&e));
    ExitCode::from(2)
}

/// A clap parse error on one line (`error: ... [possible values: ...]`), without the usage
/// and `--help` hint lines: what [`parse_error`] prints, and the Python package's `ValueError`.
#[cfg(feature = "cli")]
pub fn parse_error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    line.join(" ")
}

/// A failed command's error on one line (a cause such as a polars parse error may span
/// several), without the `error: ` that [`status`] puts before it.
pub fn error_line(e: &crate::Error) -> String {
    let text = e.to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    line.join(" ")
}

/// The exit status of a command's `result`: 0; 141 when the reader went away
/// (`normscope reproduce --list | head -1`: nothing to say); else the error on one line (a
/// cause such as a polars parse error may span several) and 2 for bad input, 1 otherwise.
pub fn status(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_closed_pipe() => ExitCode::from(141),
        Err(e) => {
            console::note(format_args!("error: {}", error_line(&e)));
            ExitCode::from(if e.is_bad_input() { 2 } else { 1 })
        }
    }
}
