//! A sampled network: its forward pass with the exact per-token decomposition, block
//! Jacobian-vector products, and the backward pass.
//!
//! Decomposition (docs/theory.md, "The metrics"): a LayerNorm or RMSNorm is the centering P
//! (LayerNorm only) followed by a per-token scalar `1/sigma` (the other norms have no such
//! scalar, and the decomposition is not kept for them), so `x_l = sum_j C_{l,j} B~_j` holds exactly per token, with
//! `B~_j = P B_j` once an LN has acted on source j and `B~_j = B_j` before. Coefficients are
//! updated in place (`O(l n)` per block) and squared norms of every source are kept raw and
//! centered, so `branch_weight` costs `O(l n)` per layer and memory stays `O(L d n)`.

use super::norm::{self, NormCache};
use crate::branch::{Branch, Cache, Module};
use crate::spec::{InputScale, SkipScale, StackSpec};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// A network with its weights and input.
///
/// # Examples
///
/// A network drawn by the sampler: L = 2 ReLU-MLP blocks of width 8 over 4 tokens, under He
/// init (`Var = 2 / fan_in`: `W1` is 32 x 8 with std `sqrt(2/8) = 0.5`, `W2` 8 x 32 with
/// `sqrt(2/32) = 0.25`).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::network::Network;
/// use normscope_core::monte_carlo::{McConfig, RawMc, sampler};
/// use normscope_numeric::rng;
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "relu-mlp".into(),
///     init: "he".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let spec = cfg.model.stack(normscope_core::placement::find("pre")?)?;
/// let net: Network = sampler::network(&spec, &cfg, &mut rng::network_rng(0, 0, 0));
/// assert_eq!(net.depth(), 2);
/// assert_eq!(net.branches.len(), 2);
/// assert_eq!(net.input.shape(), (8, 4));
/// assert_eq!(net.weight_stds, vec![vec![0.5, 0.25]; 2]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Network<T: Real = f64> {
    /// The block model.
    pub spec: StackSpec,
    /// Branch of block l at index l - 1.
    pub branches: Vec<Branch<T>>,
    /// Standard deviation of each weight's init distribution (for perturbations), per block.
    pub weight_stds: Vec<Vec<f64>>,
    /// The input x_0 (d x n).
    pub input: DMatrix<T>,
    /// Norm epsilon.
    pub eps: f64,
}

/// Per-block values of a forward pass.
///
/// # Examples
///
/// Block 1 of a Post-LN network: no input norm, skip and branch scales 1, and `x_1` is the
/// output of `N_out`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::network::BlockPass;
/// use normscope_core::monte_carlo::{McConfig, RawMc, sampler};
/// use normscope_numeric::rng;
///
/// let raw = RawModel { depth: 1, width: 4, tokens: 2, ..RawModel::default() };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let net = sampler::network::<f64>(&cfg.model.stack(normscope_core::placement::find("post")?)?, &cfg, &mut rng::network_rng(0, 0, 0));
/// let fw = net.forward(|_, _, _| {});
/// let b: &BlockPass = &fw.blocks[0];
/// assert!(b.n_in.is_none() && b.n_br.is_none());
/// assert_eq!((b.in_scale, b.alpha, b.lambda), (1.0, 1.0, 1.0));
/// assert_eq!(b.n_out.as_ref().unwrap().y, fw.xs[1]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BlockPass<T: Real = f64> {
    /// N_in's cache.
    pub n_in: Option<NormCache<T>>,
    /// Scale after N_in (`1/sqrt(l)` for LayerNorm Scaling, else 1).
    pub in_scale: f64,
    /// The branch's cache.
    pub branch: Cache<T>,
    /// The raw branch output `B_l`.
    pub out: DMatrix<T>,
    /// N_br's cache.
    pub n_br: Option<NormCache<T>>,
    /// The skip scale used (Admin's omega is profiled on this network).
    pub alpha: f64,
    /// The branch multiplier.
    pub lambda: f64,
    /// N_out's cache.
    pub n_out: Option<NormCache<T>>,
}

/// A whole forward pass: the streams `x_0..=x_L` and every block's values.
///
/// # Examples
///
/// The forward pass of a Post-LN network with norm epsilon 0: `x_0..=x_L`, one block pass per
/// block, and every token of `x_L` a LayerNorm output of squared norm `d = 8` (up to rounding).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::network::{Forward, Network};
/// use normscope_core::monte_carlo::{McConfig, RawMc, sampler};
/// use normscope_numeric::rng;
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
/// let net: Network = sampler::network(&spec, &cfg, &mut rng::network_rng(0, 0, 0));
/// let fw: Forward = net.forward(|_, _, _| {});
/// assert_eq!((fw.xs.len(), fw.blocks.len()), (3, 2));
/// assert!(fw.final_norm.is_none());
/// for t in fw.xs[2].column_iter() {
///     assert!((t.norm_squared() - 8.0).abs() < 1e-12);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Forward<T: Real = f64> {
    /// `x_l`, l = 0..=L.
    pub xs: Vec<DMatrix<T>>,
    /// Block l at index l - 1.
    pub blocks: Vec<BlockPass<T>>,
    /// The final Norm's cache, if the preset has one.
    pub final_norm: Option<NormCache<T>>,
}

/// The running decomposition `x_l = sum_j C_{l,j} B~_j` at the current layer.
///
/// # Examples
///
/// `x_0` alone is one source with coefficient 1 per token; its energy is the sum of the
/// tokens' squared norms, `(3^2 + 4^2) + 1^2 = 26`:
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::monte_carlo::network::Decomposition;
///
/// let x0 = DMatrix::from_column_slice(2, 2, &[3.0, 4.0, 1.0, 0.0]);
/// let dec = Decomposition::of_input(&x0);
/// assert_eq!(dec.coef, vec![vec![1.0, 1.0]]);
/// assert_eq!(dec.centered, vec![false]);
/// assert_eq!(dec.source_energy(0), 26.0);
/// assert_eq!(dec.rebuild(&[&x0]), x0);
/// ```
///
/// In a forward pass, layer l has `l + 1` sources (`x_0` and every branch so far):
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::network::Network;
/// use normscope_core::monte_carlo::{McConfig, RawMc, sampler};
/// use normscope_numeric::rng;
///
/// let raw = RawModel {
///     depth: 3,
///     branch: "linear".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let spec = cfg.model.stack(normscope_core::placement::find("post")?)?;
/// let net: Network = sampler::network(&spec, &cfg, &mut rng::network_rng(0, 0, 0));
/// let mut sources = Vec::new();
/// net.forward(|_, _, dec| sources.push(dec.coef.len()));
/// assert_eq!(sources, [1, 2, 3, 4]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Decomposition {
    /// `C_{l,j,t}`: coefficient of source j for token t.
    pub coef: Vec<Vec<f64>>,
    /// Whether source j is centered (`B~_j = P B_j`).
    pub centered: Vec<bool>,
    /// `|B_{j,t}|^2` per source and token.
    sq_raw: Vec<Vec<f64>>,
    /// `|P B_{j,t}|^2` per source and token.
    sq_centered: Vec<Vec<f64>>,
}

impl Decomposition {
    fn add_source<T: Real>(&mut self, b: &DMatrix<T>, coef: Vec<f64>, centered: bool) {
        let d = b.nrows() as f64;
        let raw: Vec<f64> = b.column_iter().map(|c| T::sum_sq(&c)).collect();
        let cen: Vec<f64> = b
            .column_iter()
            .zip(&raw)
            .map(|(c, r)| (r - T::sum(&c).powi(2) / d).max(0.0))
            .collect();
        self.coef.push(coef);
        self.centered.push(centered);
        self.sq_raw.push(raw);
        self.sq_centered.push(cen);
    }

    /// The decomposition at layer l from the one at l - 1 and block l's pass: old sources
    /// times alpha, the new one `lambda / sigma_br`, then everything times `1/sigma_out`; a
    /// LayerNorm centers what it touches. A norm without a per-token statistic
    /// ([`crate::spec::NormKind::per_token`]) leaves it as it is.
    pub fn advance<T: Real>(&mut self, spec: &StackSpec, pass: &BlockPass<T>) {
        if !spec.norm.per_token() {
            // No per-token decomposition exists; the metrics that read it are written as
            // missing for such norms, never measured.
            return;
        }
        let n = pass.out.ncols();
        let ln = spec.norm.centers();
        let (alpha, lambda) = (pass.alpha, pass.lambda);
        let br_coef: Vec<f64> = (0..n)
            .map(|t| lambda * pass.n_br.as_ref().map_or(1.0, |c| c.inv_sigma[t].as_f64()))
            .collect();
        for c in self.coef.iter_mut() {
            c.iter_mut().for_each(|v| *v *= alpha);
        }
        self.add_source(&pass.out, br_coef, ln && pass.n_br.is_some());
        if let Some(c) = &pass.n_out {
            for cj in self.coef.iter_mut() {
                cj.iter_mut()
                    .zip(&c.inv_sigma)
                    .for_each(|(v, s)| *v *= s.as_f64());
            }
            if ln {
                self.centered.iter_mut().for_each(|f| *f = true);
            }
        }
    }

    /// The decomposition of `x_0` alone: one source with coefficient 1 per token.
    pub fn of_input<T: Real>(x0: &DMatrix<T>) -> Self {
        let mut dec = Decomposition::default();
        dec.add_source(x0, vec![1.0; x0.ncols()], false);
        dec
    }

    /// `sum_t |C_{l,j,t} B~_{j,t}|^2`.
    pub fn source_energy(&self, j: usize) -> f64 {
        let sq = if self.centered[j] {
            &self.sq_centered[j]
        } else {
            &self.sq_raw[j]
        };
        self.coef[j].iter().zip(sq).map(|(c, s)| c * c * s).sum()
    }

    /// `x_l` rebuilt from its sources (tests).
    pub fn rebuild<T: Real>(&self, sources: &[&DMatrix<T>]) -> DMatrix<T> {
        let mut x = DMatrix::zeros(sources[0].nrows(), sources[0].ncols());
        for (j, b) in sources.iter().enumerate() {
            let mut v = (*b).clone();
            if self.centered[j] {
                norm::center(&mut v);
            }
            for (t, mut col) in v.column_iter_mut().enumerate() {
                col *= T::of(self.coef[j][t]);
            }
            x += v;
        }
        x
    }
}

/// The population variance of all entries of `m` (centred on their mean), accumulated in f64:
/// numpy's `np.var` on the flattened tensor, as Admin's profiling code takes it.
fn variance<T: Real>(m: &DMatrix<T>) -> f64 {
    let len = m.len() as f64;
    let mean = m.iter().map(|v| v.as_f64()).sum::<f64>() / len;
    m.iter().map(|v| (v.as_f64() - mean).powi(2)).sum::<f64>() / len
}

/// A Norm slot's forward on `z`: the cache of `N(z)` (its output `y` inside) when the slot
/// has a Norm (`present`), else `None` (the slot passes `z` on as it is).
fn norm_slot<T: Real>(
    present: bool,
    spec: &StackSpec,
    eps: f64,
    z: &DMatrix<T>,
) -> Option<NormCache<T>> {
    present.then(|| norm::forward_with(spec.norm, spec.layout, eps, z))
}

/// `J^T v` of the Norm cached in `c` (the identity without one, a copy of `v`).
fn jac<T: Real>(c: &Option<NormCache<T>>, v: &DMatrix<T>) -> DMatrix<T> {
    match c {
        Some(c) => norm::jacobian(c, v),
        None => v.clone(),
    }
}

/// `J^T v` of the Norm cached in `c`, as [`jac`], for a `v` the caller gives up: without a
/// Norm, `v` itself (no copy).
fn jac_owned<T: Real>(c: &Option<NormCache<T>>, v: DMatrix<T>) -> DMatrix<T> {
    match c {
        Some(c) => norm::jacobian(c, &v),
        None => v,
    }
}

/// `a x + b y` entry by entry, each product rounded and then their sum: the bits of
/// nalgebra's `x * a + y * b` (two scaled copies, then their sum), in one pass and one
/// matrix (no fused multiply-add: Rust does not contract `p * q + r`). A block's sum
/// `alpha x + lambda N_br(F)` in both engines (the training engine's fixed skips too).
/// Computed over the two column-major slices, so that the loop vectorizes.
pub(crate) fn scaled_sum<T: Real>(x: &DMatrix<T>, a: T, y: &DMatrix<T>, b: T) -> DMatrix<T> {
    assert_eq!(x.shape(), y.shape(), "a sum of equal shapes");
    let sum: Vec<T> = x
        .as_slice()
        .iter()
        .zip(y.as_slice())
        .map(|(&xv, &yv)| xv * a + yv * b)
        .collect();
    DMatrix::from_vec(x.nrows(), x.ncols(), sum)
}

impl<T: Real> Network<T> {
    /// Depth L.
    pub fn depth(&self) -> usize {
        self.spec.depth
    }

    /// The branch input of block l (1-based) for stream `x` ([`branch_input`]).
    pub fn branch_input(
        &self,
        l: usize,
        x: &DMatrix<T>,
    ) -> (Option<NormCache<T>>, f64, DMatrix<T>) {
        branch_input(&self.spec, self.eps, l, x)
    }

    /// Tangent of `x_l` split into skip and branch parts ([`block_jvp`] with block l's branch).
    pub fn block_jvp(
        &self,
        fw: &Forward<T>,
        l: usize,
        dx: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> (Option<DMatrix<T>>, DMatrix<T>) {
        block_jvp(&self.branches[l - 1], &fw.blocks[l - 1], dx, dw)
    }

    /// Backprop of an output gradient `g` (at the network output, after the final Norm if
    /// any): `grads[l]` is `dL/dx_l` for l = 0..=L, `weight_grads[l-1]` the gradients of block
    /// l's weights (in [`Module::params`] order).
    pub fn backward(&self, fw: &Forward<T>, g: &DMatrix<T>) -> Backward<T> {
        let depth = self.depth();
        let mut grads = vec![DMatrix::zeros(0, 0); depth + 1];
        let mut weight_grads = vec![Vec::new(); depth];
        grads[depth] = jac(&fw.final_norm, g);
        for l in (1..=depth).rev() {
            let (gx, gw) = backward_step(&self.branches[l - 1], &fw.blocks[l - 1], &grads[l]);
            grads[l - 1] = gx;
            weight_grads[l - 1] = gw;
        }
        Backward {
            grads,
            weight_grads,
        }
    }
}

/// The branch input of block l (1-based) for stream `x`: `N_in(x)` times LNS's scale
/// `1/sqrt(l)` (docs/theory.md, "The block model"), with N_in's cache and the scale.
pub fn branch_input<T: Real>(
    spec: &StackSpec,
    eps: f64,
    l: usize,
    x: &DMatrix<T>,
) -> (Option<NormCache<T>>, f64, DMatrix<T>) {
    let b = spec.block(l);
    let c = norm_slot(b.n_in.is_norm(), spec, eps, x);
    let mut u = c.as_ref().map_or_else(|| x.clone(), |c| c.y.clone());
    let s = match b.in_scale {
        InputScale::One => 1.0,
        InputScale::InvSqrtLayer => {
            let s = 1.0 / (l as f64).sqrt();
            u *= T::of(s);
            s
        }
    };
    (c, s, u)
}

/// Block l's forward step `x_l = N_out(alpha x_{l-1} + lambda N_br(F_l(N_in(x_{l-1}))))`
/// (docs/theory.md, "The block model") with every value its Jacobians need. `admin_omega` is the skip scale
/// of an Admin block ([`next_admin_omega`] of the block before); other blocks ignore it. The
/// one definition of a block's forward: the whole-network pass and the passes that recompute
/// a block from its stored input both call it, so they agree bit for bit.
pub fn step<T: Real>(
    spec: &StackSpec,
    eps: f64,
    l: usize,
    branch: &Branch<T>,
    x: &DMatrix<T>,
    admin_omega: f64,
) -> (BlockPass<T>, DMatrix<T>) {
    step_with(spec, eps, l, |u| branch.forward(u), x, admin_omega)
}

/// [`step`] with the branch given as its forward map `u -> (F(u), cache)`: for a branch whose
/// weights are drawn while it runs (`monte_carlo::measure`'s streamed MLP blocks).
pub(crate) fn step_with<T: Real>(
    spec: &StackSpec,
    eps: f64,
    l: usize,
    branch_forward: impl FnOnce(&DMatrix<T>) -> (DMatrix<T>, Cache<T>),
    x: &DMatrix<T>,
    admin_omega: f64,
) -> (BlockPass<T>, DMatrix<T>) {
    let block = spec.block(l);
    let (n_in, in_scale, u) = branch_input(spec, eps, l, x);
    let (out, cache) = branch_forward(&u);
    let n_br = norm_slot(block.n_br.is_norm(), spec, eps, &out);
    let br = n_br.as_ref().map_or(&out, |c| &c.y);
    let alpha = match block.skip {
        SkipScale::One => 1.0,
        SkipScale::Alpha(a) => a,
        SkipScale::AdminOmega => admin_omega,
    };
    let lambda = block.lambda.value();
    let z = scaled_sum(x, T::of(alpha), br, T::of(lambda));
    let n_out = norm_slot(block.n_out.is_norm(), spec, eps, &z);
    let y = n_out.as_ref().map_or(z, |c| c.y.clone());
    let pass = BlockPass {
        n_in,
        in_scale,
        branch: cache,
        out,
        n_br,
        alpha,
        lambda,
        n_out,
    };
    (pass, y)
}

/// Admin's profiling (Transformer-Clinic's `adaptive-profiling`): omega_1 = 1, then
/// `omega_{l+1}^2 = var(omega_l x_{l-1}) + var(lambda N_br(F_l))`, centred over all entries,
/// for block l's pass from `x` = x_{l-1}.
pub fn next_admin_omega<T: Real>(x: &DMatrix<T>, pass: &BlockPass<T>) -> f64 {
    let br = pass.n_br.as_ref().map_or(&pass.out, |c| &c.y);
    next_admin_omega_of(x, br, pass.alpha, pass.lambda)
}

/// [`next_admin_omega`] from its parts: `sqrt(alpha^2 var(x) + lambda^2 var(br))` for block
/// input `x`, branch output after `N_br` `br`, the block's omega `alpha` and `lambda` (the
/// training engine's encoder-decoder profiling, `crate::train::seq2seq::init`).
pub fn next_admin_omega_of<T: Real>(
    x: &DMatrix<T>,
    br: &DMatrix<T>,
    alpha: f64,
    lambda: f64,
) -> f64 {
    (alpha * alpha * variance(x) + lambda * lambda * variance(br)).sqrt()
}

/// The final Norm's cache on `x_L`, if the preset has one.
pub fn final_norm<T: Real>(spec: &StackSpec, eps: f64, x: &DMatrix<T>) -> Option<NormCache<T>> {
    spec.final_norm
        .is_norm()
        .then(|| norm::forward_with(spec.norm, spec.layout, eps, x))
}

/// `J^T g` of the final Norm (the identity without one).
pub(crate) fn final_jacobian<T: Real>(c: &Option<NormCache<T>>, g: &DMatrix<T>) -> DMatrix<T> {
    jac(c, g)
}

/// Tangent of `x_l` split into skip and branch parts for an input tangent `dx` of `x_{l-1}`
/// (and optional weight tangents of block l's branch): `(J_out alpha dx,
/// J_out lambda J_br (J_F J_in dx + dF/dW dW))`.
pub fn block_jvp<T: Real>(
    branch: &Branch<T>,
    b: &BlockPass<T>,
    dx: Option<&DMatrix<T>>,
    dw: Option<&[DMatrix<T>]>,
) -> (Option<DMatrix<T>>, DMatrix<T>) {
    let (alpha, lambda) = (T::of(b.alpha), T::of(b.lambda));
    let skip = dx.map(|dx| jac(&b.n_out, &(dx * alpha)));
    let du = dx.map(|dx| jac(&b.n_in, dx) * T::of(b.in_scale));
    let df = branch.jvp(&b.branch, du.as_ref(), dw);
    let br = jac(&b.n_br, &df) * lambda;
    (skip, jac(&b.n_out, &br))
}

/// One block of backprop: from `g` = dL/dx_l to `(dL/dx_{l-1}, [dL/dW of block l])`.
pub fn backward_step<T: Real>(
    branch: &Branch<T>,
    b: &BlockPass<T>,
    g: &DMatrix<T>,
) -> (DMatrix<T>, Vec<DMatrix<T>>) {
    let (gz, g_out) = into_branch(b, g);
    let (gu, gw) = branch.backward(&b.branch, &g_out);
    (out_of_branch(b, &gz, gu), gw)
}

/// [`backward_step`] computing only the squared norm of the last weight matrix's gradient
/// (the one `weight_grad_sq` reports; [`Module::backward_last_sq`]): the same products in the
/// same order, less the others' weight gradients, and the last one never held whole.
pub fn backward_step_last_sq<T: Real>(
    branch: &Branch<T>,
    b: &BlockPass<T>,
    g: &DMatrix<T>,
) -> (DMatrix<T>, f64) {
    backward_step_with(b, g, |g_out| branch.backward_last_sq(&b.branch, g_out))
}

/// [`backward_step_last_sq`] with the branch's backward given as a map `dL/dF -> (dL/du,
/// ||dL/dW_last||^2)` (for a branch whose weights are drawn while it runs).
pub(crate) fn backward_step_with<T: Real>(
    b: &BlockPass<T>,
    g: &DMatrix<T>,
    branch_backward: impl FnOnce(&DMatrix<T>) -> (DMatrix<T>, f64),
) -> (DMatrix<T>, f64) {
    let (gz, g_out) = into_branch(b, g);
    let (gu, gw_sq) = branch_backward(&g_out);
    (out_of_branch(b, &gz, gu), gw_sq)
}

/// `(J_out^T g, J_br^T lambda J_out^T g)`: the gradient at the sum and at the branch output.
fn into_branch<T: Real>(b: &BlockPass<T>, g: &DMatrix<T>) -> (DMatrix<T>, DMatrix<T>) {
    let gz = jac(&b.n_out, g);
    let g_out = jac_owned(&b.n_br, &gz * T::of(b.lambda));
    (gz, g_out)
}

/// `alpha gz + J_in^T (s gu)`: dL/dx_{l-1}.
fn out_of_branch<T: Real>(b: &BlockPass<T>, gz: &DMatrix<T>, gu: DMatrix<T>) -> DMatrix<T> {
    gz * T::of(b.alpha) + jac_owned(&b.n_in, gu * T::of(b.in_scale))
}

/// The result of [`Network::backward`].
///
/// # Examples
///
/// Backprop of an output gradient through L = 2 ReLU-MLP blocks (d = 8, hidden 32): `dL/dx_l`
/// for l = 0..=2 and each block's two weight gradients, shaped like `W1` (32 x 8) and `W2`
/// (8 x 32).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use nalgebra::DMatrix;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::network::{Backward, Network};
/// use normscope_core::monte_carlo::{McConfig, RawMc, sampler};
/// use normscope_numeric::rng;
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "relu-mlp".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc::default())?;
/// let spec = cfg.model.stack(normscope_core::placement::find("pre")?)?;
/// let net: Network = sampler::network(&spec, &cfg, &mut rng::network_rng(0, 0, 0));
/// let fw = net.forward(|_, _, _| {});
/// let back: Backward = net.backward(&fw, &DMatrix::from_element(8, 4, 1.0));
/// assert_eq!(back.grads.len(), 3);
/// assert_eq!(back.grads[0].shape(), (8, 4));
/// let shapes: Vec<_> = back.weight_grads[0].iter().map(|g| g.shape()).collect();
/// assert_eq!(shapes, [(32, 8), (8, 32)]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Backward<T: Real = f64> {
    /// `dL/dx_l`, l = 0..=L.
    pub grads: Vec<DMatrix<T>>,
    /// Weight gradients of block l at index l - 1.
    pub weight_grads: Vec<Vec<DMatrix<T>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every kind a stream may hold in `T`: both signs, zeros of both signs,
    /// subnormal ones (`tiny`) and ones a factor of 2.5 overflows (`huge`).
    fn values<T: Real>(rows: usize, cols: usize, seed: f64, tiny: f64, huge: f64) -> DMatrix<T> {
        DMatrix::from_fn(rows, cols, |i, j| {
            let k = (i * cols + j) as f64;
            let v = match (i + j) % 5 {
                0 => (k * seed).sin() * tiny,
                1 => -0.0,
                2 => (k * seed).cos() * huge,
                _ => (k * seed).sin(),
            };
            T::of(v)
        })
    }

    fn scaled_sum_is_nalgebras<T: Real>(tiny: f64, huge: f64, bits: impl Fn(T) -> u64) {
        let x = values::<T>(33, 7, 0.37, tiny, huge);
        let y = values::<T>(33, 7, 0.91, tiny, huge);
        for (a, b) in [(1.0, 1.0), (0.6, 1.3), (-2.5, 1e-3), (0.0, -1.0)] {
            let (a, b) = (T::of(a), T::of(b));
            let fused = scaled_sum(&x, a, &y, b);
            let nalgebra = &x * a + &y * b;
            for (i, (p, q)) in fused.iter().zip(nalgebra.iter()).enumerate() {
                assert_eq!(
                    bits(*p),
                    bits(*q),
                    "a = {a}, b = {b}, entry {i}: {p} against {q}"
                );
            }
        }
    }

    #[test]
    fn scaled_sum_gives_the_bits_of_nalgebras_expression() {
        // Subnormals (below f64::MIN_POSITIVE = 2.2e-308, f32::MIN_POSITIVE = 1.2e-38) and
        // values within a factor of 2.5 of the largest (1.8e308, 3.4e38).
        scaled_sum_is_nalgebras::<f64>(1e-310, 1e308, f64::to_bits);
        scaled_sum_is_nalgebras::<f32>(1e-40, 3e38, |v| u64::from(v.to_bits()));
    }
}
