//! The ledger's named thresholds that analyses share with it (fixed before the data, printed
//! in the ledger's rules), and the after-training verdict type. The ledger analysis itself is
//! [`crate::claims`]; this module imports nothing above the runner, so an analysis can use
//! the thresholds without importing the ledger.

/// Claim 1 thresholds: Pre-LN "adds width" if eff_depth/L < 0.05 at the largest closed-form
/// depth; a preset's depth is "full" (linear in L) if eff_depth/L >= 0.25.
pub(crate) const WIDTH_MAX: f64 = 0.05;
/// Claim 1: a preset's depth is "full" (linear in L) if eff_depth/L >= this.
pub(crate) const LINEAR_MIN: f64 = 0.25;

/// Claims 1 and 10: Post-LN's effective depth is "much larger" than Pre-LN's if it exceeds this
/// factor (in Monte Carlo: Post-LN's lower CI end over Pre-LN's upper end).
pub(crate) const POST_OVER_PRE_MIN: f64 = 4.0;

/// Claim 3: the Monte Carlo interval of the per-layer factor is widened by this share on each
/// side.
pub(crate) const MC_WIDEN: f64 = 0.05;

/// Claim 4: gradients clearly do not vanish near the input if the first block's mean-square
/// weight gradient is at least this share of the last block's.
pub(crate) const NO_VANISH_MIN: f64 = 0.5;

/// Claims 5 and 10: DeepNorm keeps Post-Norm's depth if its effective depth is at least this
/// share of Post-LN's.
pub(crate) const KEEPS_DEPTH_MIN: f64 = 0.5;

/// The after-training verdict of a claim made at init : the same metrics on
/// the weights of trained networks (analysis `trained-lens`).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::ledger::rules::AfterTraining;
/// let a = AfterTraining {
///     measurement: "eff_depth ratio 0.8".into(),
///     rule: "supported if >= 0.5".into(),
///     verdict: "supported".into(),
/// };
/// assert_eq!(a.verdict, "supported");
/// assert_eq!(a.clone(), a);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AfterTraining {
    /// The measured numbers.
    pub measurement: String,
    /// The rule with its thresholds.
    pub rule: String,
    /// `supported`, `refuted` or `conditional: ...`.
    pub verdict: String,
}
