//! Every metric of THEORY.md section 5 measured on one sampled network. Each value averages
//! over the network's tokens; [`super::run`] then treats networks as independent samples.
//!
//! - `stream_sq` `sum_t |x_t|^2/(n d)`; `corr` `(|sum_t x_t|^2 - sum_t |x_t|^2) / ((n-1) sum_t |x_t|^2)`;
//! - `coef` the token mean of `C_{l,j,t}`; `branch_weight` `sum_t |C B~|^2 / sum_t |x_t|^2`;
//! - `skip_gain`, `branch_gain`: `|J h|^2/|h|^2` for one isotropic Gaussian tangent h per
//!   block through the skip and the branch path;
//! - `path_len`, `eff_depth`: one tangent per path length k, `T'_k = J_skip T_k + J_br T_{k-1}`
//!   from `T_0 = h` (exact path polynomial; `sum_k T_k` is the full JVP), shares
//!   `|T_k|^2 / sum_k |T_k|^2` (classes below [`PATH_PRUNE`] of the energy dropped); beyond
//!   `--path-max` blocks, the factorized estimator: a
//!   Poisson-binomial law with this network's `p_l = b_l^2/(a_l^2+b_l^2)`;
//! - `grad_sq` `|dL/dx_l|^2/(n d)` for an output gradient with iid N(0,1) entries;
//!   `weight_grad_sq` `|dL/dW_last|_F^2/(n d^2)` (the per-token value when token contributions
//!   are uncorrelated);
//! - `rel_update`, `cos_prev`, `angular_dist` over all tokens; `merge_error` by evaluating
//!   `F_{l+1}` on block l+1's branch input of `x_{l-1}`;
//! - `output_change`: the exact first-order output change (a forward tangent) for weight
//!   perturbations with iid entries of each matrix's init standard deviation, `|t|^2/(n d)`.

use super::network::Network;
use super::rng::Rng;
use super::sample;
use crate::metrics::Metric;
use crate::theory::paths::PathLengths;
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// (metric, layer, source) -> value.
pub type Values = BTreeMap<(Metric, u64, Option<u64>), f64>;

/// Which layers and metrics to measure.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Metrics.
    pub metrics: Vec<Metric>,
    /// `selected[l]`: whether layer l is written.
    pub selected: Vec<bool>,
    /// Exact path polynomial up to this depth.
    pub path_max: usize,
}

impl Plan {
    fn wants(&self, m: Metric) -> bool {
        self.metrics.contains(&m)
    }
}

fn energy(m: &DMatrix<f64>) -> f64 {
    m.norm_squared()
}

/// Measures one network.
pub fn measure(net: &Network, plan: &Plan, rng: &mut Rng) -> Values {
    let depth = net.depth();
    let (d, n) = (net.input.nrows() as f64, net.input.ncols() as f64);
    let mut v = Values::new();
    let sel = |l: usize| plan.selected[l];
    let put = |v: &mut Values, m: Metric, l: usize, s: Option<usize>, x: f64| {
        if x.is_finite() {
            v.insert((m, l as u64, s.map(|s| s as u64)), x);
        }
    };
    // Forward, with the decomposition read at the selected layers.
    let want_dec = plan.wants(Metric::Coef) || plan.wants(Metric::BranchWeight);
    let mut dec_rows: Vec<(usize, Vec<f64>, Vec<f64>)> = Vec::new();
    let fw = net.forward(|l, x, dec| {
        if want_dec && sel(l) {
            let total = energy(x);
            let coef = dec.coef.iter().map(|c| c.iter().sum::<f64>() / n).collect();
            let w = (0..dec.coef.len())
                .map(|j| dec.source_energy(j) / total)
                .collect();
            dec_rows.push((l, coef, w));
        }
    });
    for (l, coef, w) in dec_rows {
        for j in 0..coef.len() {
            if plan.wants(Metric::Coef) {
                put(&mut v, Metric::Coef, l, Some(j), coef[j]);
            }
            if plan.wants(Metric::BranchWeight) {
                put(&mut v, Metric::BranchWeight, l, Some(j), w[j]);
            }
        }
    }
    for l in (0..=depth).filter(|&l| sel(l)) {
        let x = &fw.xs[l];
        let e = energy(x);
        put(&mut v, Metric::StreamSq, l, None, e / (n * d));
        if n >= 2.0 {
            let s = x.column_sum().norm_squared();
            put(&mut v, Metric::Corr, l, None, (s - e) / ((n - 1.0) * e));
        }
        if l >= 1 {
            let xp = &fw.xs[l - 1];
            let ep = energy(xp);
            let rel = (energy(&(x - xp)) / ep).sqrt();
            let cos = (x.dot(xp) / (e * ep).sqrt()).clamp(-1.0, 1.0);
            put(&mut v, Metric::RelUpdate, l, None, rel);
            put(&mut v, Metric::CosPrev, l, None, cos);
            put(
                &mut v,
                Metric::AngularDist,
                l,
                None,
                cos.acos() / std::f64::consts::PI,
            );
        }
        if plan.wants(Metric::MergeError) && l >= 1 && l < depth {
            let (_, _, u) = net.branch_input(l + 1, &fw.xs[l - 1]);
            let (f_prev, _) = net.branches[l].forward(&u);
            let f = &fw.blocks[l].out;
            let den = energy(f);
            if den > 0.0 {
                put(
                    &mut v,
                    Metric::MergeError,
                    l,
                    None,
                    energy(&(f - f_prev)) / den,
                );
            }
        }
    }
    // Skip and branch path gains, one Gaussian tangent per block.
    let exact_paths = depth <= plan.path_max;
    let want_paths = plan.wants(Metric::EffDepth) || plan.wants(Metric::PathLen);
    let want_gains = plan.wants(Metric::SkipGain) || plan.wants(Metric::BranchGain);
    if want_gains || (want_paths && !exact_paths) {
        let mut dist = PathLengths::default();
        let mut eff = 0.0;
        for l in 1..=depth {
            if !(sel(l) || (want_paths && !exact_paths)) {
                continue;
            }
            let h = sample::gaussian(rng, d as usize, n as usize);
            let (s, b) = net.block_jvp(&fw, l, Some(&h), None);
            let (a2, b2) = (
                energy(&s.expect("skip tangent")) / energy(&h),
                energy(&b) / energy(&h),
            );
            if sel(l) {
                put(&mut v, Metric::SkipGain, l, None, a2);
                put(&mut v, Metric::BranchGain, l, None, b2);
            }
            if want_paths && !exact_paths {
                let p = if a2 + b2 > 0.0 { b2 / (a2 + b2) } else { 0.0 };
                dist.push(p);
                eff += p;
                if sel(l) {
                    put(&mut v, Metric::EffDepth, l, None, eff);
                    if plan.wants(Metric::PathLen) {
                        for (k, pk) in dist.iter() {
                            put(&mut v, Metric::PathLen, l, Some(k), pk);
                        }
                    }
                }
            }
        }
        if want_paths && !exact_paths && sel(0) {
            put(&mut v, Metric::EffDepth, 0, None, 0.0);
            put(&mut v, Metric::PathLen, 0, Some(0), 1.0);
        }
    }
    if want_paths && exact_paths {
        path_polynomial(net, &fw, plan, rng, &mut v);
    }
    if plan.wants(Metric::OutputChange) {
        let mut t: Option<DMatrix<f64>> = None;
        if sel(0) {
            put(&mut v, Metric::OutputChange, 0, None, 0.0);
        }
        for l in 1..=depth {
            let dw: Vec<DMatrix<f64>> = net.branches[l - 1]
                .weights()
                .iter()
                .zip(&net.weight_stds[l - 1])
                .map(|(w, s)| sample::gaussian(rng, w.nrows(), w.ncols()) * *s)
                .collect();
            let (s, b) = net.block_jvp(&fw, l, t.as_ref(), Some(&dw));
            let next = match s {
                Some(s) => s + b,
                None => b,
            };
            if sel(l) {
                let out = if net.spec.final_norm.is_norm() {
                    let c = super::norm::forward(net.spec.norm, net.eps, &fw.xs[l]);
                    super::norm::jacobian(&c, &next)
                } else {
                    next.clone()
                };
                put(
                    &mut v,
                    Metric::OutputChange,
                    l,
                    None,
                    energy(&out) / (n * d),
                );
            }
            t = Some(next);
        }
    }
    if plan.wants(Metric::GradSq) || plan.wants(Metric::WeightGradSq) {
        let g = sample::gaussian(rng, d as usize, n as usize);
        let bw = net.backward(&fw, &g);
        for l in (0..=depth).filter(|&l| sel(l)) {
            put(
                &mut v,
                Metric::GradSq,
                l,
                None,
                energy(&bw.grads[l]) / (n * d),
            );
            if l >= 1 {
                let last = net.branches[l - 1].last_index();
                let gw = energy(&bw.weight_grads[l - 1][last]);
                put(&mut v, Metric::WeightGradSq, l, None, gw / (n * d * d));
            }
        }
    }
    v
}

/// Energy share below which a path class (its tangent `T_k`) is dropped. A class's
/// descendants keep its share of the energy (exactly for per-token branches, whose blocks scale
/// every class by `a^2 + b^2` in total), so dropping classes below this share changes
/// `path_len` and `eff_depth` by at most about `L^2 * 1e-12` (< 1e-7 at L = 256), far below
/// any Monte Carlo standard error, while cutting the O(L^2) cost of the exact polynomial to
/// O(L x the width of the law).
pub const PATH_PRUNE: f64 = 1e-12;

/// Share of paths of each length: `T_k` propagated for every k, pruned at [`PATH_PRUNE`].
fn path_polynomial(
    net: &Network,
    fw: &super::network::Forward,
    plan: &Plan,
    rng: &mut Rng,
    v: &mut Values,
) {
    let depth = net.depth();
    let (d, n) = (net.input.nrows(), net.input.ncols());
    let mut t: Vec<Option<DMatrix<f64>>> = vec![Some(sample::gaussian(rng, d, n))];
    let record = |v: &mut Values, l: usize, t: &[Option<DMatrix<f64>>]| {
        let e: Vec<f64> = t.iter().map(|x| x.as_ref().map_or(0.0, energy)).collect();
        let total: f64 = e.iter().sum();
        if total <= 0.0 {
            return;
        }
        let mut mean = 0.0;
        for (k, ek) in e.iter().enumerate() {
            let share = ek / total;
            mean += k as f64 * share;
            if plan.metrics.contains(&Metric::PathLen) && share > 0.0 {
                v.insert((Metric::PathLen, l as u64, Some(k as u64)), share);
            }
        }
        if plan.metrics.contains(&Metric::EffDepth) {
            v.insert((Metric::EffDepth, l as u64, None), mean);
        }
    };
    if plan.selected[0] {
        record(v, 0, &t);
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
            if x.as_ref().is_some_and(|m| energy(m) < PATH_PRUNE * total) {
                *x = None;
            }
        }
        t = next;
        if plan.selected[l] {
            record(v, l, &t);
        }
    }
}
