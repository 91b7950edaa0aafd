//! The metrics (`docs/theory.md`, "The metrics"), one file each. A metric file holds
//!
//! - its definition, with the equation and its source, in the module docs;
//! - an [`Info`]: its table name, the layers it has rows at, what its `source` column means,
//!   the raw quantities a sampled network must compute for it ([`Needs`]), what the closed
//!   form's recursion keeps for it ([`Keeps`]), how its finite-width allowance is formed
//!   ([`Reach`], [`Scale`]; see [`allowance`]), its figure title, whether the closed form
//!   carries it beyond f64's range, its derived finite-width correction (if any), and the
//!   rules the engines apply to its rows: everything another module would otherwise decide by
//!   the metric's name;
//! - `closed_form(q, l, put)`: its value at layer l from the closed form's quantities
//!   ([`crate::metrics::closed::Quantities`]);
//! - `sampled(q, l, put)`: its value at layer l on one sampled network
//!   ([`crate::metrics::sampled::Quantities`]); the Monte Carlo engine averages these over networks.
//!
//! Forms derived from another metric's raw quantity are computed by one function of the
//! metric file that both engines call (`angular_dist::from_cos`, `eff_depth::mean_length`).
//!
//! The `registry!` invocation below is the only list of metrics: it defines [`Metric`],
//! [`Metric::ALL`] and the exhaustive dispatch to each file, so a new metric is one file plus
//! its `mod` line and one line there, and the compiler names every function and `Info` field
//! the file must provide. No other module names a metric to decide what to compute: the Monte
//! Carlo passes run from the union of the requested metrics' [`Needs`], the closed form keeps
//! what their [`Keeps`] say.

pub mod allowance;
pub mod angular_dist;
pub mod branch_gain;
pub mod branch_weight;
pub mod closed;
pub mod coef;
pub mod corr;
pub mod cos_prev;
pub mod eff_depth;
pub mod grad_sq;
pub mod merge_error;
pub mod output_change;
pub mod path_len;
pub mod rel_update;
pub mod sampled;
pub mod skip_gain;
pub mod stream_sq;
pub mod weight_grad_sq;

pub use closed::Keeps;

use crate::{Error, Result};

/// The layers a metric has rows at, for a stack of depth L.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::{Layers, Metric};
///
/// let rows = |layers: Layers| (0..=3).filter(|&l| layers.contains(l, 3)).collect::<Vec<_>>();
/// assert_eq!(rows(Layers::Stream), [0, 1, 2, 3]);
/// assert_eq!(rows(Layers::Blocks), [1, 2, 3]);
/// assert_eq!(rows(Layers::Interior), [1, 2]);
/// assert_eq!(Metric::StreamSq.info().layers, Layers::Stream);
/// assert_eq!(Metric::CosPrev.info().layers, Layers::Blocks);
/// assert_eq!(Metric::MergeError.info().layers, Layers::Interior);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layers {
    /// Every layer `0..=L` (a property of the stream `x_l`).
    Stream,
    /// Blocks `1..=L` (a property of block l or of the pair `x_{l-1}, x_l`).
    Blocks,
    /// Blocks `1..=L-1` (a property of blocks l and l + 1).
    Interior,
}

impl Layers {
    /// Whether layer `l` of a depth-`depth` stack has a row.
    pub fn contains(self, l: usize, depth: usize) -> bool {
        match self {
            Layers::Stream => l <= depth,
            Layers::Blocks => (1..=depth).contains(&l),
            Layers::Interior => l >= 1 && l < depth,
        }
    }
}

/// Which norms a metric's Jacobian paths cross, for the finite-width allowance
/// ([`allowance::norms_on_path`]).
///
/// # Examples
///
/// A Pre-LN stack of depth 3 has one norm per block (`N_in`) and a final norm, so at layer 1
/// the forward paths cross 1 norm, the gradient's paths blocks 2 and 3 and the final norm (3).
///
/// ```rust
/// use normscope_core::metrics::{Metric, Reach, allowance::norms_on_path};
/// use normscope_core::placement::{self, Overrides};
///
/// let spec = placement::build("pre", 3, &Overrides::default())?;
/// assert_eq!(Metric::StreamSq.info().reach, Reach::Forward);
/// assert_eq!(norms_on_path(&spec, Metric::StreamSq, 1), 1);
/// assert_eq!(Metric::OutputChange.info().reach, Reach::ForwardToOutput);
/// assert_eq!(norms_on_path(&spec, Metric::OutputChange, 1), 2);
/// assert_eq!(Metric::GradSq.info().reach, Reach::Backward);
/// assert_eq!(norms_on_path(&spec, Metric::GradSq, 1), 3);
/// assert_eq!(Metric::WeightGradSq.info().reach, Reach::BackwardThroughBlock);
/// assert_eq!(norms_on_path(&spec, Metric::WeightGradSq, 1), 4);
/// assert_eq!(Metric::SkipGain.info().reach, Reach::Block);
/// assert_eq!(norms_on_path(&spec, Metric::SkipGain, 3), 1);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The norms of blocks `1..=l` (forward quantities of `x_l`).
    Forward,
    /// The norms of blocks `1..=l` and the final norm (the network output of depth l).
    ForwardToOutput,
    /// The norms of blocks `l+1..=L` and the final norm (gradients at `x_l`).
    Backward,
    /// As [`Reach::Backward`], plus the norms of block l (gradients of block l's weights).
    BackwardThroughBlock,
    /// The norms of block l only.
    Block,
}

/// How the leading finite-width deviation enters the metric ([`allowance::allowance`]).
///
/// # Examples
///
/// At layer 1 of Pre-LN (one LayerNorm on the path, `r = 2`) and width `d = 4`: a linear
/// metric with theory value 1 gets `2 * 1 * (1 - (1 - 2/4)^1) + 2/4 = 1.5`; `rel_update` at
/// theory 0 gets `sqrt(0 + 2 * 2 * 1/4) + 2/4 = 1.5` on the root scale; `angular_dist` at 0
/// gets `1/pi + 1/2` (the module formulas of [`allowance`], by hand).
///
/// ```rust
/// use normscope_core::metrics::{Metric, Scale, allowance::allowance};
/// use normscope_core::placement::{self, Overrides};
///
/// let spec = placement::build("pre", 3, &Overrides::default())?;
/// assert_eq!(Metric::StreamSq.info().scale, Scale::Linear);
/// assert_eq!(allowance(&spec, Metric::StreamSq, 1, 1.0, 4), 1.5);
/// assert_eq!(Metric::RelUpdate.info().scale, Scale::Root);
/// assert_eq!(allowance(&spec, Metric::RelUpdate, 1, 0.0, 4), 1.5);
/// assert_eq!(Metric::AngularDist.info().scale, Scale::Angle);
/// let a = allowance(&spec, Metric::AngularDist, 1, 0.0, 4);
/// assert!((a - (1.0 / std::f64::consts::PI + 0.5)).abs() < 1e-15);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Multiplicatively: `|theory| (1 - (1 - r/d)^k)`.
    Linear,
    /// On the square, mapped back through the root (`rel_update`).
    Root,
    /// On `(pi t)^2 ~ 2 (1 - cos)`, mapped back through the root (`angular_dist`).
    Angle,
}

/// The raw quantities a sampled network computes for a metric, beyond its forward pass.
/// The passes draw from the network's one random stream in a fixed order (see
/// [`crate::monte_carlo::measure`]): the same metrics give the same draws, and a metric that
/// needs only the forward pass draws nothing, so its values never depend on the others asked
/// for (those of a metric that draws do, through the stream's position; every such estimate is
/// unbiased either way).
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::{Metric, Needs};
///
/// // Stream metrics read the forward pass alone.
/// assert_eq!(Metric::needs(&[Metric::StreamSq, Metric::CosPrev]), Needs::FORWARD);
/// let n = Metric::needs(&[Metric::GradSq, Metric::Coef]);
/// assert!(n.backward && n.decomposition && !n.paths);
/// let backward = Needs { backward: true, ..Needs::FORWARD };
/// assert_eq!(n, backward.union(Needs { decomposition: true, ..Needs::FORWARD }));
/// // The path-length law: exact up to path_max blocks, factorized beyond.
/// let paths = Metric::PathLen.info().needs;
/// assert_eq!(paths.estimator(8, 8), "exact path polynomial");
/// assert_eq!(paths.estimator(9, 8), "factorized");
/// assert_eq!(Needs::FORWARD.estimator(9, 8), "direct");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The per-token decomposition `x_l = sum_j C_{l,j} B~_j`.
    pub decomposition: bool,
    /// One Gaussian tangent per block through its skip and branch paths.
    pub gains: bool,
    /// The path-length law of the end-to-end Jacobian.
    pub paths: bool,
    /// The first-order output change under weight perturbations.
    pub perturbation: bool,
    /// The backward pass from a Gaussian output gradient.
    pub backward: bool,
    /// `||x_l - x_{l-1}||_F^2` at the selected blocks, read in the forward pass (no draws).
    pub step: bool,
    /// `||sum_t x_{l,t}||^2` at the selected layers, read in the forward pass (no draws).
    pub column_sum: bool,
    /// Block l+1's branch re-run on the input `x_{l-1}` would give it, after the forward pass
    /// (no draws: the block is regenerated from its saved state).
    pub merge: bool,
}

impl Needs {
    /// The forward pass alone.
    pub const FORWARD: Needs = Needs {
        decomposition: false,
        gains: false,
        paths: false,
        perturbation: false,
        backward: false,
        step: false,
        column_sum: false,
        merge: false,
    };

    /// Everything either needs.
    pub fn union(self, o: Needs) -> Needs {
        Needs {
            decomposition: self.decomposition || o.decomposition,
            gains: self.gains || o.gains,
            paths: self.paths || o.paths,
            perturbation: self.perturbation || o.perturbation,
            backward: self.backward || o.backward,
            step: self.step || o.step,
            column_sum: self.column_sum || o.column_sum,
            merge: self.merge || o.merge,
        }
    }

    /// The Monte Carlo estimator of a metric with these needs at `depth` with `path_max`:
    /// the path-length law's (`paths`) is the exact path polynomial up to `path_max` blocks
    /// and the factorized law beyond; every other metric is read directly.
    pub fn estimator(self, depth: usize, path_max: usize) -> &'static str {
        match (self.paths, depth <= path_max) {
            (true, true) => "exact path polynomial",
            (true, false) => "factorized",
            (false, _) => "direct",
        }
    }
}

/// Why a metric's closed-form value at layer l (source s) cannot be written as a number
/// though its logarithm is exact (see [`Info::beyond_f64`]).
pub(crate) type BeyondF64 =
    fn(&crate::metrics::closed::Quantities, usize, Option<usize>) -> Option<String>;

/// A metric's derived finite-width factor at a layer (see [`Info::correction`]).
pub(crate) type Corrected = fn(&crate::theory::finite_width::Correction, usize) -> Option<f64>;

/// What a metric is: its name, rows, inputs and allowance.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::{Info, Layers, Metric, Reach, Scale};
///
/// let info: &Info = Metric::Coef.info();
/// assert_eq!(info.name, "coef");
/// assert_eq!(info.source, Some("j"));
/// assert_eq!(
///     (info.layers, info.reach, info.scale),
///     (Layers::Stream, Reach::Forward, Scale::Linear)
/// );
/// assert!(info.needs.decomposition && info.keeps.sources);
/// assert!(info.beyond_f64.is_some() && info.correction.is_none() && !info.absent_is_zero);
/// assert_eq!(info.estimator(4, 8), "direct");
/// assert_eq!(Metric::PathLen.info().source, Some("k"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Info {
    /// The name used in tables and on the command line.
    pub name: &'static str,
    /// One line for help text.
    pub about: &'static str,
    /// The layers it has rows at.
    pub layers: Layers,
    /// What the `source` column holds, if the metric has one (`j` or `k`).
    pub source: Option<&'static str>,
    /// Raw quantities a sampled network computes for it.
    pub needs: Needs,
    /// Norms its paths cross (finite-width allowance).
    pub reach: Reach,
    /// How the allowance enters.
    pub scale: Scale,
    /// When the metric is 0/0 (the reason written in the `missing` column).
    pub undefined: &'static str,
    /// Its name in words for a figure title.
    pub title: &'static str,
    /// What the closed form's recursion keeps for it.
    pub keeps: Keeps,
    /// For a metric the closed form carries beyond f64's range (as a magnitude or in log
    /// space, [`crate::theory::logsum::Mag`]): why its value at layer l (source s) cannot be
    /// written as a number. `None` for a metric the closed form keeps as an f64 in range.
    pub beyond_f64: Option<BeyondF64>,
    /// For a metric with a derived finite-width correction ([`crate::theory::finite_width`]):
    /// its multiplicative factor at a layer (`None` at a layer without one).
    pub correction: Option<Corrected>,
    /// Whether a row some sampled networks leave out counts as 0 for them (a path length a
    /// network pruned) rather than as a missing value.
    pub absent_is_zero: bool,
    /// The fewest tokens it is defined for, with the reason (`None`: any number).
    pub min_tokens: Option<(usize, &'static str)>,
}

impl Info {
    /// The Monte Carlo estimator of this metric at `depth` with `path_max` ([`Needs::estimator`]).
    pub fn estimator(&self, depth: usize, path_max: usize) -> &'static str {
        self.needs.estimator(depth, path_max)
    }
}

/// Receives one value of a metric at a layer: `(source, value)`.
///
/// # Examples
///
/// Collecting a metric's values at one layer of a sampled network with `||x_0||^2 = 1`,
/// `||x_1||^2 = 4` and `<x_1, x_0> = 1` over 2 tokens at width 2: `cos_prev = 1/sqrt(1 * 4) =
/// 0.5` and `stream_sq = 4/(2 * 2) = 1`.
///
/// ```rust
/// use normscope_core::metrics::{Metric, Put, sampled::Quantities};
///
/// let q = Quantities {
///     tokens: 2.0,
///     width: 2.0,
///     energy: vec![1.0, 4.0],
///     dot_prev: vec![None, Some(1.0)],
///     ..Quantities::default()
/// };
/// let mut got: Vec<(Option<usize>, f64)> = Vec::new();
/// let put: Put = &mut |source, value| got.push((source, value));
/// Metric::CosPrev.sampled(&q, 1, put);
/// Metric::StreamSq.sampled(&q, 1, &mut |s, v| got.push((s, v)));
/// assert_eq!(got, [(None, 0.5), (None, 1.0)]);
/// ```
pub type Put<'a> = &'a mut dyn FnMut(Option<usize>, f64);

macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)*) => {
        /// A measured quantity (one file each in [`crate::metrics`]).
        ///
        /// # Examples
        ///
        /// ```rust
        /// use normscope_core::metrics::Metric;
        ///
        /// assert_eq!(Metric::ALL.len(), 15);
        /// assert_eq!(Metric::ALL[0], Metric::StreamSq);
        /// assert_eq!(Metric::from_name("corr"), Some(Metric::Corr));
        /// assert_eq!(Metric::from_name("nope"), None);
        /// assert_eq!(Metric::Corr.to_string(), "corr");
        /// assert!(Metric::Coef.has_source() && !Metric::Corr.has_source());
        /// assert_eq!(Metric::parse_list("coef, corr, coef")?, [Metric::Coef, Metric::Corr]);
        /// assert_eq!(Metric::parse_list("all")?.len(), 15);
        /// let e = Metric::parse_list("corr,nope").unwrap_err().to_string();
        /// assert!(e.contains("'nope'"), "{e}");
        /// # Ok::<(), normscope_core::Error>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub enum Metric {
            $($(#[$doc])* $variant,)*
        }

        impl Metric {
            /// Every metric, in table order.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant,)*];

            /// Its definition.
            pub fn info(self) -> &'static Info {
                match self {
                    $(Metric::$variant => &$module::INFO,)*
                }
            }

            /// Its closed-form value(s) at layer `l`.
            pub fn closed_form(self, q: &crate::metrics::closed::Quantities, l: usize, put: Put) {
                match self {
                    $(Metric::$variant => $module::closed_form(q, l, put),)*
                }
            }

            /// Its value(s) at layer `l` on one sampled network.
            pub fn sampled(self, q: &crate::metrics::sampled::Quantities, l: usize, put: Put) {
                match self {
                    $(Metric::$variant => $module::sampled(q, l, put),)*
                }
            }
        }
    };
}

registry! {
    /// `q_l = E||x_l||^2 / d`.
    StreamSq => stream_sq,
    /// Token correlation `c_l`.
    Corr => corr,
    /// `C_{l,j}` in `x_l = sum_j C_{l,j} B_j`.
    Coef => coef,
    /// Share of `E||x_l||^2` carried by source j.
    BranchWeight => branch_weight,
    /// Skip-path gain `a_l^2` of block l.
    SkipGain => skip_gain,
    /// Branch-path gain `b_l^2` of block l.
    BranchGain => branch_gain,
    /// Mean-square gradient at `x_l`.
    GradSq => grad_sq,
    /// Mean-square gradient of block l's last weight matrix.
    WeightGradSq => weight_grad_sq,
    /// Share of the Jacobian of blocks `1..=l` carried by paths of length k.
    PathLen => path_len,
    /// Mean path length of blocks `1..=l`.
    EffDepth => eff_depth,
    /// `||x_l - x_{l-1}|| / ||x_{l-1}||`.
    RelUpdate => rel_update,
    /// `cos(x_l, x_{l-1})`.
    CosPrev => cos_prev,
    /// `arccos(cos_prev) / pi`.
    AngularDist => angular_dist,
    /// The seeds' merge error of `F_{l+1}` on `x_l` against `x_{l-1}`.
    MergeError => merge_error,
    /// Output change under a small weight perturbation.
    OutputChange => output_change,
}

impl Metric {
    /// The name used in tables.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether rows carry a `source` column value (j for coefficients, k for path lengths).
    pub fn has_source(self) -> bool {
        self.info().source.is_some()
    }

    /// The metric with table name `name`.
    pub fn from_name(name: &str) -> Option<Metric> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The table names of every metric, comma-separated (help text and errors).
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses a comma-separated list of names, where `all` stands for every metric; an unknown
    /// name is an error naming it.
    pub fn parse_list(s: &str) -> Result<Vec<Metric>> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let found = if part == "all" {
                Self::ALL.to_vec()
            } else {
                vec![Self::from_name(part).ok_or_else(|| Error::Unknown {
                    kind: "metric",
                    name: part.to_string(),
                    valid: format!("all, {}", Self::names()),
                })?]
            };
            for m in found {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }

    /// The raw quantities a sampled network computes for all of `metrics`.
    pub fn needs(metrics: &[Metric]) -> Needs {
        metrics
            .iter()
            .fold(Needs::FORWARD, |n, m| n.union(m.info().needs))
    }

    /// For a metric the recursion carries beyond f64's range (as a magnitude,
    /// [`crate::theory::logsum::Mag`], per source in log space, or as a mean of path lengths
    /// that may fall below f64's normal range; [`Info::beyond_f64`]): the reason its value at
    /// layer l (source `s`) in `q` cannot be written as a number though its logarithm is
    /// exact, `e^x` above f64's largest number or below its smallest positive normal one (a
    /// true zero, log = -inf, is written as 0). `None` for a value in range and for a metric
    /// the recursion keeps as an f64.
    pub fn beyond_f64(self, q: &closed::Quantities, l: usize, s: Option<usize>) -> Option<String> {
        self.info().beyond_f64.and_then(|reason| reason(q, l, s))
    }

    /// The finite-width factor of this metric at `layer` under the correction `c`
    /// ([`Info::correction`]), or `None` if no correction is derived for it.
    pub fn correction_factor(
        self,
        c: &crate::theory::finite_width::Correction,
        layer: usize,
    ) -> Option<f64> {
        self.info().correction.and_then(|factor| factor(c, layer))
    }

    /// What the closed form's recursion keeps for all of `metrics`.
    pub fn keeps(metrics: &[Metric]) -> Keeps {
        metrics
            .iter()
            .fold(Keeps::STREAM, |k, m| k.union(m.info().keeps))
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, m) in Metric::ALL.iter().enumerate() {
            assert_eq!(Metric::from_name(m.name()), Some(*m));
            assert!(Metric::ALL[..i].iter().all(|o| o.name() != m.name()));
        }
    }

    #[test]
    fn parse_list_names_the_unknown_metric() {
        let e = Metric::parse_list("stream_sq,foo").unwrap_err().to_string();
        assert!(e.contains("'foo'") && e.contains("stream_sq"), "{e}");
        let e = Metric::parse_list("all,foo").unwrap_err().to_string();
        assert!(e.contains("'foo'"), "{e}");
        assert_eq!(
            Metric::parse_list("all,corr").unwrap(),
            Metric::ALL.to_vec()
        );
    }
}
