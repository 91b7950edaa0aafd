//! One sampled network's raw quantities ([`Quantities`]) and the metrics read from them
//! ([`measure`]). Each value averages over the network's tokens; the engine
//! ([`super::MonteCarlo`]) then treats networks as independent samples.
//!
//! The passes run in a fixed order, each only if a requested metric needs it
//! ([`crate::metrics::Needs`]), drawing from the network's one stream in this order:
//!
//! 1. the forward pass, with the exact per-token decomposition at the selected layers;
//! 2. gains: one isotropic Gaussian tangent h per block, `|J_skip h|^2/|h|^2` and
//!    `|J_br h|^2/|h|^2` (beyond `--path-max` blocks also the factorized path law, a
//!    Poisson-binomial law with this network's `p_l = b_l^2/(a_l^2+b_l^2)`);
//! 3. paths (up to `--path-max` blocks): one tangent per path length k,
//!    `T'_k = J_skip T_k + J_br T_{k-1}` from `T_0 = h` (the exact path polynomial;
//!    `sum_k T_k` is the full JVP), classes below [`PATH_CLASS_FLOOR`] of the energy dropped;
//! 4. perturbation: the exact first-order output change (a forward tangent) for weight
//!    perturbations with iid entries of each matrix's init standard deviation;
//! 5. backward: `dL/dx_l` and every weight gradient for an output gradient with iid N(0,1)
//!    entries.

use super::network::{Backward, Forward, Network};
use super::rng::Rng;
use super::sample;
use crate::branch::Module;
use crate::metrics::{Metric, eff_depth};
use crate::theory::paths::PathLengths;
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// (metric, layer, source) -> value, for one network.
pub type Values = BTreeMap<crate::profile::Key, f64>;

/// Which layers and metrics to measure on each network (the engine's [`crate::engine::Plan`],
/// resolved against one stack).
#[derive(Clone, Debug)]
pub struct NetworkPlan {
    /// Metrics.
    pub metrics: Vec<Metric>,
    /// `selected[l]`: whether layer l is written.
    pub selected: Vec<bool>,
    /// Exact path polynomial up to this depth.
    pub path_max: usize,
}

/// The coefficients and energy shares of every source at one layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposed {
    /// Token mean of `C_{l,j,t}`, j = 0..=l.
    pub coef: Vec<f64>,
    /// `sum_t |C_{l,j,t} B~_{j,t}|^2 / ||x_l||^2`, j = 0..=l.
    pub weight: Vec<f64>,
}

/// A network's path-length law at one layer.
#[derive(Clone, Debug, PartialEq)]
pub struct PathLaw {
    /// `(k, share)` for the lengths whose share is positive.
    pub shares: Vec<(usize, f64)>,
    /// The mean length.
    pub mean: f64,
}

/// What the metrics read from one sampled network.
pub struct Quantities<'a> {
    /// The network.
    pub net: &'a Network,
    /// Its forward pass.
    pub fw: &'a Forward,
    /// Tokens n.
    pub tokens: f64,
    /// Width d.
    pub width: f64,
    /// The decomposition at the selected layers (if needed).
    pub decomposition: BTreeMap<usize, Decomposed>,
    /// `(a_l^2, b_l^2)` at the selected blocks (if needed).
    pub gains: Vec<Option<(f64, f64)>>,
    /// The path-length law at the selected layers (if needed).
    pub path_laws: BTreeMap<usize, PathLaw>,
    /// `||t_l||^2 / (n d)` of the output change at the selected layers (if needed).
    pub output_change: Vec<Option<f64>>,
    /// The backward pass (if needed).
    pub backward: Option<Backward>,
}

/// The smallest denominator a sampled ratio divides by: below it the squared entries that
/// make it up are subnormal (or it is zero), so the ratio has lost its digits or is 0/0, and
/// [`ratio`] returns NaN, which the profile writes as missing ([`crate::profile::MC_UNDEFINED`]).
/// 1e-280 leaves 28 decades above f64's smallest normal number for the up to ~1e9 terms of a sum.
pub const RATIO_FLOOR: f64 = 1e-280;

/// `num / den`, or NaN when `den` is below [`RATIO_FLOOR`] (underflow or 0/0).
pub fn ratio(num: f64, den: f64) -> f64 {
    if den >= RATIO_FLOOR {
        num / den
    } else {
        f64::NAN
    }
}

/// A sum of squares `energy`, or NaN when it is below [`RATIO_FLOOR`]: its terms have
/// underflowed, so a small value (or 0) would be written as if it were a result.
pub fn resolved(energy: f64) -> f64 {
    if energy >= RATIO_FLOOR {
        energy
    } else {
        f64::NAN
    }
}

impl Quantities<'_> {
    /// `||x_l||_F^2`.
    pub fn energy(&self, l: usize) -> f64 {
        self.fw.xs[l].norm_squared()
    }

    /// `cos(x_l, x_{l-1})` over all tokens, clamped to [-1, 1].
    pub fn cos_prev(&self, l: usize) -> f64 {
        let (x, xp) = (&self.fw.xs[l], &self.fw.xs[l - 1]);
        let (a, b) = (self.energy(l), self.energy(l - 1));
        // sqrt(a b) while the product is a normal number (the historical rounding), else the
        // product of the roots, which cannot overflow or underflow.
        let den = if (a * b).is_normal() {
            (a * b).sqrt()
        } else {
            a.sqrt() * b.sqrt()
        };
        ratio(x.dot(xp), den).clamp(-1.0, 1.0)
    }

    /// `F_{l+1}` on block l+1's branch input of `x_{l-1}` (the other side of `merge_error`).
    pub fn next_branch_on_previous(&self, l: usize) -> DMatrix<f64> {
        let (_, _, u) = self.net.branch_input(l + 1, &self.fw.xs[l - 1]);
        self.net.branches[l].forward(&u).0
    }

    /// The gradient of block l's last weight matrix.
    pub fn last_weight_grad<'b>(&self, bw: &'b Backward, l: usize) -> &'b DMatrix<f64> {
        let last = self.net.branches[l - 1].last_index();
        &bw.weight_grads[l - 1][last]
    }
}

fn energy(m: &DMatrix<f64>) -> f64 {
    m.norm_squared()
}

/// Measures one network: every requested metric at every selected layer it has rows at.
/// Non-finite values are left out.
pub fn measure(net: &Network, plan: &NetworkPlan, rng: &mut Rng) -> Values {
    let depth = net.depth();
    let (d, n) = (net.input.nrows(), net.input.ncols());
    let needs = Metric::needs(&plan.metrics);
    let sel = |l: usize| plan.selected[l];
    // 1. Forward, with the decomposition read at the selected layers.
    let mut decomposition = BTreeMap::new();
    let fw = net.forward(|l, x, dec| {
        if needs.decomposition && sel(l) {
            let total = energy(x);
            let coef = dec
                .coef
                .iter()
                .map(|c| c.iter().sum::<f64>() / n as f64)
                .collect();
            let weight = (0..dec.coef.len())
                .map(|j| dec.source_energy(j) / total)
                .collect();
            decomposition.insert(l, Decomposed { coef, weight });
        }
    });
    let mut q = Quantities {
        net,
        fw: &fw,
        tokens: n as f64,
        width: d as f64,
        decomposition,
        gains: vec![None; depth + 1],
        path_laws: BTreeMap::new(),
        output_change: vec![None; depth + 1],
        backward: None,
    };
    // 2. Gains, one Gaussian tangent per block (and the factorized path law).
    let exact_paths = depth <= plan.path_max;
    let factorized = needs.paths && !exact_paths;
    if needs.gains || factorized {
        let mut dist = PathLengths::default();
        let mut eff = 0.0;
        for l in 1..=depth {
            if !(sel(l) || factorized) {
                continue;
            }
            let h = sample::gaussian(rng, d, n);
            let (s, b) = net.block_jvp(&fw, l, Some(&h), None);
            let (a2, b2) = (
                energy(&s.expect("skip tangent")) / energy(&h),
                energy(&b) / energy(&h),
            );
            if sel(l) {
                q.gains[l] = Some((a2, b2));
            }
            if factorized {
                let p = if a2 + b2 > 0.0 { b2 / (a2 + b2) } else { 0.0 };
                dist.push(p);
                eff += p;
                if sel(l) {
                    let shares = dist.iter().collect();
                    q.path_laws.insert(l, PathLaw { shares, mean: eff });
                }
            }
        }
        if factorized && sel(0) {
            let law = PathLaw {
                shares: vec![(0, 1.0)],
                mean: 0.0,
            };
            q.path_laws.insert(0, law);
        }
    }
    // 3. The exact path polynomial.
    if needs.paths && exact_paths {
        q.path_laws = path_polynomial(net, &fw, plan, rng);
    }
    // 4. The first-order output change.
    if needs.perturbation {
        q.output_change = output_change(net, &fw, plan, rng);
    }
    // 5. Backward.
    if needs.backward {
        let g = sample::gaussian(rng, d, n);
        q.backward = Some(net.backward(&fw, &g));
    }
    let mut v = Values::new();
    for l in (0..=depth).filter(|&l| sel(l)) {
        for &m in &plan.metrics {
            if m.info().layers.contains(l, depth) {
                // Non-finite values are kept: the estimate over networks becomes non-finite
                // and is written as missing with its reason (Profile::settle), rather than
                // silently averaging over the networks where it happened to be finite.
                m.sampled(&q, l, &mut |s, x| {
                    v.insert((m, l, s), x);
                });
            }
        }
    }
    v
}

/// `||t_l||^2 / (n d)` of the first-order change of the depth-l output (through the final
/// Norm, if any) at the selected layers.
fn output_change(
    net: &Network,
    fw: &Forward,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> Vec<Option<f64>> {
    let depth = net.depth();
    let (d, n) = (net.input.nrows() as f64, net.input.ncols() as f64);
    let mut out = vec![None; depth + 1];
    let mut t: Option<DMatrix<f64>> = None;
    if plan.selected[0] {
        out[0] = Some(0.0);
    }
    for (l, slot) in out.iter_mut().enumerate().skip(1) {
        let dw: Vec<DMatrix<f64>> = net.branches[l - 1]
            .weights()
            .iter()
            .zip(&net.weight_stds[l - 1])
            .map(|(w, s)| sample::gaussian(rng, w.nrows(), w.ncols()) * *s)
            .collect();
        let (s, b) = net.block_jvp(fw, l, t.as_ref(), Some(&dw));
        let next = match s {
            Some(s) => s + b,
            None => b,
        };
        if plan.selected[l] {
            let o = if net.spec.final_norm.is_norm() {
                let c = super::norm::forward(net.spec.norm, net.eps, &fw.xs[l]);
                super::norm::jacobian(&c, &next)
            } else {
                next.clone()
            };
            *slot = Some(energy(&o) / (n * d));
        }
        t = Some(next);
    }
    out
}

/// Energy share below which a path class (its tangent `T_k`) is dropped. A class's
/// descendants keep its share of the energy (exactly for per-token branches, whose blocks scale
/// every class by `a^2 + b^2` in total), so dropping classes below this share changes
/// `path_len` and `eff_depth` by at most about `L^2 * 1e-12` (< 1e-7 at L = 256), far below
/// any Monte Carlo standard error, while cutting the O(L^2) cost of the exact polynomial to
/// O(L x the width of the law).
pub const PATH_CLASS_FLOOR: f64 = 1e-12;

/// Share of paths of each length at the selected layers: `T_k` propagated for every k, pruned
/// at [`PATH_CLASS_FLOOR`].
fn path_polynomial(
    net: &Network,
    fw: &Forward,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> BTreeMap<usize, PathLaw> {
    let depth = net.depth();
    let (d, n) = (net.input.nrows(), net.input.ncols());
    let mut laws = BTreeMap::new();
    let mut t: Vec<Option<DMatrix<f64>>> = vec![Some(sample::gaussian(rng, d, n))];
    let record = |laws: &mut BTreeMap<usize, PathLaw>, l: usize, t: &[Option<DMatrix<f64>>]| {
        let e: Vec<f64> = t.iter().map(|x| x.as_ref().map_or(0.0, energy)).collect();
        let total: f64 = e.iter().sum();
        if total <= 0.0 {
            return;
        }
        let all: Vec<(usize, f64)> = e
            .iter()
            .enumerate()
            .map(|(k, ek)| (k, ek / total))
            .collect();
        let mean = eff_depth::mean_length(all.iter().copied());
        let shares = all.into_iter().filter(|&(_, s)| s > 0.0).collect();
        laws.insert(l, PathLaw { shares, mean });
    };
    if plan.selected[0] {
        record(&mut laws, 0, &t);
    }
    let last = (0..=depth).rev().find(|&l| plan.selected[l]).unwrap_or(0);
    for l in 1..=last {
        let mut next: Vec<Option<DMatrix<f64>>> = vec![None; t.len() + 1];
        for (k, tk) in t.iter().enumerate() {
            let Some(tk) = tk else { continue };
            let (s, b) = net.block_jvp(fw, l, Some(tk), None);
            let s = s.expect("skip tangent");
            next[k] = Some(match next[k].take() {
                Some(x) => x + s,
                None => s,
            });
            next[k + 1] = Some(b);
        }
        let total: f64 = next.iter().map(|x| x.as_ref().map_or(0.0, energy)).sum();
        for x in next.iter_mut() {
            if x.as_ref()
                .is_some_and(|m| energy(m) < PATH_CLASS_FLOOR * total)
            {
                *x = None;
            }
        }
        t = next;
        if plan.selected[l] {
            record(&mut laws, l, &t);
        }
    }
    laws
}
