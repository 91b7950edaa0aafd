//! The `normscope` binary: parse, validate, run; exit 2 on bad input, 1 on other failures.

use clap::Parser;
use normscope::cli::{Cli, Command, ReproduceArgs};
use normscope::config::{RawModel, TheoryConfig};
use normscope::output::{atomic, table};
use normscope::run::{self, ExpandFormat};
use normscope::symbolic::Subs;
use normscope::{Error, analyses};
use std::io::Write;
use std::process::ExitCode;

fn emit(out: Option<&std::path::Path>, bytes: &[u8]) -> normscope::Result<()> {
    match out {
        Some(p) => atomic::write_bytes(p, bytes),
        None => std::io::stdout().write_all(bytes).map_err(|e| Error::Io {
            path: "<stdout>".into(),
            source: e,
        }),
    }
}

fn run(cli: Cli) -> normscope::Result<()> {
    let mut notes = Vec::new();
    let result = match cli
        .command
        .unwrap_or(Command::Reproduce(ReproduceArgs::default()))
    {
        Command::Theory(a) => {
            let raw: RawModel = a.model.raw();
            let cfg = TheoryConfig::new(&a.preset, &raw, &a.metrics, &a.layers)?;
            let rows = run::theory_rows(&cfg, &mut notes)?;
            let mut df = table::frame(rows)?;
            let mut buf = Vec::new();
            table::write_csv(&mut df, &mut buf)?;
            emit(a.out.as_deref(), &buf)
        }
        Command::Expand(a) => {
            let model = a.model.raw().check()?;
            let format = ExpandFormat::parse(&a.format)?;
            let subs = Subs::parse(&a.subs)?;
            let preset = normscope::config::parse_presets(&a.preset)?;
            if preset.len() != 1 {
                return Err(Error::invalid(
                    "--preset",
                    &a.preset,
                    "exactly one preset for expand",
                ));
            }
            let bytes = run::expand(&preset[0], &model, &subs, format, &mut notes)?;
            emit(a.out.as_deref(), &bytes)
        }
        Command::Presets => emit(None, run::presets_text().as_bytes()),
        Command::Reproduce(a) => analyses::reproduce(&a.out_dir, a.only.as_deref()),
    };
    for n in notes {
        eprintln!("note: {n}");
    }
    result
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(if e.is_bad_input() { 2 } else { 1 })
        }
    }
}
