//! The progress bar of long Monte Carlo runs: hidden for the first [`PROGRESS_AFTER`] seconds,
//! drawn to stderr only when stderr is a terminal (indicatif's stderr target hides otherwise).

use crate::monte_carlo::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Seconds after which a run shows its progress bar.
pub const PROGRESS_AFTER: f64 = 2.0;

/// A bar over `len` networks that appears only on runs longer than [`PROGRESS_AFTER`].
///
/// # Examples
///
/// A bar over the networks of a Monte Carlo run (hidden: the run is shorter than
/// [`PROGRESS_AFTER`] seconds), ticked once per network as its [`Progress`]:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::engine::{Engine, Plan};
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{McConfig, MonteCarlo, Progress, RawMc};
/// use normscope_core::output::progress::DelayedBar;
/// use normscope_core::profile::Value;
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "linear".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc { samples: 2, ..RawMc::default() })?;
/// let bar = DelayedBar::networks(2);
/// let mc = MonteCarlo { cfg: &cfg, progress: &bar };
/// let p = mc.profile(&cfg.model.stack("pre")?, &Plan::new(&[Metric::StreamSq], LayerSpec::Last))?;
/// assert_eq!(bar.position(), 2); // one tick per network
/// bar.finish();
/// assert!(matches!(&p.values[&(Metric::StreamSq, 2, None)], Value::Estimate(e) if e.n == 2));
///
/// let steps = DelayedBar::steps(3);
/// (0..3).for_each(|_| steps.tick());
/// assert_eq!(steps.position(), 3);
/// steps.finish();
/// # Ok(())
/// # }
/// ```
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

    /// Ticks so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
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
