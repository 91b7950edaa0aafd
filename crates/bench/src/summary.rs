//! `normscope-bench --all`: every performance target measured in one run (the Monte Carlo
//! workload of [`crate::mc`], then the training workload of [`crate::train`]) and
//! listed at the end, one line each, with the measured value, the threshold from its named
//! constant and the verdict. The measuring functions return an [`Outcome`] per target as they
//! print their own lines; this module only collects and lists them.

/// The target of a line the summary prints without one (f64's training-grid ratio): the
/// line is listed and not counted among the targets.
pub const NO_TARGET: &str = "none";

/// One target's result, or a printed value without a target ([`NO_TARGET`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// What is measured, e.g. `pytorch / normscope (f64)`.
    pub what: String,
    /// The target as printed, e.g. `>= 3.0x`.
    pub target: String,
    /// The measured value as printed, or why it was not measured.
    pub measured: String,
    /// `Some(met)` when measured, `None` when not (`--no-torch`, a memory probe skipped).
    pub met: Option<bool>,
}

impl Outcome {
    /// A measured target.
    pub fn measured(what: String, target: String, measured: String, met: bool) -> Outcome {
        Outcome {
            what,
            target,
            measured,
            met: Some(met),
        }
    }

    /// A value printed beside the targets without one of its own ([`NO_TARGET`]).
    pub fn printed(what: String, measured: String) -> Outcome {
        Outcome {
            what,
            target: NO_TARGET.to_string(),
            measured,
            met: None,
        }
    }

    /// Whether the line has a target (and so counts in the [`tally`]).
    pub fn targeted(&self) -> bool {
        self.target != NO_TARGET
    }

    /// A target this run did not measure, and why.
    pub fn not_measured(what: String, target: String, why: &str) -> Outcome {
        Outcome {
            what,
            target,
            measured: why.to_string(),
            met: None,
        }
    }

    /// `what (target T): value, verdict`; the verdict of a line without a target is
    /// `no target`.
    pub fn line(&self) -> String {
        let verdict = match self.met {
            _ if !self.targeted() => "no target",
            Some(m) => crate::common::verdict(m),
            None => "not measured",
        };
        format!(
            "{} (target {}): {}, {verdict}",
            self.what, self.target, self.measured
        )
    }
}

/// The closing count: `N of M targets met` with how many were not met and not measured, then
/// how many lines had no target (not counted among the M), if any.
pub fn tally(outcomes: &[Outcome]) -> String {
    let targets: Vec<&Outcome> = outcomes.iter().filter(|o| o.targeted()).collect();
    let count = |m: Option<bool>| targets.iter().filter(|o| o.met == m).count();
    let untargeted = outcomes.len() - targets.len();
    format!(
        "{} of {} targets met, {} not met, {} not measured{}",
        count(Some(true)),
        targets.len(),
        count(Some(false)),
        count(None),
        match untargeted {
            0 => String::new(),
            n => format!("; {n} without a target"),
        }
    )
}

/// The machine a ratio was measured on, as the summary prints it beside each: the processor's
/// model and caches ([`normscope::numeric::cpu::Processor`]) and, where the engine's f64
/// kernel is in use ([`normscope::numeric::exact_dgemm::active`]), its rows per block, set
/// from the level-2 cache ([`normscope::numeric::exact_dgemm::rows_per_block`]); elsewhere
/// that the f64 products are matrixmultiply's.
pub fn machine() -> String {
    use normscope::numeric::exact_dgemm;
    let kernel = if exact_dgemm::active() {
        format!(
            "f64 kernel blocks of {} rows",
            exact_dgemm::rows_per_block()
        )
    } else {
        KERNEL_INACTIVE.to_string()
    };
    format!(
        "{}; {kernel}",
        normscope::numeric::cpu::Processor::here().summary()
    )
}

/// The end of [`machine`] where the engine's f64 kernel is not in use (no AVX-512, or its
/// self-check failed).
pub const KERNEL_INACTIVE: &str =
    "f64 products by matrixmultiply (the engine's AVX-512 kernel is not in use)";

/// Prints the summary block: a heading, the machine, one [`Outcome::line`] per target with
/// the machine beside it (a ratio belongs to a machine), the [`tally`], and with `quick` a
/// reminder that the targets are set for the reference sizes.
pub fn print(outcomes: &[Outcome], quick: bool) -> normscope::Result<()> {
    let machine = machine();
    outln!("== summary: the performance targets, measured in this run ==")?;
    outln!("machine: {machine}")?;
    for o in outcomes {
        outln!("{} [{machine}]", o.line())?;
    }
    outln!("{}", tally(outcomes))?;
    if quick {
        outln!("{QUICK_NOTE}")?;
    }
    Ok(())
}

/// Printed after a `--quick` summary.
pub const QUICK_NOTE: &str = "--quick: smoke-test sizes; the targets are set for the reference workloads, so these verdicts say nothing about them";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_tally_say_what_was_met_missed_and_not_measured() {
        let o = vec![
            Outcome::measured("a".into(), ">= 2.0x".into(), "2.50x".into(), true),
            Outcome::measured("b".into(), ">= 80%".into(), "70%".into(), false),
            Outcome::not_measured("c".into(), ">= 3.0x".into(), "--no-torch"),
            Outcome::printed("d".into(), "1.82x".into()),
            Outcome::not_measured("e".into(), NO_TARGET.into(), "--no-torch"),
        ];
        assert_eq!(o[0].line(), "a (target >= 2.0x): 2.50x, met");
        assert_eq!(o[1].line(), "b (target >= 80%): 70%, not met");
        assert_eq!(o[2].line(), "c (target >= 3.0x): --no-torch, not measured");
        assert_eq!(o[3].line(), "d (target none): 1.82x, no target");
        assert_eq!(o[4].line(), "e (target none): --no-torch, no target");
        assert_eq!(
            tally(&o),
            "1 of 3 targets met, 1 not met, 1 not measured; 2 without a target"
        );
        assert_eq!(
            tally(&o[..3]),
            "1 of 3 targets met, 1 not met, 1 not measured"
        );
    }
}
