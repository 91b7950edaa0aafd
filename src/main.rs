//! The `normscope` binary: parse, validate, run; exit 2 on bad input, 1 on other failures.
//! The application lives here (clap types in [`cli`], `train`'s arguments in [`train`]);
//! everything it computes comes from the `normscope` library. The benches are a separate
//! binary, `normscope-bench` (`crates/bench`).

#![deny(unsafe_code)]

mod cli;
mod train;

use cli::{Cli, Command};
use normscope::analyses::runner::sidecar::encode_table;
use normscope::model::{RawModel, TheoryConfig};
use normscope::output::atomic::emit;
use normscope::output::{atomic, console, table};
use normscope::symbolic::Subs;
use normscope::symbolic::render;
use normscope::{Error, analyses};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Says the notes gathered so far on standard error, before an output file is written: if
/// they cannot be written the command fails (exit 2) and writes no file.
fn say_notes(notes: &mut Vec<String>) -> normscope::Result<()> {
    for n in notes.drain(..) {
        console::say(format_args!("note: {n}"))?;
    }
    Ok(())
}

type McRequest = (
    Vec<String>,
    normscope::monte_carlo::McConfig,
    Vec<normscope::metrics::Metric>,
    normscope::layers::LayerSpec,
);

/// Loads the `--placements` files of a command, before its presets are looked up.
fn load_placements(m: &cli::ModelArgs) -> normscope::Result<()> {
    normscope::placement::load_all(&m.placements)
}

/// An explicit `--norm layer|rms` that differs from the norm kind a placement file names for
/// one of `presets` is refused (the file's kind would win; `--norm identity` is honoured).
fn check_norm_flag(m: &cli::ModelArgs, presets: &[String]) -> normscope::Result<()> {
    let Some(k) = m.norm.filter(|&k| k != normscope::spec::NormKind::Identity) else {
        return Ok(());
    };
    for p in presets {
        if let Some(f) = normscope::placement::find(p)?.file()
            && f.has_norm
            && f.norm != k
        {
            return Err(Error::invalid(
                "--norm",
                k,
                format!(
                    "{} or identity for preset {} (its placement file {} names its norms {}; a file's norm kind is its own)",
                    f.norm, f.name, f.path, f.norm
                ),
            ));
        }
    }
    Ok(())
}

fn mc_request(a: &cli::McArgs) -> normscope::Result<McRequest> {
    load_placements(&a.model)?;
    let presets = normscope::model::parse_presets(&a.table.preset)?;
    check_norm_flag(&a.model, &presets)?;
    let cfg = normscope::monte_carlo::McConfig::new(&a.model.raw(), &a.sampling.raw())?;
    let metrics = normscope::metrics::Metric::parse_list(&a.table.metrics)?;
    let layers = normscope::layers::LayerSpec::parse(&a.table.layers)?;
    for m in &metrics {
        if let Some((least, why)) = m.info().min_tokens
            && cfg.model.branch.tokens < least
        {
            return Err(Error::invalid(
                "--tokens",
                cfg.model.branch.tokens,
                format!("at least {least} with --metrics {m} ({why})"),
            ));
        }
    }
    normscope::tables::check_mc_fits(&cfg, &metrics, &layers)?;
    Ok((presets, cfg, metrics, layers))
}

/// The `--out` of a command, checked before anything runs; `-` means standard output.
fn out_path(out: &Option<PathBuf>) -> normscope::Result<Option<&Path>> {
    match out.as_deref() {
        Some(p) if p.as_os_str() == "-" => Ok(None),
        Some(p) => atomic::check_target("--out", p).map(|()| Some(p)),
        None => Ok(None),
    }
}

fn dispatch(cli: Cli) -> normscope::Result<()> {
    let mut notes = Vec::new();
    // Bare `normscope` prints its help rather than starting a long run in the current folder.
    let Some(command) = cli.command else {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        return emit(None, help.as_bytes());
    };
    let result = match command {
        Command::Theory(a) => {
            let out = out_path(&a.table.out)?;
            load_placements(&a.model)?;
            let raw: RawModel = a.model.raw();
            let t = &a.table;
            let cfg = TheoryConfig::new(&t.preset, &raw, &t.metrics, &t.layers)?
                .with_finite_width(a.finite_width)?
                .with_batch(a.batch)?;
            check_norm_flag(&a.model, &cfg.presets)?;
            let rows = normscope::tables::theory_rows(&cfg, &mut notes)?;
            say_notes(&mut notes)?;
            analyses::runner::sidecar::emit_with_provenance(
                out,
                &encode_table(
                    table::Format::chosen(a.table.format, out)?,
                    &mut table::frame(rows)?,
                )?,
            )
        }
        Command::Expand(a) => {
            let out = out_path(&a.out)?;
            load_placements(&a.model)?;
            let model = a.model.raw().check()?;
            let subs = Subs::parse(&a.subs)?;
            let preset = normscope::model::parse_presets(&a.preset)?;
            check_norm_flag(&a.model, &preset)?;
            if preset.len() != 1 {
                return Err(Error::invalid(
                    "--preset",
                    &a.preset,
                    "exactly one preset for expand",
                ));
            }
            let bytes = render::render(&preset[0], &model, &subs, a.format, &mut notes)?;
            say_notes(&mut notes)?;
            analyses::runner::sidecar::emit_with_provenance(out, &bytes)
        }
        Command::Presets(a) => {
            normscope::placement::load_all(&a.placements)?;
            emit(None, normscope::placement::table().as_bytes())
        }
        Command::Mc(a) => {
            let out = out_path(&a.table.out)?;
            let (presets, cfg, metrics, layers) = mc_request(&a)?;
            let rows = normscope::tables::mc_rows(&presets, &cfg, &metrics, &layers, &mut notes)?;
            say_notes(&mut notes)?;
            analyses::runner::sidecar::emit_with_provenance(
                out,
                &encode_table(
                    table::Format::chosen(a.table.format, out)?,
                    &mut table::frame(rows)?,
                )?,
            )
        }
        Command::Train(a) => {
            let out = out_path(&a.out)?;
            let _ = normscope::numeric::sys::keep_freed_memory();
            train::train(&a, out)
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "normscope", &mut buf);
            emit(None, &buf)
        }
        Command::Compare(c) => {
            let a = &c.mc;
            let out = out_path(&a.table.out)?;
            let (presets, cfg, metrics, layers) = mc_request(a)?;
            let width = cfg.model.branch.width;
            if let Some(Some(d)) = c.finite_width
                && d != width
            {
                return Err(Error::invalid(
                    "--finite-width",
                    d,
                    format!(
                        "the networks' width {width} (--width), or no value: the correction is \
                         compared at the width Monte Carlo samples"
                    ),
                ));
            }
            let rows = normscope::compare::compare(
                &presets,
                &cfg,
                &metrics,
                &layers,
                c.finite_width.is_some(),
                &mut notes,
            )?;
            notes.push(normscope::compare::summary(&rows));
            let mut df = normscope::compare::compare_frame(&rows)?;
            say_notes(&mut notes)?;
            analyses::runner::sidecar::emit_with_provenance(
                out,
                &encode_table(table::Format::chosen(a.table.format, out)?, &mut df)?,
            )
        }
        Command::Reproduce(a) if a.list => {
            let mut text = String::new();
            for x in analyses::REGISTRY {
                let units = x.units.unwrap_or("the whole analysis, run by the merge");
                text.push_str(&format!("{}\t{}\tunit: {units}\n", x.id, x.about));
            }
            emit(None, text.as_bytes())
        }
        Command::Reproduce(a) => analyses::reproduce(&analyses::Request {
            root: a.out_dir,
            only: a.only,
            quick: a.quick,
            config: a.config,
            seed: a.seed,
            print_config: a.print_config,
            shard: a.shard.as_deref().map(str::parse).transpose()?,
        }),
        Command::Merge(a) => analyses::merge(&a.shards, &a.out_dir),
        Command::Slurm(a) => slurm(a),
        Command::Plot(a) => {
            use analyses::commands::plot;
            let filters: Vec<&str> = a.filters.iter().map(String::as_str).collect();
            let req = plot::Request {
                by: a.by,
                facet: a.facet,
                log_x: a.log_x,
                log_y: a.log_y,
                title: a.title,
                ..plot::Request::new(a.path, &a.x, &a.y, a.out)
            }
            .with_filters(&filters)?;
            notes.extend(plot::plot(&req)?);
            Ok(())
        }
        Command::Cite(a) => {
            let filters: Vec<&str> = a.filters.iter().map(String::as_str).collect();
            let req =
                analyses::commands::cite::Request::new(&a.path, &filters, a.column.as_deref())?;
            emit(None, analyses::commands::cite::cite(&req)?.as_bytes())
        }
    };
    for n in notes {
        console::note(format_args!("note: {n}"));
    }
    result.and_then(|()| console::failed())
}

/// `normscope slurm`: writes the scripts, and submits them with `--submit`.
fn slurm(a: cli::SlurmArgs) -> normscope::Result<()> {
    use normscope::analyses::slurm;
    let r = slurm::SlurmRequest {
        dir: a.dir.unwrap_or_else(|| format!("slurm-{}", a.only).into()),
        only: a.only,
        shards: a.shards,
        quick: a.quick,
        config: a.config,
        seed: a.seed,
        partition: a.partition,
        time: a.time,
        cpus_per_task: a.cpus_per_task,
        mem: a.mem,
        account: a.account,
        out_dir: a.out_dir,
        binary: a.binary,
    };
    // Said before the folder is created: a standard error that cannot be written leaves none.
    console::say(format_args!(
        "{} shards of {}: scripts into {}",
        r.shards,
        r.only,
        r.dir.display()
    ))?;
    let paths = slurm::write(&r)?;
    for p in &paths {
        console::say(format_args!("wrote {}", p.display()))?;
    }
    if a.submit {
        let (array, merge) = slurm::submit(&paths)?;
        emit(
            None,
            format!(
                "array job {array} ({} tasks), merge job {merge} (after every task succeeds)\n",
                r.shards
            )
            .as_bytes(),
        )
    } else {
        console::say(format_args!(
            "submit with: bash {}",
            slurm::quoted(&paths[2])
        ))
    }
}

/// A clap parse error as one line (`error: ... [possible values: ...]`), without the usage and
/// `--help` hint lines; help and version requests print as clap renders them.
fn parse_args() -> Result<Cli, ExitCode> {
    use clap::{CommandFactory, FromArgMatches};
    // `--layers -1` is a value (refused with a message about layers), not an unknown flag.
    Cli::command()
        .mut_subcommands(|s| s.allow_negative_numbers(true))
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(normscope::output::exit::parse_error)
}

/// SIGINT, SIGTERM, SIGHUP: discards the staging folders of a `reproduce` in flight (a write
/// or move already under way finishes first, so each analysis is in place whole or not at all)
/// and exits with status 130.
fn on_interrupt() {
    normscope::output::staging::abandon();
    let _ = writeln!(
        std::io::stderr(),
        "\ninterrupted: outputs not yet in place were discarded"
    );
    std::process::exit(130);
}

fn main() -> ExitCode {
    let cli = match parse_args() {
        Ok(c) => c,
        Err(code) => return code,
    };
    // Without the handler (it cannot be installed) a signal still ends the run, and the next
    // run removes its staging folders.
    let _ = ctrlc::set_handler(on_interrupt);
    normscope::output::exit::status(dispatch(cli))
}
