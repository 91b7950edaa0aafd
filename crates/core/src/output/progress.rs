//! The progress bar of long Monte Carlo runs: hidden for the first [`PROGRESS_AFTER`] seconds,
//! drawn to stderr only when stderr is a terminal (indicatif's stderr target hides otherwise).

use crate::monte_carlo::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Seconds after which a run shows its progress bar.
pub const PROGRESS_AFTER: f64 = 2.0;

/// A bar over `len` networks that appears only on runs longer than [`PROGRESS_AFTER`].
pub struct DelayedBar {
    bar: indicatif::ProgressBar,
    start: Instant,
    shown: AtomicBool,
}

impl DelayedBar {
    /// A hidden bar over `len` networks.
    pub fn networks(len: u64) -> Self {
        Self::with_template(len, "mc [{bar:30}] {pos}/{len} networks, eta {eta}")
    }

    /// A hidden bar over `len` training updates (of every run).
    pub fn steps(len: u64) -> Self {
        Self::with_template(len, "train [{bar:30}] {pos}/{len} updates, eta {eta}")
    }

    /// A hidden bar over `len` items of a training analysis (`what`: "searches", "runs").
    pub fn training(len: u64, what: &str) -> Self {
        Self::with_template(
            len,
            &format!("train [{{bar:30}}] {{pos}}/{{len}} {what}, eta {{eta}}"),
        )
    }

    fn with_template(len: u64, template: &str) -> Self {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::hidden(),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        DelayedBar {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for DelayedBar {
    fn tick(&self) {
        if !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed().as_secs_f64() > PROGRESS_AFTER
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        self.bar.inc(1);
    }
}
