//! `normscope-bench`: the performance targets measured on the machine at hand, each against a
//! reference timed in the same run (the machine's GEMM rates, PyTorch eager on the same
//! workload). It is a separate binary from `normscope`, so the product binary carries no bench
//! code, and it is the only package that turns on the numeric layer's `timing` counters.
//!
//! - the Monte Carlo reference workload ([`mc`]), with its peak memory;
//! - `--train`: training against PyTorch's eager loop ([`train`]);
//! - `--train-grid`: one cell of the training analyses' grid against PyTorch's ensemble
//!   ([`grid`]);
//! - `--shards N`: what sharding a grid costs and buys ([`shards`]);
//! - `--all`: the first three, then one line per target ([`summary`]).

#![deny(unsafe_code)]

/// `println!` that returns [`normscope::Error::Console`] instead of panicking (a closed pipe, a
/// full device).
macro_rules! outln {
    ($($t:tt)*) => {
        normscope::output::console::out(format!("{}\n", format_args!($($t)*)).as_bytes())
    };
}

/// `eprintln!` that never panics: a failure is reported when the command ends
/// ([`normscope::output::console::note`]).
macro_rules! errln {
    ($($t:tt)*) => {
        normscope::output::console::note(format_args!($($t)*))
    };
}

mod args;
mod common;
mod grid;
mod mc;
mod shards;
mod summary;
mod train;

use args::BenchArgs;
use normscope::monte_carlo::Precision;
use std::process::ExitCode;

fn bench(a: &BenchArgs) -> normscope::Result<()> {
    // Every part but --no-torch, --shards and --memory-probe runs PyTorch: the flags, then its
    // interpreter, are checked before anything is timed.
    if !a.no_torch && a.shards.is_none() && a.memory_probe.is_none() {
        train::check(a)?;
        common::check_python(&a.python)?;
    }
    if a.train {
        return train::bench(a, &mut Vec::new());
    }
    if a.train_grid {
        return grid::bench(a, &mut Vec::new());
    }
    if let Some(n) = a.shards {
        return shards::bench(n, a.nodes, a.quick, a.config.as_deref(), &a.analyses);
    }
    if let Some(depth) = a.memory_probe {
        return mc::memory_probe(
            mc::Workload::of(a.quick),
            depth,
            a.precision.unwrap_or_default(),
        );
    }
    // Refuses a bad --repeats (train::check) before anything is timed.
    let mut outcomes = mc::monte_carlo(a)?;
    if a.all {
        // A part that fails (a PyTorch script's error) is reported, its targets not yet
        // measured (a precision that finished keeps its result) count as not measured, and
        // the other parts and the summary still run; the run then fails. A console that
        // cannot be written to ends the run at once.
        type Part = fn(&BenchArgs, &mut Vec<summary::Outcome>) -> normscope::Result<()>;
        type Target = fn(Precision) -> (String, String);
        let parts: [(&str, Part, Target); 2] = [
            ("training", train::bench, train::target),
            ("a training-analysis cell", grid::bench, grid::target),
        ];
        let mut failed = None;
        for (name, part, target) in parts {
            let before = outcomes.len();
            match part(a, &mut outcomes) {
                Ok(()) => {}
                Err(e @ normscope::Error::Console { .. }) => return Err(e),
                Err(e) => {
                    errln!("{name}: {e}");
                    let why = format!("the part failed: {e}");
                    for p in common::precisions(a.precision) {
                        let (what, threshold) = target(p);
                        if !outcomes[before..].iter().any(|o| o.what == what) {
                            outcomes.push(summary::Outcome::not_measured(what, threshold, &why));
                        }
                    }
                    failed.get_or_insert(e);
                }
            }
        }
        summary::print(&outcomes, a.quick)?;
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    use clap::Parser;
    let a = match BenchArgs::try_parse() {
        Ok(a) => a,
        Err(e) => return normscope::output::exit::parse_error(e),
    };
    normscope::output::exit::status(bench(&a))
}
