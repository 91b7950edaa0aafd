//! Tolerances of the test suites, named in one place (the habit of statrs' `prec.rs`), each
//! with why it is that size. f64 rounding is 1.1e-16 relative per operation (half an ulp);
//! f32's is 6e-8. A tolerance is never widened to make a test pass: a new reason gets a new
//! constant.

/// A handful of f64 operations on O(1) values: a few ulps.
pub const ROUNDING: f64 = 1e-15;

/// A 30-digit mpmath reference of a value of size ~0.03 against a closed form of a few
/// operations: some tens of ulps of the value.
pub const MPMATH_REFERENCE: f64 = 1e-16;

/// Tens of chained operations (prefix sums, ratios, powers) on O(1) values.
pub const ROUNDING_CHAIN: f64 = 1e-14;

/// Closed-form values that go through a few logs and exps (log-space products over depth):
/// exact up to a handful of ulps of each log.
pub const EXACT: f64 = 1e-13;

/// Sums of O(100) rounded terms (GEMMs of small matrices, quadrature sums, inner products):
/// relative to the result's scale.
pub const ACCUMULATED: f64 = 1e-12;

/// The closed form at depth 10^6 against its formula: compensated (double-double) sums over a
/// million layers keep ~1e-16 per layer from accumulating beyond this.
pub const DEPTH_MILLION: f64 = 1e-12;

/// Two routes to the same number (a symbolic expansion evaluated through exact rationals and
/// logs, against the numeric recursion; DeepNet's beta moved between the weights and the
/// branch multiplier): each carries its own O(10^2) roundings.
pub const TWO_ROUTES: f64 = 1e-11;

/// The closed form's kernel against an independent route whose integrand cancels (statrs'
/// `erfc` in `mu Phi(mu/s) + s phi(mu/s)`): measured ~6e-12 relative against mpmath.
pub const ERFC_CANCELLATION: f64 = 1e-11;

/// Two deep routes: the path-length law's mean against the effective-depth recursion, or
/// sampled per-token quantities carried through ~5 blocks of norms and sums (the
/// decomposition, a norm's fixed squared norm `d`, the adjoint identity `<v, J u> = <J^T v, u>`
/// on O(d n)-term inner products).
pub const TWO_ROUTES_DEEP: f64 = 1e-10;

/// A probability law of ~2 x 10^4 entries sums to 1 within its accumulated rounding.
pub const PMF_TOTAL: f64 = 1e-9;

/// Its mean, ~10^4, to the same relative accuracy (absolute).
pub const PMF_MEAN: f64 = 1e-6;

/// `ln` of a magnitude of ~2^2000 (~1386) carried in log space, absolute.
pub const LOG_OF_HUGE: f64 = 1e-9;

/// A reference constant printed to 7 significant digits (a paper's or a table's), absolute on
/// an O(1) value.
pub const PRINTED_7_DIGITS: f64 = 1e-6;

/// A Student-t table quantile (3.182446, 7 digits) times a standard error of ~0.6, absolute.
#[cfg(test)]
pub(crate) const T_TABLE: f64 = 1e-5;

/// A central finite difference with step 1e-6 against an exact JVP, relative: truncation
/// O(h^2) ~ 1e-12 plus cancellation ~ 1e-16/h = 1e-10, with headroom for curvature.
pub const FINITE_DIFFERENCE: f64 = 1e-6;

/// A central finite difference of a norm (step 1e-6), relative: the same error budget on a map
/// whose curvature is 1/sigma.
pub const FINITE_DIFFERENCE_NORM: f64 = 1e-8;

/// f32 against f64 on unit-scale inputs through a few products of width <= 16 and a softmax:
/// a few f32 roundings (6e-8 each) per entry, relative.
pub const F32_REL: f64 = 1e-5;

/// Four standard errors of a second moment estimated from 2 x 10^4 Gaussian coordinates
/// (`q ~ 2 sqrt(2/d) = 0.02`).
pub const SAMPLE_Q_4SE: f64 = 0.08;

/// Four standard errors of a correlation estimated the same way (~0.012).
pub const SAMPLE_C_4SE: f64 = 0.05;

/// A value that must be exactly zero (cross-attention ignores the stream): below any nonzero
/// product of the test's magnitudes.
pub const ZERO: f64 = 1e-300;

/// Negative controls: two quantities that must differ (the seeds' formula against the exact
/// one at g != 1; a perturbed network against the original) differ by at least this, far
/// above any rounding.
pub const CLEARLY_DIFFERENT: f64 = 1e-2;

/// The same for a small perturbation (relative).
pub const VISIBLY_DIFFERENT: f64 = 1e-3;

/// Golden tables, closed form (relative): values are recomputed by the same code, so they are
/// bit-identical on one machine; 1e-12 allows for a different libm's last bits across a few
/// logs and exps.
pub const GOLDEN_THEORY_REL: f64 = 1e-12;

/// Golden tables, Monte Carlo (relative): the same seeds give the same networks, and on one
/// machine the tables are bit-identical; the GEMM kernel matrixmultiply picks at run time
/// (AVX2/FMA or not) can change the last bits of a product on another CPU, and 1e-10 leaves
/// room for that to grow through the network. `tests/it/reproduce.rs` checks it stays 100x below
/// the narrowest 95% interval in the golden tables.
pub const GOLDEN_MC_REL: f64 = 1e-10;
