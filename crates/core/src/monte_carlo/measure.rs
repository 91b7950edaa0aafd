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
//! 5. backward: `dL/dx_l` and the last weight matrix's gradient of every block for an output
//!    gradient with iid N(0,1) entries.
//!
//! Memory (`Blocks`, [`Memory`]): a streamed network is never held whole. Its forward pass draws block l's weights
//! just before block l runs (the stream's draws in the same order as drawing the whole network
//! first), saves the 32-byte generator state before them, and keeps only the streams `x_l`;
//! every later pass regenerates block l's weights from the saved state and recomputes its
//! forward step from `x_{l-1}` ([`super::network::step`]), so the values are bit-identical to
//! the held network's and a network holds `O(d^2 r + L d n)` values. In the forward and
//! backward passes an MLP block is run holding one of its two matrices at a time
//! ([`LeanMlp`]), and its last weight gradient is reduced to its squared norm without being
//! held ([`crate::branch::outer_energy`]), so a streamed network measuring forward and backward
//! metrics peaks within 2x of `8 (d^2 r + L d n)` bytes at d = 512, L = 32 (README
//! "Performance"). The other passes (gains, paths, perturbation, merge error) regenerate a
//! block whole, and the perturbation pass also holds a weight perturbation of the same size:
//! about `4 d^2 r` values at once. Each pass reduces what it
//! computes to the scalars the metrics read ([`Quantities`]) as it goes; statistics are
//! accumulated in f64 in both precisions.

use super::lean_mlp::LeanMlp;
pub use super::memory::Memory;
use super::network::{self, BlockPass, Decomposition, Network};
use super::norm::NormCache;
use super::sample;
use super::sampler;
use super::sampling::McConfig;
use crate::branch::{Branch, Module};
pub use crate::metrics::sampled::{Decomposed, PathLaw, Quantities, RATIO_FLOOR, ratio, resolved};
use crate::metrics::{Metric, eff_depth};
use crate::spec::{SkipScale, StackSpec};
use crate::theory::paths::PathLengths;
use nalgebra::{DMatrix, DVector};
use normscope_numeric::gemm::{Real, Timed, timed};
use normscope_numeric::rng::Rng;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// (metric, layer, source) -> value, for one network.
///
/// # Examples
///
/// One network's values, keyed by `(metric, layer, source)`. In a Post-LN stack with norm
/// epsilon 0 every `x_l` (l >= 1) is a LayerNorm output, so `|x_l|^2 / d = 1` per token up to
/// rounding:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::measure::{NetworkPlan, Values};
/// use normscope_core::monte_carlo::{McConfig, RawMc, measure_network};
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "relu-mlp".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc { eps: 0.0, ..RawMc::default() })?;
/// let spec = cfg.model.stack(normscope_core::placement::find("post")?)?;
/// let plan = NetworkPlan {
///     metrics: vec![Metric::StreamSq],
///     selected: vec![true; 3],
///     path_max: 8,
/// };
/// let values: Values = measure_network(&spec, &cfg, &plan, 0);
/// let keys: Vec<_> = values.keys().copied().collect();
/// assert_eq!(
///     keys,
///     [(Metric::StreamSq, 0, None), (Metric::StreamSq, 1, None), (Metric::StreamSq, 2, None)]
/// );
/// assert!((values[&(Metric::StreamSq, 2, None)] - 1.0).abs() < 1e-12);
/// # Ok(())
/// # }
/// ```
pub type Values = BTreeMap<crate::profile::Key, f64>;

/// Which layers and metrics to measure on each network (the engine's [`crate::engine::Plan`],
/// resolved against one stack).
///
/// # Examples
///
/// Only the selected layers are written: layers 0 and 2 of a depth-2 stack.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::measure::NetworkPlan;
/// use normscope_core::monte_carlo::{McConfig, RawMc, measure_network};
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "linear".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let spec = cfg.model.stack(normscope_core::placement::find("pre")?)?;
/// let plan = NetworkPlan {
///     metrics: vec![Metric::StreamSq],
///     selected: vec![true, false, true],
///     path_max: 8,
/// };
/// let layers: Vec<usize> = measure_network(&spec, &cfg, &plan, 0).keys().map(|k| k.1).collect();
/// assert_eq!(layers, [0, 2]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct NetworkPlan {
    /// Metrics.
    pub metrics: Vec<Metric>,
    /// `selected[l]`: whether layer l is written.
    pub selected: Vec<bool>,
    /// Exact path polynomial up to this depth.
    pub path_max: usize,
}

/// Where a measured network's blocks come from.
enum Weights<'a, T: Real> {
    /// A network held whole (trained weights: [`crate::train::lens`]).
    Held(&'a Network<T>),
    /// Drawn from the network's stream: the generator saved before each block's draws, and
    /// the branches themselves when the network is held ([`Memory`]).
    Drawn {
        spec: &'a StackSpec,
        cfg: &'a McConfig,
        memory_mean: Option<DVector<T>>,
        saved: Vec<Rng>,
        kept: Vec<Branch<T>>,
    },
}

/// A network after its forward pass: its streams `x_l`, what each block's step was given,
/// and (when held) every block's branch and forward cache; [`Blocks::block`] hands out block
/// l's branch and cache, regenerating them when they were not kept.
pub(crate) struct Blocks<'a, T: Real> {
    spec: &'a StackSpec,
    eps: f64,
    weights: Weights<'a, T>,
    /// Init standard deviation of each of block l's matrices (index l - 1).
    stds: Vec<Vec<f64>>,
    /// `x_l`, l = 0..=L.
    xs: Vec<DMatrix<T>>,
    /// The Admin omega block l's step was given (index l - 1).
    admin: Vec<f64>,
    /// Every block's forward cache, when held.
    passes: Vec<BlockPass<T>>,
    keep: bool,
    final_norm: Option<NormCache<T>>,
}

impl<T: Real> Blocks<'_, T> {
    /// Depth L.
    pub(crate) fn depth(&self) -> usize {
        self.spec.depth
    }

    /// `x_l`.
    pub(crate) fn x(&self, l: usize) -> &DMatrix<T> {
        &self.xs[l]
    }

    /// Block l's branch: held, or regenerated from the generator saved before its draws.
    pub(crate) fn branch(&self, l: usize) -> Cow<'_, Branch<T>> {
        match &self.weights {
            Weights::Held(net) => Cow::Borrowed(&net.branches[l - 1]),
            Weights::Drawn { kept, .. } if self.keep => Cow::Borrowed(&kept[l - 1]),
            Weights::Drawn {
                spec,
                cfg,
                memory_mean,
                saved,
                ..
            } => {
                let mut r = saved[l - 1].clone();
                let b = timed(Timed::Draw, || {
                    sampler::draw_block(spec, cfg, l, memory_mean.as_ref(), &mut r).0
                });
                Cow::Owned(b)
            }
        }
    }

    /// Block l's backward step from `g = dL/dx_l`: `(dL/dx_{l-1}, ||dL/dW_last||^2)`
    /// ([`network::backward_step_last_sq`]). A streamed MLP block is recomputed and
    /// back-propagated holding one weight matrix at a time ([`LeanMlp`]).
    pub(crate) fn backward_step(&self, l: usize, g: &DMatrix<T>) -> (DMatrix<T>, f64) {
        if let (false, Weights::Drawn { cfg, saved, .. }) = (self.keep, &self.weights)
            && let Some(lean) = LeanMlp::of(self.spec, cfg, l)
        {
            let mut rng = saved[l - 1].clone();
            let mut w2 = None;
            let forward = |u: &DMatrix<T>| {
                let (out, cache, w) = lean.forward(&mut rng, u);
                w2 = Some(w);
                (out, cache)
            };
            let x = &self.xs[l - 1];
            let (pass, _) =
                network::step_with(self.spec, self.eps, l, forward, x, self.admin[l - 1]);
            let w2 = w2.expect("the step ran the branch");
            return network::backward_step_with(&pass, g, |g_out| {
                lean.backward(w2, &saved[l - 1], &pass.branch, g_out)
            });
        }
        let (branch, pass) = self.block(l);
        network::backward_step_last_sq(&branch, &pass, g)
    }

    /// Block l's branch and forward cache (recomputed from `x_{l-1}` when not held).
    pub(crate) fn block(&self, l: usize) -> (Cow<'_, Branch<T>>, Cow<'_, BlockPass<T>>) {
        let branch = self.branch(l);
        let pass = if self.keep {
            Cow::Borrowed(&self.passes[l - 1])
        } else {
            let x = &self.xs[l - 1];
            let (p, _) = network::step(self.spec, self.eps, l, &branch, x, self.admin[l - 1]);
            Cow::Owned(p)
        };
        (branch, pass)
    }
}

impl<T: Real> Network<T> {
    /// The forward pass. `on_layer(l, &x_l, &decomposition)` is called for l = 0..=L with the
    /// decomposition at that layer (the engine's one forward loop,
    /// `held_forward`, every block's cache kept).
    pub fn forward(
        &self,
        on_layer: impl FnMut(usize, &DMatrix<T>, &Decomposition),
    ) -> network::Forward<T> {
        held_forward(self, on_layer)
    }
}

/// The forward pass of a held network, every block's cache kept: what
/// [`Network::forward`] returns.
pub(super) fn held_forward<T: Real>(
    net: &Network<T>,
    on_layer: impl FnMut(usize, &DMatrix<T>, &Decomposition),
) -> network::Forward<T> {
    let w = Weights::Held(net);
    let b = forward(
        &net.spec,
        net.eps,
        w,
        net.input.clone(),
        true,
        None,
        on_layer,
    );
    network::Forward {
        xs: b.xs,
        blocks: b.passes,
        final_norm: b.final_norm,
    }
}

/// The forward pass over `weights` from `input`, drawing each block's weights from `rng` (the
/// network's stream) first when they are [`Weights::Drawn`]; `on_layer(l, x_l,
/// decomposition)` at every layer. The one forward loop of the engine: held networks
/// ([`held_forward`]) run it too.
fn forward<'a, T: Real>(
    spec: &'a StackSpec,
    eps: f64,
    mut weights: Weights<'a, T>,
    input: DMatrix<T>,
    keep: bool,
    mut rng: Option<&mut Rng>,
    mut on_layer: impl FnMut(usize, &DMatrix<T>, &Decomposition),
) -> Blocks<'a, T> {
    let depth = spec.depth;
    let mut dec = Decomposition::of_input(&input);
    on_layer(0, &input, &dec);
    let mut xs = Vec::with_capacity(depth + 1);
    xs.push(input);
    let (mut stds, mut admin) = (Vec::with_capacity(depth), Vec::with_capacity(depth));
    let mut passes = Vec::new();
    let mut omega: f64 = 1.0;
    for l in 1..=depth {
        let x = &xs[l - 1];
        let (pass, y, branch) = match &mut weights {
            Weights::Held(net) => {
                stds.push(net.weight_stds[l - 1].clone());
                let b = &net.branches[l - 1];
                let (pass, y) = network::step(spec, eps, l, b, x, omega);
                (pass, y, None)
            }
            Weights::Drawn {
                cfg,
                memory_mean,
                saved,
                ..
            } => {
                let rng = rng
                    .as_deref_mut()
                    .expect("drawn weights come from the network's stream");
                saved.push(rng.clone());
                match LeanMlp::of(spec, cfg, l).filter(|_| !keep) {
                    Some(lean) => {
                        stds.push(lean.stds());
                        let forward = |u: &DMatrix<T>| {
                            let (out, cache, _w2) = lean.forward(rng, u);
                            (out, cache)
                        };
                        let (pass, y) = network::step_with(spec, eps, l, forward, x, omega);
                        (pass, y, None)
                    }
                    None => {
                        let (b, s) = timed(Timed::Draw, || {
                            sampler::draw_block(spec, cfg, l, memory_mean.as_ref(), rng)
                        });
                        stds.push(s);
                        let (pass, y) = network::step(spec, eps, l, &b, x, omega);
                        (pass, y, Some(b))
                    }
                }
            }
        };
        admin.push(omega);
        dec.advance(spec, &pass);
        if spec.block(l).skip == SkipScale::AdminOmega {
            omega = network::next_admin_omega(x, &pass);
        }
        on_layer(l, &y, &dec);
        xs.push(y);
        if keep {
            passes.push(pass);
            if let (Weights::Drawn { kept, .. }, Some(b)) = (&mut weights, branch) {
                kept.push(b);
            }
        }
    }
    let final_norm = network::final_norm(spec, eps, &xs[depth]);
    Blocks {
        spec,
        eps,
        weights,
        stds,
        xs,
        admin,
        passes,
        keep,
        final_norm,
    }
}

fn energy<T: Real>(m: &DMatrix<T>) -> f64 {
    T::sum_sq(m)
}

/// `m` in f64: itself for f64 (so every statistic keeps its historical rounding), widened
/// for f32.
fn wide<T: Real>(m: &DMatrix<T>) -> Cow<'_, DMatrix<f64>> {
    match (m as &dyn std::any::Any).downcast_ref::<DMatrix<f64>>() {
        Some(x) => Cow::Borrowed(x),
        None => Cow::Owned(m.map(|v| v.as_f64())),
    }
}

/// Samples a network's draws from `rng` under `cfg` and measures it in float type `T`, held
/// or streamed as `memory` says (bit-identical either way).
pub(crate) fn measure_drawn<T: Real>(
    spec: &StackSpec,
    cfg: &McConfig,
    plan: &NetworkPlan,
    rng: &mut Rng,
    memory: Memory,
) -> Values {
    let (input, memory_mean) = sampler::draw_inputs::<T>(cfg, rng);
    let weights = Weights::Drawn {
        spec,
        cfg,
        memory_mean,
        saved: Vec::with_capacity(spec.depth),
        kept: Vec::new(),
    };
    let keep = memory.holds(cfg, spec.depth, &plan.metrics, 1);
    run(spec, cfg.eps, weights, input, keep, plan, rng)
}

/// Measures a network held whole (trained weights; [`crate::train::lens`]): every requested
/// metric at every selected layer it has rows at.
pub fn measure<T: Real>(net: &Network<T>, plan: &NetworkPlan, rng: &mut Rng) -> Values {
    let w = Weights::Held(net);
    run(&net.spec, net.eps, w, net.input.clone(), true, plan, rng)
}

/// The passes of the module doc in order, then every requested metric at every selected
/// layer. Non-finite values are kept: the estimate over networks becomes non-finite and is
/// written as missing with its reason (Profile::settle), rather than silently averaging over
/// the networks where it happened to be finite.
fn run<T: Real>(
    spec: &StackSpec,
    eps: f64,
    weights: Weights<'_, T>,
    input: DMatrix<T>,
    keep: bool,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> Values {
    let depth = spec.depth;
    let (d, n) = (input.nrows(), input.ncols());
    let needs = Metric::needs(&plan.metrics);
    let sel = |l: usize| plan.selected[l];
    let mut q = Quantities {
        tokens: n as f64,
        width: d as f64,
        energy: Vec::with_capacity(depth + 1),
        dot_prev: vec![None; depth + 1],
        column_sum_sq: vec![None; depth + 1],
        step_sq: vec![None; depth + 1],
        merge: vec![None; depth + 1],
        gains: vec![None; depth + 1],
        output_change: vec![None; depth + 1],
        grad_sq: vec![None; depth + 1],
        last_weight_grad_sq: vec![None; depth + 1],
        ..Quantities::default()
    };
    // 1. Forward, with the stream statistics and the decomposition read at each layer while
    // x_l is at hand.
    let mut prev: Option<DMatrix<T>> = None;
    let blocks = timed(Timed::Pass, || {
        forward(
            spec,
            eps,
            weights,
            input,
            keep,
            Some(&mut *rng),
            |l, x, dec| {
                let total = energy(x);
                q.energy.push(total);
                if let Some(xp) = &prev {
                    q.dot_prev[l] = Some(T::dot(x, xp));
                    if sel(l) && needs.step {
                        q.step_sq[l] = Some((&*wide(x) - &*wide(xp)).norm_squared());
                    }
                }
                if sel(l) && needs.column_sum {
                    q.column_sum_sq[l] = Some(wide(x).column_sum().norm_squared());
                }
                if needs.decomposition && sel(l) {
                    let coef = dec
                        .coef
                        .iter()
                        .map(|c| c.iter().sum::<f64>() / n as f64)
                        .collect();
                    let weight = (0..dec.coef.len())
                        .map(|j| dec.source_energy(j) / total)
                        .collect();
                    q.decomposition.insert(l, Decomposed { coef, weight });
                }
                prev = Some(x.clone());
            },
        )
    });
    drop(prev);
    if needs.merge {
        merge_error(&blocks, plan, &mut q);
    }
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
            let h = gaussian::<T>(rng, d, n);
            let (branch, pass) = blocks.block(l);
            let (s, b) = network::block_jvp(&branch, &pass, Some(&h), None);
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
        q.path_laws = path_polynomial(&blocks, plan, rng);
    }
    // 4. The first-order output change.
    if needs.perturbation {
        q.output_change = output_change(&blocks, plan, rng);
    }
    // 5. Backward.
    if needs.backward {
        timed(Timed::Pass, || backward(&blocks, rng, &mut q));
    }
    let mut v = Values::new();
    for l in (0..=depth).filter(|&l| sel(l)) {
        for &m in &plan.metrics {
            if m.info().layers.contains(l, depth) {
                m.sampled(&q, l, &mut |s, x| {
                    v.insert((m, l, s), x);
                });
            }
        }
    }
    v
}

/// A standard normal d x n matrix in `T` (drawn in f64).
fn gaussian<T: Real>(rng: &mut Rng, d: usize, n: usize) -> DMatrix<T> {
    sample::into_real(sample::gaussian(rng, d, n))
}

/// `merge_error` at the selected interior layers: block l+1's branch on its own input and on
/// the input `x_{l-1}` would give it.
fn merge_error<T: Real>(blocks: &Blocks<'_, T>, plan: &NetworkPlan, q: &mut Quantities) {
    let depth = blocks.depth();
    for l in (1..depth).filter(|&l| plan.selected[l]) {
        let (branch, pass) = blocks.block(l + 1);
        let (_, _, u) = network::branch_input(blocks.spec, blocks.eps, l + 1, blocks.x(l - 1));
        let f_prev = wide(&branch.forward(&u).0).into_owned();
        let f = wide(&pass.out);
        q.merge[l] = Some(((&*f - f_prev).norm_squared(), f.norm_squared()));
    }
}

/// Backprop of an output gradient with iid N(0, 1) entries, block by block, keeping
/// `||dL/dx_l||^2` and the squared norm of each block's last weight gradient.
fn backward<T: Real>(blocks: &Blocks<'_, T>, rng: &mut Rng, q: &mut Quantities) {
    let depth = blocks.depth();
    let (d, n) = (blocks.x(0).nrows(), blocks.x(0).ncols());
    let g = gaussian::<T>(rng, d, n);
    let mut grad = network::final_jacobian(&blocks.final_norm, &g);
    q.grad_sq[depth] = Some(energy(&grad));
    for l in (1..=depth).rev() {
        let (gx, gw_sq) = blocks.backward_step(l, &grad);
        q.last_weight_grad_sq[l] = Some(gw_sq);
        q.grad_sq[l - 1] = Some(energy(&gx));
        grad = gx;
    }
}

/// `||t_l||^2 / (n d)` of the first-order change of the depth-l output (through the final
/// Norm, if any) at the selected layers.
fn output_change<T: Real>(
    blocks: &Blocks<'_, T>,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> Vec<Option<f64>> {
    let depth = blocks.depth();
    let (d, n) = (blocks.x(0).nrows() as f64, blocks.x(0).ncols() as f64);
    let mut out = vec![None; depth + 1];
    let mut t: Option<DMatrix<T>> = None;
    if plan.selected[0] {
        out[0] = Some(0.0);
    }
    for (l, slot) in out.iter_mut().enumerate().skip(1) {
        let (branch, pass) = blocks.block(l);
        let dw: Vec<DMatrix<T>> = branch
            .weights()
            .iter()
            .zip(&blocks.stds[l - 1])
            .map(|(w, s)| sample::into_real(sample::gaussian(rng, w.nrows(), w.ncols()) * *s))
            .collect();
        let (s, b) = network::block_jvp(&branch, &pass, t.as_ref(), Some(&dw));
        let next = match s {
            Some(s) => s + b,
            None => b,
        };
        if plan.selected[l] {
            let o = if blocks.spec.final_norm.is_norm() {
                let c = super::norm::forward_with(
                    blocks.spec.norm,
                    blocks.spec.layout,
                    blocks.eps,
                    blocks.x(l),
                );
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
fn path_polynomial<T: Real>(
    blocks: &Blocks<'_, T>,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> BTreeMap<usize, PathLaw> {
    let depth = blocks.depth();
    let (d, n) = (blocks.x(0).nrows(), blocks.x(0).ncols());
    let mut laws = BTreeMap::new();
    let mut t: Vec<Option<DMatrix<T>>> = vec![Some(gaussian(rng, d, n))];
    let record = |laws: &mut BTreeMap<usize, PathLaw>, l: usize, t: &[Option<DMatrix<T>>]| {
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
        let mut next: Vec<Option<DMatrix<T>>> = vec![None; t.len() + 1];
        let (branch, pass) = blocks.block(l);
        for (k, tk) in t.iter().enumerate() {
            let Some(tk) = tk else { continue };
            let (s, b) = network::block_jvp(&branch, &pass, Some(tk), None);
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
