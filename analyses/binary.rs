//! The analysis binaries' one entry point. `cargo run --release --bin warmup` (and the binary
//! of every other id of [`crate::REGISTRY`], `analyses/bin/<id>.rs`) runs that analysis as
//! `normscope reproduce --only warmup` does: the same flags ([`RunArgs`]), the same
//! validation, and the same files byte for byte, its manifests recording the `normscope
//! reproduce --only <id>` line the binary stands for. Exit statuses are the `normscope`
//! binary's ([`normscope_core::output::exit`]).

use crate::commands::args::RunArgs;
use crate::{Analysis, manifest};
use clap::{Args, FromArgMatches};
use normscope_core::output::{console, exit, staging};
use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the analysis `id` with the process's command line; what `analyses/bin/<id>.rs` calls.
///
/// # Panics
///
/// If `id` is not in [`crate::REGISTRY`] (a binary of an analysis that does not exist).
pub fn main(id: &str) -> ExitCode {
    run(id, std::env::args_os())
}

/// [`main`] with the arguments `args` (`args[0]` is the program's name).
pub fn run(id: &str, args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let analysis = crate::find(id).expect("an analysis binary names a registered analysis");
    let args: Vec<OsString> = args.into_iter().collect();
    let parsed = command(analysis)
        .try_get_matches_from(&args)
        .and_then(|m| RunArgs::from_arg_matches(&m));
    exit_status(parsed, |run_args| {
        let standing_for = ["reproduce", "--only", analysis.id]
            .into_iter()
            .map(String::from)
            .chain(
                args.iter()
                    .skip(1)
                    .map(|a| a.to_string_lossy().into_owned()),
            );
        let invocation = manifest::invocation_of(standing_for);
        crate::reproduce(&run_args.request(vec![analysis.id.to_string()], Some(invocation))?)
    })
}

/// How every binary of the workspace ends (`normscope` and the analysis binaries): a parse
/// error as one line (exit 2; help and version printed as clap renders them), else the
/// interrupt handler installed ([`staging::exit_on_interrupt`]), `run`, and its result as an
/// exit status ([`exit::status`]), a note that could not be written failing the run
/// ([`console::failed`]).
pub fn exit_status<T>(
    parsed: Result<T, clap::Error>,
    run: impl FnOnce(T) -> normscope_core::Result<()>,
) -> ExitCode {
    let t = match parsed {
        Ok(t) => t,
        Err(e) => return exit::parse_error(e),
    };
    // Without the handler (it cannot be installed) a signal still ends the run, and the next
    // run removes its staging folders.
    let _ = ctrlc::set_handler(staging::exit_on_interrupt);
    exit::status(run(t).and_then(|()| console::failed()))
}

/// The analysis's command line: [`RunArgs`] under its id, with its own help.
///
/// # Examples
///
/// ```rust
/// let warmup = normscope_analyses::find("warmup")?;
/// let help = normscope_analyses::binary::command(warmup).render_long_help().to_string();
/// assert!(help.contains("Serves claim 6 of the claims ledger"));
/// assert!(help.contains("normscope reproduce --only warmup"));
/// assert!(help.contains("--print-config"));
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn command(a: &'static Analysis) -> clap::Command {
    // The flags first: their struct's doc would otherwise replace the about lines.
    RunArgs::augment_args(clap::Command::new(a.id))
        .version(manifest::VERSION)
        .about(format!("{}: {}", a.id, a.about))
        .long_about(long_about(a))
        .after_help(examples(a.id))
}

/// What the analysis computes, what it stands for and which claims it serves.
fn long_about(a: &Analysis) -> String {
    let serves = match a.claims {
        [] => "No verdict of the claims ledger reads its tables.".to_string(),
        [c] => format!("Serves claim {c} of the claims ledger (data/claims/claims.md)."),
        many => format!(
            "Serves claims {} of the claims ledger (data/claims/claims.md).",
            many.iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let unit = match a.units {
        Some(u) => format!("Its work unit for --shard: {u}."),
        None => "Its work unit for --shard: the whole analysis, run by the merge.".to_string(),
    };
    format!(
        "{id}: {about}.\n\n{serves}\n\nRuns as `normscope reproduce --only {id}` does, with the same \
         flags, and writes the same files byte for byte: DIR/data/{id}/ (tables and \
         manifest.json) and DIR/figures/{id}/. {unit}",
        id = a.id,
        about = a.about,
    )
}

/// The help's examples, with this binary's name.
fn examples(id: &str) -> String {
    format!(
        "Examples:
  cargo run --release --bin {id}                                  # into ./data and ./figures
  cargo run --release --bin {id} -- --quick --out-dir /tmp/ns     # reduced settings
  cargo run --release --bin {id} -- --print-config > {id}.toml    # the configuration to edit
  cargo run --release --bin {id} -- --config {id}.toml --seed 7 --out-dir /tmp/ns"
    )
}
