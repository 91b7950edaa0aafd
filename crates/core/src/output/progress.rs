//! The progress bar of long Monte Carlo runs: hidden for the first [`PROGRESS_AFTER`] seconds,
//! drawn to stderr only when stderr is a terminal (indicatif's stderr target hides otherwise).
//! The bar made last is also published ([`current`]) for a display of its own: the Python
//! package's notebook progress bar.

use crate::monte_carlo::Progress;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The published bar: its unit, position and length (0: none in flight).
static UNIT: Mutex<String> = Mutex::new(String::new());
static POSITION: AtomicU64 = AtomicU64::new(0);
static LENGTH: AtomicU64 = AtomicU64::new(0);
/// The number of the bar made last: only it publishes, and its drop withdraws it.
static NEWEST: AtomicU64 = AtomicU64::new(0);
/// Whether a bar may draw itself on a terminal's standard error.
static TERMINAL: AtomicBool = AtomicBool::new(true);

/// Lets bars draw themselves on standard error when it is a terminal (the default: the
/// binary), or never (the Python package, which draws its own from [`current`] when asked).
pub fn draw_on_terminal(on: bool) {
    TERMINAL.store(on, Ordering::SeqCst);
}

/// The bar in flight, made last: `(unit, position, length)` (unit: "networks", "updates",
/// "runs", ...), or `None` when it has finished or none was made.
///
/// # Examples
///
/// (A crate of its own, so no other example's bar runs beside it.)
///
/// ```rust,standalone_crate
/// use normscope_core::monte_carlo::Progress;
/// use normscope_core::output::progress::{DelayedBar, current};
///
/// let bar = DelayedBar::steps(3);
/// bar.tick();
/// assert_eq!(current(), Some(("updates".to_string(), 1, 3)));
/// bar.finish();
/// assert_eq!(current(), None);
///
/// // A bar dropped unfinished (its run failed) is withdrawn; one made later replaces it.
/// let old = DelayedBar::networks(5);
/// let new = DelayedBar::steps(2);
/// old.tick(); // not published: `new` is the bar in flight
/// drop(old);
/// assert_eq!(current(), Some(("updates".to_string(), 0, 2)));
/// drop(new);
/// assert_eq!(current(), None);
/// ```
pub fn current() -> Option<(String, u64, u64)> {
    let len = LENGTH.load(Ordering::SeqCst);
    let unit = UNIT.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (len > 0).then(|| (unit, POSITION.load(Ordering::SeqCst).min(len), len))
}

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
/// let p = mc.profile(&cfg.model.stack(normscope_core::placement::find("pre")?)?, &Plan::new(&[Metric::StreamSq], LayerSpec::Last))?;
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
    id: u64,
    start: Instant,
    shown: AtomicBool,
}

impl DelayedBar {
    /// A hidden bar over `len` networks.
    pub fn networks(len: u64) -> Self {
        Self::with_template(
            len,
            "networks",
            "mc [{bar:30}] {pos}/{len} networks, eta {eta}",
        )
    }

    /// A hidden bar over `len` training updates (of every run).
    pub fn steps(len: u64) -> Self {
        Self::with_template(
            len,
            "updates",
            "train [{bar:30}] {pos}/{len} updates, eta {eta}",
        )
    }

    /// A hidden bar over `len` items of a training analysis (`what`: "searches", "runs").
    pub fn training(len: u64, what: &str) -> Self {
        Self::with_template(
            len,
            what,
            &format!("train [{{bar:30}}] {{pos}}/{{len}} {what}, eta {{eta}}"),
        )
    }

    fn with_template(len: u64, unit: &str, template: &str) -> Self {
        let id = NEWEST.fetch_add(1, Ordering::SeqCst) + 1;
        *UNIT.lock().unwrap_or_else(|e| e.into_inner()) = unit.to_string();
        POSITION.store(0, Ordering::SeqCst);
        LENGTH.store(len, Ordering::SeqCst);
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
            id,
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
        self.withdraw();
        self.bar.finish_and_clear();
    }

    /// Withdraws the published bar if it is this one.
    fn withdraw(&self) {
        if NEWEST.load(Ordering::SeqCst) == self.id {
            LENGTH.store(0, Ordering::SeqCst);
        }
    }
}

/// A bar dropped unfinished (its run failed) is no longer published.
impl Drop for DelayedBar {
    fn drop(&mut self) {
        self.withdraw();
    }
}

impl Progress for DelayedBar {
    fn tick(&self) {
        if !self.shown.load(Ordering::Relaxed)
            && TERMINAL.load(Ordering::Relaxed)
            && self.start.elapsed().as_secs_f64() > PROGRESS_AFTER
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        if NEWEST.load(Ordering::Relaxed) == self.id {
            POSITION.fetch_add(1, Ordering::SeqCst);
        }
        self.bar.inc(1);
    }
}
