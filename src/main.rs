//! The `normscope` binary: parse, validate, run; exit 2 on bad input, 1 on other failures.
//! The application lives in the library ([`normscope::app`]: the clap types, the checks, the
//! commands), shared with the Python package; this file parses the command line, installs the
//! interrupt handler and turns the result into an exit status. The benches are a separate
//! binary, `normscope-bench` (`crates/bench`); each analysis has a binary of its own
//! (`analyses/bin/`, `cargo run --release --bin warmup`).

#![deny(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    // A parse error is one line (`error: ... [possible values: ...]`), without the usage and
    // `--help` hint lines; help and version requests print as clap renders them. The ending is
    // the analysis binaries' too.
    normscope::analyses::binary::exit_status(
        normscope::app::parse(std::env::args_os()),
        normscope::app::dispatch,
    )
}
