//! A sampled network: its forward pass with the exact per-token decomposition, block
//! Jacobian-vector products, and the backward pass.
//!
//! Decomposition (THEORY.md section 5): a norm is the centering P (LayerNorm only) followed by
//! a per-token scalar `1/sigma`, so `x_l = sum_j C_{l,j} B~_j` holds exactly per token, with
//! `B~_j = P B_j` once an LN has acted on source j and `B~_j = B_j` before. Coefficients are
//! updated in place (`O(l n)` per block) and squared norms of every source are kept raw and
//! centered, so `branch_weight` costs `O(l n)` per layer and memory stays `O(L d n)`.

use super::gemm::Real;
use super::norm::{self, NormCache};
use crate::branch::{Branch, Cache, Module};
use crate::spec::{InputScale, SkipScale, StackSpec};
use nalgebra::DMatrix;

/// A network with its weights and input.
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
        let raw: Vec<f64> = b.column_iter().map(|c| c.norm_squared().as_f64()).collect();
        let cen: Vec<f64> = b
            .column_iter()
            .zip(&raw)
            .map(|(c, r)| (r - c.sum().as_f64().powi(2) / d).max(0.0))
            .collect();
        self.coef.push(coef);
        self.centered.push(centered);
        self.sq_raw.push(raw);
        self.sq_centered.push(cen);
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

fn apply_norm<T: Real>(
    slot_norm: bool,
    kind: crate::spec::NormKind,
    eps: f64,
    z: &DMatrix<T>,
) -> (Option<NormCache<T>>, DMatrix<T>) {
    if slot_norm {
        let c = norm::forward(kind, eps, z);
        let y = c.y.clone();
        (Some(c), y)
    } else {
        (None, z.clone())
    }
}

fn jac<T: Real>(c: &Option<NormCache<T>>, v: &DMatrix<T>) -> DMatrix<T> {
    match c {
        Some(c) => norm::jacobian(c, v),
        None => v.clone(),
    }
}

impl<T: Real> Network<T> {
    /// Depth L.
    pub fn depth(&self) -> usize {
        self.spec.depth
    }

    /// The branch input of block l (1-based) for stream `x`: `N_in(x)` times LNS's scale.
    pub fn branch_input(
        &self,
        l: usize,
        x: &DMatrix<T>,
    ) -> (Option<NormCache<T>>, f64, DMatrix<T>) {
        let b = self.spec.block(l);
        let (c, mut u) = apply_norm(b.n_in.is_norm(), self.spec.norm, self.eps, x);
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

    /// The forward pass. `on_layer(l, &x_l, &decomposition)` is called for l = 0..=L with the
    /// decomposition at that layer.
    pub fn forward(
        &self,
        mut on_layer: impl FnMut(usize, &DMatrix<T>, &Decomposition),
    ) -> Forward<T> {
        let n = self.input.ncols();
        let mut dec = Decomposition::default();
        dec.add_source(&self.input, vec![1.0; n], false);
        let mut xs = vec![self.input.clone()];
        on_layer(0, &xs[0], &dec);
        let mut blocks = Vec::with_capacity(self.depth());
        // Admin's profiling (Transformer-Clinic's `adaptive-profiling`): omega_1 = 1, then
        // omega_{l+1}^2 = var(omega_l x_{l-1}) + var(lambda N_br(F_l)), centred over all entries.
        let mut admin_omega: f64 = 1.0;
        for l in 1..=self.depth() {
            let spec = self.spec.block(l);
            let x = &xs[l - 1];
            let (n_in, in_scale, u) = self.branch_input(l, x);
            let (out, cache) = self.branches[l - 1].forward(&u);
            let (n_br, br) = apply_norm(spec.n_br.is_norm(), self.spec.norm, self.eps, &out);
            let alpha = match spec.skip {
                SkipScale::One => 1.0,
                SkipScale::Alpha(a) => a,
                SkipScale::AdminOmega => admin_omega,
            };
            let lambda = spec.lambda.value();
            let z = x * T::of(alpha) + &br * T::of(lambda);
            let (n_out, y) = apply_norm(spec.n_out.is_norm(), self.spec.norm, self.eps, &z);
            // Decomposition: old sources times alpha, the new one lambda (/sigma_br), then
            // everything times 1/sigma_out; LN centers what it touches.
            let ln = self.spec.norm == crate::spec::NormKind::Layer;
            let br_coef: Vec<f64> = (0..n)
                .map(|t| lambda * n_br.as_ref().map_or(1.0, |c| c.inv_sigma[t].as_f64()))
                .collect();
            for c in dec.coef.iter_mut() {
                c.iter_mut().for_each(|v| *v *= alpha);
            }
            dec.add_source(&out, br_coef, ln && n_br.is_some());
            if let Some(c) = &n_out {
                for cj in dec.coef.iter_mut() {
                    cj.iter_mut()
                        .zip(&c.inv_sigma)
                        .for_each(|(v, s)| *v *= s.as_f64());
                }
                if ln {
                    dec.centered.iter_mut().for_each(|f| *f = true);
                }
            }
            if spec.skip == SkipScale::AdminOmega {
                admin_omega =
                    (alpha * alpha * variance(x) + lambda * lambda * variance(&br)).sqrt();
            }
            on_layer(l, &y, &dec);
            xs.push(y);
            blocks.push(BlockPass {
                n_in,
                in_scale,
                branch: cache,
                out,
                n_br,
                alpha,
                lambda,
                n_out,
            });
        }
        let final_norm = self
            .spec
            .final_norm
            .is_norm()
            .then(|| norm::forward(self.spec.norm, self.eps, &xs[self.depth()]));
        Forward {
            xs,
            blocks,
            final_norm,
        }
    }

    /// Tangent of `x_l` split into skip and branch parts for an input tangent `dx` of `x_{l-1}`
    /// (and optional weight tangents of block l's branch): `(J_out alpha dx,
    /// J_out lambda J_br (J_F J_in dx + dF/dW dW))`.
    pub fn block_jvp(
        &self,
        fw: &Forward<T>,
        l: usize,
        dx: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> (Option<DMatrix<T>>, DMatrix<T>) {
        let b = &fw.blocks[l - 1];
        let (alpha, lambda) = (T::of(b.alpha), T::of(b.lambda));
        let skip = dx.map(|dx| jac(&b.n_out, &(dx * alpha)));
        let du = dx.map(|dx| jac(&b.n_in, dx) * T::of(b.in_scale));
        let df = self.branches[l - 1].jvp(&b.branch, du.as_ref(), dw);
        let br = jac(&b.n_br, &df) * lambda;
        (skip, jac(&b.n_out, &br))
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
            let b = &fw.blocks[l - 1];
            let (alpha, lambda) = (T::of(b.alpha), T::of(b.lambda));
            let gz = jac(&b.n_out, &grads[l]);
            let g_out = jac(&b.n_br, &(&gz * lambda));
            let (gu, gw) = self.branches[l - 1].backward(&b.branch, &g_out);
            let gx = &gz * alpha + jac(&b.n_in, &(gu * T::of(b.in_scale)));
            grads[l - 1] = gx;
            weight_grads[l - 1] = gw;
        }
        Backward {
            grads,
            weight_grads,
        }
    }
}

/// The result of [`Network::backward`].
#[derive(Clone, Debug)]
pub struct Backward<T: Real = f64> {
    /// `dL/dx_l`, l = 0..=L.
    pub grads: Vec<DMatrix<T>>,
    /// Weight gradients of block l at index l - 1.
    pub weight_grads: Vec<Vec<DMatrix<T>>>,
}
