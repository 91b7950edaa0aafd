//! Self-attention (THEORY.md section 3): per head h, `A_h = softmax_k(Q_h^T K_h / sqrt(d_h))`
//! (row i = query i), `O_h = V_h A_h^T`, `F(u) = W_O [O_1; ...; O_H]`, with `Q = W_Q u`,
//! `K = W_K u`, `V = W_V u` (Vaswani et al. 2017). `uniform` means `W_Q = W_K = 0`, so
//! `A = 1/n`: every token gets `W_O W_V` of the token mean.
//!
//! Mean field (uniform attention only; softmax attention has no closed form here): with
//! fan-in gains `sV`, `sO`, the pair kernel is `sV sO (m_same/n + (1 - 1/n) m_cross)` for
//! both the same and different tokens; the Jacobian passes only the token-mean part of a
//! tangent (gain `sV sO`) and removes the fluctuation, so the backward gain for independent
//! tokens is `sV sO / n`.

use super::module::{Module, Param};
use super::{BranchModel, Init, KindInfo, MeanFieldBranch};
use crate::monte_carlo::gemm::{Real, nn, nt, tn};
use nalgebra::DMatrix;

/// Registry entry of softmax attention.
pub const SOFTMAX_INFO: KindInfo = KindInfo {
    name: "attention",
    aliases: &[],
    about: "multi-head softmax self-attention (Monte Carlo only)",
    closed_form: false,
};

/// Registry entry of uniform attention.
pub const UNIFORM_INFO: KindInfo = KindInfo {
    name: "uniform-attention",
    aliases: &[],
    about: "self-attention with W_Q = W_K = 0: W_O W_V of the token mean",
    closed_form: true,
};

/// Uniform attention's mean-field summary.
pub struct UniformKernel;

impl MeanFieldBranch for UniformKernel {
    fn matrix_gains(&self, init: Init, d: f64, _r: f64) -> (f64, f64) {
        (init.fan_in_gain(d, d), init.fan_in_gain(d, d))
    }

    fn beta_scales_first(&self) -> bool {
        true
    }

    fn scale_free(&self) -> bool {
        true
    }

    fn constant_gain(&self) -> bool {
        false
    }

    fn mixes_tokens(&self) -> bool {
        true
    }

    fn unit_gain(&self, m: &BranchModel) -> f64 {
        m.first * m.last
    }

    fn pair(&self, m: &BranchModel, _qa: f64, _qb: f64, m_same: f64, m_cross: f64) -> (f64, f64) {
        let n = m.tokens;
        let v = m.first * m.last * (m_same / n + (1.0 - 1.0 / n) * m_cross);
        (v, v)
    }

    fn backward_gain(&self, m: &BranchModel, _q: f64) -> f64 {
        m.first * m.last / m.tokens
    }

    fn jacobian_split(&self, m: &BranchModel, _q: f64) -> (f64, f64) {
        (m.first * m.last, 0.0)
    }

    fn last_input_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64 {
        let n = m.tokens;
        m.first * q * (c + (1.0 - c) / n)
    }

    fn perturbation_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64 {
        2.0 * m.forward(q, c).0
    }
}

/// A sampled multi-head self-attention branch.
#[derive(Clone, Debug)]
pub struct Attention<T: Real> {
    /// Query projection (empty when uniform).
    pub wq: DMatrix<T>,
    /// Key projection (empty when uniform).
    pub wk: DMatrix<T>,
    /// Value projection.
    pub wv: DMatrix<T>,
    /// Output projection.
    pub wo: DMatrix<T>,
    /// Heads (divides d).
    pub heads: usize,
    /// `W_Q = W_K = 0`: token averaging.
    pub uniform: bool,
}

/// What the forward pass keeps.
#[derive(Clone, Debug)]
pub struct AttentionCache<T: Real> {
    /// The input u.
    pub u: DMatrix<T>,
    /// Q (empty when uniform).
    pub q: DMatrix<T>,
    /// K (empty when uniform).
    pub k: DMatrix<T>,
    /// V.
    pub v: DMatrix<T>,
    /// `[O_1; ...; O_H]`, the input of `W_O`.
    pub o: DMatrix<T>,
    /// Attention weights per head (n x n, row = query).
    pub attn: Vec<DMatrix<T>>,
}

fn row_softmax<T: Real>(s: &mut DMatrix<T>) {
    for i in 0..s.nrows() {
        let mut row = s.row_mut(i);
        let m = row.max();
        row.apply(|x| *x = (*x - m).exp());
        let z = row.sum();
        row /= z;
    }
}

/// `A ⊙ (G - rowsum(A ⊙ G) 1^T)`: the softmax Jacobian applied row by row (symmetric).
fn softmax_jacobian<T: Real>(a: &DMatrix<T>, g: &DMatrix<T>) -> DMatrix<T> {
    let mut out = a.component_mul(g);
    for i in 0..out.nrows() {
        let s = out.row(i).sum();
        for k in 0..out.ncols() {
            out[(i, k)] -= a[(i, k)] * s;
        }
    }
    out
}

impl<T: Real> Attention<T> {
    /// `(heads, rows per head)` at width d.
    fn head_rows(&self, d: usize) -> (usize, usize) {
        (self.heads, d / self.heads)
    }

    fn scale(dh: usize) -> T {
        T::of(1.0 / (dh as f64).sqrt())
    }
}

impl<T: Real> Module<T> for Attention<T> {
    type Cache = AttentionCache<T>;

    fn params(&self) -> Vec<Param<'_, T>> {
        if self.uniform {
            vec![("wv", &self.wv), ("wo", &self.wo)]
        } else {
            vec![
                ("wq", &self.wq),
                ("wk", &self.wk),
                ("wv", &self.wv),
                ("wo", &self.wo),
            ]
        }
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        if self.uniform {
            vec![&mut self.wv, &mut self.wo]
        } else {
            vec![&mut self.wq, &mut self.wk, &mut self.wv, &mut self.wo]
        }
    }

    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, AttentionCache<T>) {
        let (d, n) = (u.nrows(), u.ncols());
        let (heads, dh) = self.head_rows(d);
        let v = nn(&self.wv, u);
        let (q, k) = if self.uniform {
            (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0))
        } else {
            (nn(&self.wq, u), nn(&self.wk, u))
        };
        let mut attn = Vec::with_capacity(heads);
        let mut o = DMatrix::zeros(d, n);
        let scale = Self::scale(dh);
        for h in 0..heads {
            let r = h * dh;
            let a = if self.uniform {
                DMatrix::from_element(n, n, T::of(1.0 / n as f64))
            } else {
                let mut s = q.rows(r, dh).transpose() * k.rows(r, dh) * scale;
                row_softmax(&mut s);
                s
            };
            o.rows_mut(r, dh)
                .copy_from(&(v.rows(r, dh) * a.transpose()));
            attn.push(a);
        }
        let out = nn(&self.wo, &o);
        let c = AttentionCache {
            u: u.clone(),
            q,
            k,
            v,
            o,
            attn,
        };
        (out, c)
    }

    fn jvp(
        &self,
        c: &AttentionCache<T>,
        du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T> {
        let (d, n) = (c.u.nrows(), c.u.ncols());
        let zero = || DMatrix::zeros(d, n);
        let (heads, dh) = self.head_rows(d);
        let (dwq, dwk, dwv, dwo) = match dw {
            None => (None, None, None, None),
            Some(w) if self.uniform => (None, None, Some(&w[0]), Some(&w[1])),
            Some(w) => (Some(&w[0]), Some(&w[1]), Some(&w[2]), Some(&w[3])),
        };
        let lin = |m: &DMatrix<T>, dm: Option<&DMatrix<T>>| {
            let mut t = du.map(|x| nn(m, x)).unwrap_or_else(zero);
            if let Some(dm) = dm {
                t += nn(dm, &c.u);
            }
            t
        };
        let dv = lin(&self.wv, dwv);
        let (dq, dk) = if self.uniform {
            (zero(), zero())
        } else {
            (lin(&self.wq, dwq), lin(&self.wk, dwk))
        };
        let scale = Self::scale(dh);
        let mut d_o = DMatrix::zeros(d, n);
        for h in 0..heads {
            let r = h * dh;
            let a = &c.attn[h];
            let mut t = dv.rows(r, dh) * a.transpose();
            if !self.uniform {
                let ds = (dq.rows(r, dh).transpose() * c.k.rows(r, dh)
                    + c.q.rows(r, dh).transpose() * dk.rows(r, dh))
                    * scale;
                let da = softmax_jacobian(a, &ds);
                t += c.v.rows(r, dh) * da.transpose();
            }
            d_o.rows_mut(r, dh).copy_from(&t);
        }
        let mut out = nn(&self.wo, &d_o);
        if let Some(dwo) = dwo {
            out += nn(dwo, &c.o);
        }
        out
    }

    fn backward(&self, c: &AttentionCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let (d, n) = (c.u.nrows(), c.u.ncols());
        let (heads, dh) = self.head_rows(d);
        let gwo = nt(g, &c.o);
        let go = tn(&self.wo, g);
        let mut gv = DMatrix::zeros(d, n);
        let qk_rows = if self.uniform { 0 } else { d };
        let mut gq = DMatrix::zeros(qk_rows, n);
        let mut gk = DMatrix::zeros(qk_rows, n);
        let scale = Self::scale(dh);
        for h in 0..heads {
            let r = h * dh;
            let a = &c.attn[h];
            let go_h = go.rows(r, dh);
            gv.rows_mut(r, dh).copy_from(&(go_h * a));
            if !self.uniform {
                let ga = go_h.transpose() * c.v.rows(r, dh);
                let gs = softmax_jacobian(a, &ga) * scale;
                gq.rows_mut(r, dh)
                    .copy_from(&(c.k.rows(r, dh) * gs.transpose()));
                gk.rows_mut(r, dh).copy_from(&(c.q.rows(r, dh) * gs));
            }
        }
        let mut gu = tn(&self.wv, &gv);
        let gwv = nt(&gv, &c.u);
        if self.uniform {
            (gu, vec![gwv, gwo])
        } else {
            gu += tn(&self.wq, &gq) + tn(&self.wk, &gk);
            let gwq = nt(&gq, &c.u);
            let gwk = nt(&gk, &c.u);
            (gu, vec![gwq, gwk, gwv, gwo])
        }
    }
}
