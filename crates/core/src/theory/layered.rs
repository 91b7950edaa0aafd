//! Per-layer values of the closed form, kept at every layer or only at the layers a table
//! writes, so that the recursion's memory does not grow with depth when few layers are asked
//! for (`theory --depth 30000000 --layers last` keeps one value per sequence).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Index;

/// Which layers of the recursion to keep, and which whole sequences the metrics need.
///
/// # Examples
///
/// ```rust
/// use normscope_core::closed_form::keep;
/// use normscope_core::metrics::Metric;
/// use normscope_core::theory::Keep;
/// let all = Keep::all();
/// assert!(all.has(1_000_000));
/// assert_eq!(all.bytes_per_layer(), 256 + 40 + 25);
/// // `stream_sq` at layer 8 keeps that layer only and no whole sequence.
/// let k = keep(&[Metric::StreamSq], &[8]);
/// assert!(k.has(8) && !k.has(7));
/// assert!(!k.sources && !k.backward);
/// assert_eq!(k.bytes_per_layer(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keep {
    /// Layers whose per-layer values are kept (`None`: every layer).
    pub layers: Option<BTreeSet<usize>>,
    /// Keep `m_j`, `ln C_{j,j}` and the skip prefix sums at every layer (`coef`,
    /// `branch_weight` read every source j <= l).
    pub sources: bool,
    /// Keep `a_l^2` and the split branch gains at every block (`path_len` and `eff_depth`
    /// stream over every block).
    pub gains: bool,
    /// Run the backward pass (`grad_sq`, `weight_grad_sq`).
    pub backward: bool,
    /// Evaluate the merge error (three pair kernels per kept layer).
    pub merge: bool,
}

impl Keep {
    /// Everything, at every layer.
    pub fn all() -> Self {
        Keep {
            layers: None,
            sources: true,
            gains: true,
            backward: true,
            merge: true,
        }
    }

    /// Whether layer l's values are kept.
    pub fn has(&self, l: usize) -> bool {
        self.layers.as_ref().is_none_or(|s| s.contains(&l))
    }

    /// Whether kept sequences are stored densely: every layer is kept, or at least a quarter
    /// of them (a B-tree entry costs about 3 times a vector slot, so sparse storage only saves
    /// memory below that share).
    pub fn dense(&self, len: usize) -> bool {
        self.layers
            .as_ref()
            .is_none_or(|s| s.len().saturating_mul(4) >= len)
    }

    /// Storage for a sequence over `len` layers: every layer if `dense` or [`Self::dense`],
    /// else only the kept ones.
    pub fn storage<T: Clone>(&self, dense: bool, len: usize, fill: T) -> Layered<T> {
        if dense || self.dense(len) {
            Layered::Dense(vec![fill; len])
        } else {
            Layered::Sparse(BTreeMap::new())
        }
    }

    /// Per-layer bytes the kept whole sequences cost (what grows with depth).
    pub fn bytes_per_layer(&self) -> u128 {
        let mut b = 0;
        if self.layers.is_none() {
            b += 256;
        }
        if self.sources {
            // m (16), ln C_jj (8), the double-double prefix sum (16).
            b += 40;
        }
        if self.gains {
            // a^2 (8), (b_mean^2, b_fluct^2) (16), whether a branch share is lost (1).
            b += 25;
        }
        b
    }
}

/// A per-layer sequence: dense, or only at kept layers.
///
/// # Examples
///
/// ```rust
/// use normscope_core::theory::layered::Layered;
/// use std::collections::BTreeMap;
/// let mut dense = Layered::Dense(vec![0.0; 4]);
/// dense.set(2, 1.5);
/// assert_eq!((dense.get(2), dense[3]), (Some(&1.5), 0.0));
/// // A sparse sequence holds the kept layers only.
/// let mut sparse = Layered::Sparse(BTreeMap::new());
/// sparse.set(7, 2.5);
/// assert_eq!((sparse.get(7), sparse.get(6)), (Some(&2.5), None));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Layered<T> {
    /// A value at every layer.
    Dense(Vec<T>),
    /// Values at the kept layers only.
    Sparse(BTreeMap<usize, T>),
}

impl<T> Layered<T> {
    /// Sets layer l's value (a sparse sequence stores it; call only for kept layers).
    pub fn set(&mut self, l: usize, v: T) {
        match self {
            Layered::Dense(d) => d[l] = v,
            Layered::Sparse(s) => {
                s.insert(l, v);
            }
        }
    }

    /// Layer l's value, if kept.
    pub fn get(&self, l: usize) -> Option<&T> {
        match self {
            Layered::Dense(d) => d.get(l),
            Layered::Sparse(s) => s.get(&l),
        }
    }
}

impl<T> Index<usize> for Layered<T> {
    type Output = T;
    /// Layer l's value; panics if layer l was not kept (a metric read a layer its plan did
    /// not select).
    fn index(&self, l: usize) -> &T {
        self.get(l)
            .unwrap_or_else(|| panic!("layer {l} of the closed form was not kept"))
    }
}
