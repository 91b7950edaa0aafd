//! What the closed-form metrics read ([`Quantities`]): the mean-field recursion
//! ([`MeanField`]) and the path-length quantities streamed over depth from it
//! ([`SplitPaths`]) only when a metric asks for them. The closed-form engine
//! ([`crate::closed_form::ClosedForm`]) builds one per stack and hands it to each metric's
//! `closed_form`, and what the recursion must keep for them ([`Keeps`]).

use crate::theory::MeanField;
use crate::theory::paths::{MAX_PATH_LAYER, SplitPaths};
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// What the closed-form metrics read: the recursion, and the path-length quantities that are
/// streamed over depth only when asked for.
///
/// # Examples
///
/// Pre-LN with a Xavier linear branch (gain `g = 1`) and `q0 = 1`: `x_1 = x_0 + F(N(x_0))` has
/// `q_1 = q0 + g = 2`; the mean path length is 0 at layer 0 (only the empty path), and the
/// path-length law at layer 1 has shares that sum to 1.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchModel};
/// use normscope_core::metrics::{Metric, closed::Quantities};
/// use normscope_core::placement::{self, Overrides};
/// use normscope_core::theory::{Inputs, MeanField};
///
/// let spec = placement::build("pre", 2, &Overrides::default())?;
/// let model = BranchModel::new(&BranchConfig::default(), None, 1.0, 0.0);
/// let mf = MeanField::new(&spec, &model, Inputs::default())?;
/// let keeps = Metric::keeps(&[Metric::StreamSq, Metric::EffDepth, Metric::PathLen]);
/// let mut notes = Vec::new();
/// let q = Quantities::new(&mf, keeps, &[0, 1, 2], false, "pre", &mut notes)?;
/// assert!(notes.is_empty());
/// assert_eq!(q.eff_depth[&0], 0.0);
/// let law = &q.path_laws[&1];
/// assert!((law.iter().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-15);
///
/// let mut got = Vec::new();
/// Metric::StreamSq.closed_form(&q, 1, &mut |s, v| got.push((s, v)));
/// assert_eq!(got, [(None, 2.0)]);
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub struct Quantities<'a> {
    /// The recursion.
    pub mf: &'a MeanField,
    /// `eff_depth` at the selected layers (if asked for).
    pub eff_depth: BTreeMap<usize, f64>,
    /// The selected layers whose `eff_depth` is positive though some block's branch share
    /// was below f64's normal range ([`MeanField::path_tiny`]).
    pub eff_depth_tiny: BTreeSet<usize>,
    /// The `path_len` law `(k, P(k))` at the selected layers up to [`MAX_PATH_LAYER`] (if asked
    /// for).
    pub path_laws: BTreeMap<usize, Vec<(usize, f64)>>,
}

impl<'a> Quantities<'a> {
    /// Computes what `keeps` asks for at `layers` (sorted); notes on skipped layers go to
    /// `notes`.
    pub fn new(
        mf: &'a MeanField,
        keeps: Keeps,
        layers: &[usize],
        path_len_explicit: bool,
        preset: &str,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        let mut q = Quantities {
            mf,
            eff_depth: BTreeMap::new(),
            eff_depth_tiny: BTreeSet::new(),
            path_laws: BTreeMap::new(),
        };
        if keeps.path_law {
            q.path_laws = path_laws(mf, layers, path_len_explicit, preset, notes)?;
        }
        if keeps.mean_path {
            let mut paths = SplitPaths::new(1.0 / mf.tokens);
            let (mut next, mut tiny) = (0, false);
            for l in 0..=mf.depth {
                if l >= 1 {
                    let (a2, bm, bf) = mf.transfer(l)?;
                    paths.push_mean(a2, bm, bf);
                    tiny |= mf.path_tiny[l];
                }
                if layers.get(next) == Some(&l) {
                    q.eff_depth.insert(l, paths.mean_length());
                    if tiny {
                        q.eff_depth_tiny.insert(l);
                    }
                    next += 1;
                }
            }
        }
        Ok(q)
    }
}

/// The exact path-length law at the selected layers, streamed over depth.
fn path_laws(
    mf: &MeanField,
    layers: &[usize],
    explicit: bool,
    preset: &str,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<usize, Vec<(usize, f64)>>> {
    let mut out = BTreeMap::new();
    let Some(&top) = layers.last() else {
        return Ok(out);
    };
    let mut layers = layers.to_vec();
    if top > MAX_PATH_LAYER {
        if explicit {
            return Err(Error::Unsupported(format!(
                "path_len at layer {top}: the exact Poisson-binomial law costs O(l^2) and is computed up to layer {MAX_PATH_LAYER}; select --layers <= {MAX_PATH_LAYER} or drop path_len from --metrics"
            )));
        }
        notes.push(format!(
            "{preset}: path_len skipped for layers > {MAX_PATH_LAYER} (exact law is O(l^2)); eff_depth is still written"
        ));
        layers.retain(|&l| l <= MAX_PATH_LAYER);
    }
    let mut dist = SplitPaths::new(1.0 / mf.tokens);
    let mut next = 0;
    let last = layers.last().copied().unwrap_or(0);
    for l in 0..=last {
        if l >= 1 {
            let (a2, bm, bf) = mf.transfer(l)?;
            dist.push(a2, bm, bf);
        }
        if layers.get(next) == Some(&l) {
            out.insert(l, dist.iter().collect());
            next += 1;
        }
    }
    Ok(out)
}

/// What the closed form's recursion must keep for a metric beyond the per-layer stream
/// quantities ([`crate::theory::layered::Keep`], [`crate::metrics::closed::Quantities`]).
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::{Keeps, Metric};
///
/// assert_eq!(Metric::keeps(&[Metric::StreamSq, Metric::Corr]), Keeps::STREAM);
/// let k = Metric::keeps(&[Metric::Coef, Metric::GradSq]);
/// assert!(k.sources && k.backward && !k.path_law);
/// let merge = Keeps { merge: true, ..Keeps::STREAM };
/// assert_eq!(Keeps::STREAM.union(merge), merge);
/// assert_eq!(Keeps::default(), Keeps::STREAM);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keeps {
    /// The whole sequences the per-source coefficients read.
    pub sources: bool,
    /// The per-block skip and branch gains the path-length quantities read.
    pub gains: bool,
    /// The backward recursion (gradients).
    pub backward: bool,
    /// The merge error's per-block terms.
    pub merge: bool,
    /// The exact path-length law at the selected layers ([`crate::metrics::closed::Quantities::path_laws`]).
    pub path_law: bool,
    /// The mean path length at the selected layers ([`crate::metrics::closed::Quantities::eff_depth`]).
    pub mean_path: bool,
}

impl Keeps {
    /// The forward recursion's per-layer quantities alone.
    pub const STREAM: Keeps = Keeps {
        sources: false,
        gains: false,
        backward: false,
        merge: false,
        path_law: false,
        mean_path: false,
    };

    /// Everything either keeps.
    pub fn union(self, o: Keeps) -> Keeps {
        Keeps {
            sources: self.sources || o.sources,
            gains: self.gains || o.gains,
            backward: self.backward || o.backward,
            merge: self.merge || o.merge,
            path_law: self.path_law || o.path_law,
            mean_path: self.mean_path || o.mean_path,
        }
    }
}
