//! The application behind the `normscope` binary and the Python package: the clap types
//! ([`cli`], `train`'s flags in [`train`]), the checks every command makes before it runs, and
//! [`run`], which turns a parsed [`Command`] into what it produced ([`Outcome`]). The binary
//! writes an outcome ([`write()`]); the Python package (`python/`) also returns its table as a
//! polars DataFrame. Both parse the same arguments ([`parse`]) with the same defaults, so a
//! setting means the same thing, and is refused with the same message, in either.

pub mod cli;
pub mod python;
pub mod train;

use crate::analyses::runner::sidecar::{check_out, emit_with_provenance, encode_table};
use crate::model::{RawModel, TheoryConfig};
use crate::output::atomic::emit;
use crate::output::{console, table};
use crate::symbolic::Subs;
use crate::symbolic::render;
use crate::{Error, analyses};
use cli::{Cli, Command};
use polars::prelude::DataFrame;
use std::path::{Path, PathBuf};

/// What a command produced, before it is written.
///
/// # Examples
///
/// `normscope theory` produces a tidy table, one row per preset, metric and layer:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope::app::{Produced, parse, run};
///
/// let args = ["normscope", "theory", "--preset", "pre,post", "--depth", "4",
///             "--metrics", "stream_sq", "--layers", "last"];
/// let mut notes = Vec::new();
/// let outcome = run(parse(args)?.command.unwrap(), &mut notes)?;
/// let Produced::Table { frame, .. } = &outcome.produced else { panic!() };
/// assert_eq!(frame.height(), 2);
/// assert_eq!(frame.column("preset")?.str()?.get(1), Some("pre")); // sorted: post, pre
/// # Ok(())
/// # }
/// ```
pub enum Produced {
    /// A tidy table, encoded by `format` when written ([`table::Format::chosen`]'s rules
    /// apply to `None`); `after` is text said on standard error once the table is written
    /// (`train`'s summary).
    Table {
        /// The table.
        frame: DataFrame,
        /// `--format`, if the command has one and it was given.
        format: Option<table::Format>,
        /// Said on standard error after the table is written.
        after: Option<String>,
    },
    /// Bytes written as they are (`expand`'s rendering, help text, completions).
    Bytes(Vec<u8>),
    /// Everything is written already (`reproduce`, `merge`, `slurm`, `plot`, `--dump-init`).
    Done,
}

/// A command's output and where it goes.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope::app::{Produced, parse, run};
///
/// let cli = parse(["normscope", "expand", "--preset", "post", "--depth", "2", "--format", "csv"])?;
/// let outcome = run(cli.command.unwrap(), &mut Vec::new())?;
/// assert!(outcome.out.is_none() && outcome.provenance);
/// let Produced::Bytes(csv) = &outcome.produced else { panic!() };
/// assert!(csv.starts_with(b"preset,depth,layer,source,expression,latex,value,missing\n"));
/// # Ok(())
/// # }
/// ```
pub struct Outcome {
    /// What the command produced.
    pub produced: Produced,
    /// `--out`, checked before the command ran; `None` is standard output.
    pub out: Option<PathBuf>,
    /// Whether a file written to `out` gets its provenance (a `FILE.manifest.json` sidecar;
    /// Parquet's own metadata).
    pub provenance: bool,
}

impl Outcome {
    fn table(frame: DataFrame, format: Option<table::Format>, out: Option<&Path>) -> Self {
        Outcome {
            produced: Produced::Table {
                frame,
                format,
                after: None,
            },
            out: out.map(Path::to_path_buf),
            provenance: true,
        }
    }

    fn done() -> Self {
        Outcome {
            produced: Produced::Done,
            out: None,
            provenance: false,
        }
    }

    fn stdout(bytes: Vec<u8>) -> Self {
        Outcome {
            produced: Produced::Bytes(bytes),
            out: None,
            provenance: false,
        }
    }
}

/// Parses a command line (`args[0]` is the program's name) as the binary does: `--layers -1`
/// is a value, refused by the layer parser, not an unknown flag. A parse error keeps clap's
/// message; [`crate::output::exit::parse_error`] shortens it to one line.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    Cli::command()
        .mut_subcommands(|s| s.allow_negative_numbers(true))
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
}

/// Says the notes gathered so far on standard error, before an output file is written: if
/// they cannot be written the command fails (exit 1, the environment's failure) and writes no
/// file.
fn say_notes(notes: &mut Vec<String>) -> crate::Result<()> {
    for n in notes.drain(..) {
        console::say(format_args!("note: {n}"))?;
    }
    Ok(())
}

type McRequest = (
    Vec<&'static crate::placement::Preset>,
    crate::monte_carlo::McConfig,
    Vec<crate::metrics::Metric>,
    crate::layers::LayerSpec,
);

/// Loads the `--placements` files of a command, before its presets are looked up.
fn load_placements(m: &cli::ModelArgs) -> crate::Result<()> {
    crate::placement::load_all(&m.placements)
}

/// An explicit `--norm` that differs from the norm kind a placement file names for one of
/// `presets` is refused ([`crate::placement::Preset::check_norm`]: the file's kind would win;
/// `--norm identity` is honoured).
fn check_norm_flag(m: &cli::ModelArgs, presets: &[&crate::placement::Preset]) -> crate::Result<()> {
    let Some(k) = m.norm else {
        return Ok(());
    };
    for p in presets {
        p.check_norm(k, "--norm")?;
    }
    Ok(())
}

fn mc_request(a: &cli::McArgs) -> crate::Result<McRequest> {
    load_placements(&a.model)?;
    let presets = crate::model::parse_presets(&a.table.preset)?;
    check_norm_flag(&a.model, &presets)?;
    let cfg = crate::monte_carlo::McConfig::new(&a.model.raw(), &a.sampling.raw())?;
    let metrics = crate::metrics::Metric::parse_list(&a.table.metrics)?;
    let layers = crate::layers::LayerSpec::parse(&a.table.layers)?;
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
    crate::tables::check_mc_fits(&cfg, &metrics, &layers)?;
    Ok((presets, cfg, metrics, layers))
}

/// The `--out` of a command, checked before anything runs, with the path of its sidecar
/// ([`check_out`]); `-` means standard output.
fn out_path(out: &Option<PathBuf>) -> crate::Result<Option<&Path>> {
    match out.as_deref() {
        Some(p) if p.as_os_str() == "-" => Ok(None),
        Some(p) => check_out(p).map(|()| Some(p)),
        None => Ok(None),
    }
}

/// The coefficients of `normscope expand`'s settings as the table `--format csv` writes
/// (`preset,depth,layer,source,expression,latex,value,missing`), its LaTeX rendering, and,
/// when `--out` is given, the outcome the command writes there (in `--format`); one expansion
/// for all three.
pub fn expand_both(
    a: &cli::ExpandArgs,
    notes: &mut Vec<String>,
) -> crate::Result<(DataFrame, String, Option<Outcome>)> {
    let out = out_path(&a.out)?.map(Path::to_path_buf);
    let (preset, model, subs) = expand_request(a)?;
    let (frame, mut texts) = render::coefficients(
        preset,
        &model,
        &subs,
        &[render::Format::Latex, a.format],
        notes,
    )?;
    let bytes = texts.pop().unwrap_or_default();
    let latex = String::from_utf8_lossy(&texts.pop().unwrap_or_default()).into_owned();
    let outcome = out.map(|out| Outcome {
        produced: Produced::Bytes(bytes),
        out: Some(out),
        provenance: true,
    });
    Ok((frame, latex, outcome))
}

fn expand_request(
    a: &cli::ExpandArgs,
) -> crate::Result<(
    &'static crate::placement::Preset,
    crate::model::ModelConfig,
    Subs,
)> {
    load_placements(&a.model)?;
    let model = a.model.raw().check()?;
    let subs = Subs::parse(&a.subs)?;
    let preset = crate::model::parse_presets(&a.preset)?;
    check_norm_flag(&a.model, &preset)?;
    if preset.len() != 1 {
        return Err(Error::invalid(
            "--preset",
            &a.preset,
            "exactly one preset for expand",
        ));
    }
    Ok((preset[0], model, subs))
}

/// Runs `command` after checking its settings and its `--out`; notes for standard error
/// gather in `notes`. Nothing is written except by the commands that write their own files
/// (`reproduce`, `merge`, `slurm`, `plot`, `train --dump-init`); [`write()`] writes the rest.
pub fn run(command: Command, notes: &mut Vec<String>) -> crate::Result<Outcome> {
    Ok(match command {
        Command::Theory(a) => {
            let out = out_path(&a.table.out)?;
            load_placements(&a.model)?;
            let raw: RawModel = a.model.raw();
            let t = &a.table;
            let cfg = TheoryConfig::new(&t.preset, &raw, &t.metrics, &t.layers)?
                .with_finite_width(a.finite_width)?
                .with_batch(a.batch)?;
            check_norm_flag(&a.model, &cfg.presets)?;
            let rows = crate::tables::theory_rows(&cfg, notes)?;
            Outcome::table(table::frame(rows)?, a.table.format, out)
        }
        Command::Expand(a) => {
            let out = out_path(&a.out)?;
            let (preset, model, subs) = expand_request(&a)?;
            let bytes = render::render(preset, &model, &subs, a.format, notes)?;
            Outcome {
                produced: Produced::Bytes(bytes),
                out: out.map(Path::to_path_buf),
                provenance: true,
            }
        }
        Command::Presets(a) => {
            crate::placement::load_all(&a.placements)?;
            Outcome::stdout(crate::placement::table().into_bytes())
        }
        Command::Mc(a) => {
            let out = out_path(&a.table.out)?;
            let (presets, cfg, metrics, layers) = mc_request(&a)?;
            let rows = crate::tables::mc_rows(&presets, &cfg, &metrics, &layers, notes)?;
            Outcome::table(table::frame(rows)?, a.table.format, out)
        }
        Command::Train(a) => {
            let out = out_path(&a.out)?.map(Path::to_path_buf);
            let _ = crate::numeric::sys::keep_freed_memory();
            match train::train(&a)? {
                Some((frame, summary)) => Outcome {
                    produced: Produced::Table {
                        frame,
                        format: None,
                        after: Some(summary),
                    },
                    out,
                    provenance: true,
                },
                None => Outcome::done(),
            }
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "normscope", &mut buf);
            Outcome::stdout(buf)
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
            let rows = crate::compare::compare(
                &presets,
                &cfg,
                &metrics,
                &layers,
                c.finite_width.is_some(),
                notes,
            )?;
            notes.push(crate::compare::summary(&rows));
            Outcome::table(crate::compare::compare_frame(&rows)?, a.table.format, out)
        }
        Command::Reproduce(a) if a.list => {
            let mut text = String::new();
            for x in analyses::REGISTRY {
                let units = x.units.unwrap_or("the whole analysis, run by the merge");
                text.push_str(&format!("{}\t{}\tunit: {units}\n", x.id, x.about));
            }
            Outcome::stdout(text.into_bytes())
        }
        Command::Reproduce(a) => {
            analyses::reproduce(&a.run.request(a.only, None)?)?;
            Outcome::done()
        }
        Command::Merge(a) => {
            analyses::merge(&a.shards, &a.out_dir)?;
            Outcome::done()
        }
        Command::Slurm(a) => {
            slurm(a)?;
            Outcome::done()
        }
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
            Outcome::done()
        }
        Command::Cite(a) => {
            let filters: Vec<&str> = a.filters.iter().map(String::as_str).collect();
            let req = analyses::commands::cite::Request {
                allow_changed: a.allow_changed,
                ..analyses::commands::cite::Request::new(&a.path, &filters, a.column.as_deref())?
            };
            Outcome::stdout(analyses::commands::cite::cite(&req)?.into_bytes())
        }
    })
}

/// Writes an outcome: its notes first (a standard error that cannot be written fails the
/// command before any file is written), then its table or bytes to `--out` (atomically, with
/// provenance where the command has it) or standard output, then `after`.
pub fn write(outcome: Outcome, notes: &mut Vec<String>) -> crate::Result<()> {
    // A stopped run (the Python package's Ctrl-C) writes nothing; once a file is begun it is
    // finished, with its sidecar.
    crate::interrupt::check()?;
    say_notes(notes)?;
    let out = outcome.out.as_deref();
    let bytes = match outcome.produced {
        Produced::Done => return Ok(()),
        Produced::Bytes(b) => b,
        Produced::Table {
            mut frame,
            format,
            after,
        } => {
            let bytes = encode_table(table::Format::chosen(format, out)?, &mut frame)?;
            write_bytes(out, &bytes, outcome.provenance)?;
            // After the table: standard output may be the table itself.
            if let Some(text) = after {
                eprint!("{text}");
            }
            return Ok(());
        }
    };
    write_bytes(out, &bytes, outcome.provenance)
}

fn write_bytes(out: Option<&Path>, bytes: &[u8], provenance: bool) -> crate::Result<()> {
    if provenance {
        emit_with_provenance(out, bytes)
    } else {
        emit(out, bytes)
    }
}

/// The binary's whole run: bare `normscope` prints its help; any other command runs
/// ([`run`]) and is written ([`write()`]); notes left over are said at the end, unless the
/// command failed before producing anything.
pub fn dispatch(cli: Cli) -> crate::Result<()> {
    let mut notes = Vec::new();
    let result = match cli.command {
        None => {
            use clap::CommandFactory;
            let help = Cli::command().render_long_help().to_string();
            emit(None, help.as_bytes())
        }
        // A command that fails before it produced anything says only its error (its notes,
        // such as a preset's overflow, would repeat it).
        Some(command) => {
            let outcome = run(command, &mut notes)?;
            write(outcome, &mut notes)
        }
    };
    for n in notes {
        console::note(format_args!("note: {n}"));
    }
    result.and_then(|()| console::failed())
}

/// `normscope slurm`: writes the scripts, and submits them with `--submit`.
fn slurm(a: cli::SlurmArgs) -> crate::Result<()> {
    use crate::analyses::slurm;
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
    // Checked before anything is said (bad input is one line), said before the folder is
    // created (a standard error that cannot be written leaves none).
    let scripts = slurm::scripts(&r)?;
    console::say(format_args!(
        "{} shards of {}: scripts into {}",
        r.shards,
        r.only,
        r.dir.display()
    ))?;
    let paths = slurm::write(&r, &scripts)?;
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
