//! Sampled branches with their forward pass, Jacobian-vector products (w.r.t. the input and
//! w.r.t. the weights) and vector-Jacobian product (backprop to the input and to every
//! weight). Activations are d x n matrices, one column per token.
//!
//! - `linear`: `F(u) = W u`.
//! - MLP: `F(u) = W2 phi(W1 u)`.
//! - attention: per head h, `A_h = softmax_k(Q_h^T K_h / sqrt(d_h))` (row i = query i),
//!   `O_h = V_h A_h^T`, `F(u) = W_O [O_1; ...; O_H]`, with `Q = W_Q u`, `K = W_K u`,
//!   `V = W_V u`; `uniform` means `W_Q = W_K = 0`, so `A = 1/n`.
//! - cross-attention: every token gets `W_O W_V mean_k(m_k)` of a fixed memory m (uniform
//!   attention to the memory), so the output does not depend on the stream.
//!
//! [`Branch::backward`] returns the gradients of every weight in [`Branch::weights`] order, so
//! a training engine can apply updates without knowing the branch type.

use super::activation::{act, act_prime};
use super::gemm::{nn, nt, tn};
use crate::branch::Activation;
use nalgebra::{DMatrix, DVector};

/// What the branch computes, with its weights.
#[derive(Clone, Debug)]
pub enum Branch {
    /// `W u`.
    Linear {
        /// d x d.
        w: DMatrix<f64>,
    },
    /// `W2 phi(W1 u)`.
    Mlp {
        /// (r d) x d.
        w1: DMatrix<f64>,
        /// d x (r d).
        w2: DMatrix<f64>,
        /// phi.
        act: Activation,
    },
    /// Multi-head self-attention.
    Attention {
        /// Query projection (unused when uniform).
        wq: DMatrix<f64>,
        /// Key projection (unused when uniform).
        wk: DMatrix<f64>,
        /// Value projection.
        wv: DMatrix<f64>,
        /// Output projection.
        wo: DMatrix<f64>,
        /// Heads (divides d).
        heads: usize,
        /// `W_Q = W_K = 0`: token averaging.
        uniform: bool,
    },
    /// Uniform attention to a fixed memory.
    Cross {
        /// Value projection.
        wv: DMatrix<f64>,
        /// Output projection.
        wo: DMatrix<f64>,
        /// Mean of the memory tokens.
        memory_mean: DVector<f64>,
    },
}

/// Intermediate values of one forward pass.
#[derive(Clone, Debug)]
pub struct Cache {
    /// The input u.
    pub u: DMatrix<f64>,
    /// MLP pre-activation `W1 u`; attention's Q.
    h: Option<DMatrix<f64>>,
    /// Input of the last matrix: `phi(W1 u)`, attention's O, cross's `W_V m` per token.
    pub last_input: DMatrix<f64>,
    /// Attention's K and V.
    kv: Option<(DMatrix<f64>, DMatrix<f64>)>,
    /// Attention weights per head (n x n, row = query).
    attn: Vec<DMatrix<f64>>,
}

fn broadcast(v: &DVector<f64>, n: usize) -> DMatrix<f64> {
    DMatrix::from_fn(v.len(), n, |i, _| v[i])
}

fn row_softmax(s: &mut DMatrix<f64>) {
    for i in 0..s.nrows() {
        let mut row = s.row_mut(i);
        let m = row.max();
        row.apply(|x| *x = (*x - m).exp());
        let z = row.sum();
        row /= z;
    }
}

/// `A ⊙ (G - rowsum(A ⊙ G) 1^T)`: the softmax Jacobian applied row by row (symmetric).
fn softmax_jacobian(a: &DMatrix<f64>, g: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = a.component_mul(g);
    for i in 0..out.nrows() {
        let s = out.row(i).sum();
        for k in 0..out.ncols() {
            out[(i, k)] -= a[(i, k)] * s;
        }
    }
    out
}

impl Branch {
    /// The weight matrices, in the order [`Branch::backward`] returns their gradients.
    pub fn weights(&self) -> Vec<&DMatrix<f64>> {
        match self {
            Branch::Linear { w } => vec![w],
            Branch::Mlp { w1, w2, .. } => vec![w1, w2],
            Branch::Attention {
                wq,
                wk,
                wv,
                wo,
                uniform,
                ..
            } => {
                if *uniform {
                    vec![wv, wo]
                } else {
                    vec![wq, wk, wv, wo]
                }
            }
            Branch::Cross { wv, wo, .. } => vec![wv, wo],
        }
    }

    /// Index of the last matrix in [`Branch::weights`] (whose gradient `weight_grad_sq` reports).
    pub fn last_index(&self) -> usize {
        self.weights().len() - 1
    }

    fn head_rows(&self, d: usize) -> (usize, usize) {
        match self {
            Branch::Attention { heads, .. } => (*heads, d / heads),
            _ => (1, d),
        }
    }

    /// Forward pass.
    pub fn forward(&self, u: &DMatrix<f64>) -> (DMatrix<f64>, Cache) {
        let n = u.ncols();
        match self {
            Branch::Linear { w } => {
                let out = nn(w, u);
                let c = Cache {
                    u: u.clone(),
                    h: None,
                    last_input: u.clone(),
                    kv: None,
                    attn: vec![],
                };
                (out, c)
            }
            Branch::Mlp { w1, w2, act: a } => {
                let h = nn(w1, u);
                let z = h.map(|x| act(*a, x));
                let out = nn(w2, &z);
                (
                    out,
                    Cache {
                        u: u.clone(),
                        h: Some(h),
                        last_input: z,
                        kv: None,
                        attn: vec![],
                    },
                )
            }
            Branch::Attention {
                wq,
                wk,
                wv,
                wo,
                uniform,
                ..
            } => {
                let d = u.nrows();
                let (heads, dh) = self.head_rows(d);
                let v = nn(wv, u);
                let (q, k) = if *uniform {
                    (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0))
                } else {
                    (nn(wq, u), nn(wk, u))
                };
                let mut attn = Vec::with_capacity(heads);
                let mut o = DMatrix::zeros(d, n);
                let scale = 1.0 / (dh as f64).sqrt();
                for h in 0..heads {
                    let r = h * dh;
                    let a = if *uniform {
                        DMatrix::from_element(n, n, 1.0 / n as f64)
                    } else {
                        let mut s = q.rows(r, dh).transpose() * k.rows(r, dh) * scale;
                        row_softmax(&mut s);
                        s
                    };
                    o.rows_mut(r, dh)
                        .copy_from(&(v.rows(r, dh) * a.transpose()));
                    attn.push(a);
                }
                let out = nn(wo, &o);
                let c = Cache {
                    u: u.clone(),
                    h: if *uniform { None } else { Some(q) },
                    last_input: o,
                    kv: Some((k, v)),
                    attn,
                };
                (out, c)
            }
            Branch::Cross {
                wv,
                wo,
                memory_mean,
            } => {
                let vm = wv * memory_mean;
                let out = broadcast(&(wo * &vm), n);
                (
                    out,
                    Cache {
                        u: u.clone(),
                        h: None,
                        last_input: broadcast(&vm, n),
                        kv: None,
                        attn: vec![],
                    },
                )
            }
        }
    }

    /// `J_F(u) du + sum_W dF/dW dW`: the tangent of the output for an input tangent `du`
    /// (`None`: zero) and weight tangents `dw` (`None`: zero; else in [`Branch::weights`] order).
    pub fn jvp(
        &self,
        c: &Cache,
        du: Option<&DMatrix<f64>>,
        dw: Option<&[DMatrix<f64>]>,
    ) -> DMatrix<f64> {
        let (d, n) = (c.u.nrows(), c.u.ncols());
        let zero = || DMatrix::zeros(d, n);
        match self {
            Branch::Linear { w } => {
                let mut out = du.map(|x| nn(w, x)).unwrap_or_else(zero);
                if let Some(dw) = dw {
                    out += nn(&dw[0], &c.u);
                }
                out
            }
            Branch::Mlp { w1, w2, act: a } => {
                let h = c.h.as_ref().expect("MLP cache");
                let mut dh = du.map(|x| nn(w1, x));
                if let Some(dw) = dw {
                    let t = nn(&dw[0], &c.u);
                    dh = Some(match dh {
                        Some(x) => x + t,
                        None => t,
                    });
                }
                let mut out = match dh {
                    Some(mut dh) => {
                        dh.zip_apply(h, |g, x| *g *= act_prime(*a, x));
                        nn(w2, &dh)
                    }
                    None => zero(),
                };
                if let Some(dw) = dw {
                    out += nn(&dw[1], &c.last_input);
                }
                out
            }
            Branch::Attention {
                wq,
                wk,
                wv,
                wo,
                uniform,
                ..
            } => {
                let (heads, dh) = self.head_rows(d);
                let (k, v) = c.kv.as_ref().expect("attention cache");
                let (dwq, dwk, dwv, dwo) = match dw {
                    None => (None, None, None, None),
                    Some(w) if *uniform => (None, None, Some(&w[0]), Some(&w[1])),
                    Some(w) => (Some(&w[0]), Some(&w[1]), Some(&w[2]), Some(&w[3])),
                };
                let lin = |m: &DMatrix<f64>, dm: Option<&DMatrix<f64>>| {
                    let mut t = du.map(|x| nn(m, x)).unwrap_or_else(zero);
                    if let Some(dm) = dm {
                        t += nn(dm, &c.u);
                    }
                    t
                };
                let dv = lin(wv, dwv);
                let (dq, dk) = if *uniform {
                    (zero(), zero())
                } else {
                    (lin(wq, dwq), lin(wk, dwk))
                };
                let q = c.h.as_ref();
                let scale = 1.0 / (dh as f64).sqrt();
                let mut d_o = DMatrix::zeros(d, n);
                for h in 0..heads {
                    let r = h * dh;
                    let a = &c.attn[h];
                    let mut t = dv.rows(r, dh) * a.transpose();
                    if !*uniform {
                        let q = q.expect("query cache");
                        let ds = (dq.rows(r, dh).transpose() * k.rows(r, dh)
                            + q.rows(r, dh).transpose() * dk.rows(r, dh))
                            * scale;
                        let da = softmax_jacobian(a, &ds);
                        t += v.rows(r, dh) * da.transpose();
                    }
                    d_o.rows_mut(r, dh).copy_from(&t);
                }
                let mut out = nn(wo, &d_o);
                if let Some(dwo) = dwo {
                    out += nn(dwo, &c.last_input);
                }
                out
            }
            Branch::Cross {
                wv,
                wo,
                memory_mean,
            } => match dw {
                None => zero(),
                Some(w) => broadcast(
                    &(&w[1] * (wv * memory_mean) + wo * (&w[0] * memory_mean)),
                    n,
                ),
            },
        }
    }

    /// Backprop of an output gradient `g`: `(dL/du, [dL/dW in weights() order])`.
    pub fn backward(&self, c: &Cache, g: &DMatrix<f64>) -> (DMatrix<f64>, Vec<DMatrix<f64>>) {
        let (d, n) = (c.u.nrows(), c.u.ncols());
        match self {
            Branch::Linear { w } => (tn(w, g), vec![nt(g, &c.u)]),
            Branch::Mlp { w1, w2, act: a } => {
                let h = c.h.as_ref().expect("MLP cache");
                let gw2 = nt(g, &c.last_input);
                let mut gh = tn(w2, g);
                gh.zip_apply(h, |x, hv| *x *= act_prime(*a, hv));
                let gw1 = nt(&gh, &c.u);
                (tn(w1, &gh), vec![gw1, gw2])
            }
            Branch::Attention {
                wq,
                wk,
                wv,
                wo,
                uniform,
                ..
            } => {
                let (heads, dh) = self.head_rows(d);
                let (k, v) = c.kv.as_ref().expect("attention cache");
                let gwo = nt(g, &c.last_input);
                let go = tn(wo, g);
                let mut gv = DMatrix::zeros(d, n);
                let mut gq = DMatrix::zeros(if *uniform { 0 } else { d }, n);
                let mut gk = DMatrix::zeros(if *uniform { 0 } else { d }, n);
                let scale = 1.0 / (dh as f64).sqrt();
                for h in 0..heads {
                    let r = h * dh;
                    let a = &c.attn[h];
                    let go_h = go.rows(r, dh);
                    gv.rows_mut(r, dh).copy_from(&(go_h * a));
                    if !*uniform {
                        let q = c.h.as_ref().expect("query cache");
                        let ga = go_h.transpose() * v.rows(r, dh);
                        let gs = softmax_jacobian(a, &ga) * scale;
                        gq.rows_mut(r, dh)
                            .copy_from(&(k.rows(r, dh) * gs.transpose()));
                        gk.rows_mut(r, dh).copy_from(&(q.rows(r, dh) * gs));
                    }
                }
                let mut gu = tn(wv, &gv);
                let gwv = nt(&gv, &c.u);
                if *uniform {
                    (gu, vec![gwv, gwo])
                } else {
                    gu += tn(wq, &gq) + tn(wk, &gk);
                    let gwq = nt(&gq, &c.u);
                    let gwk = nt(&gk, &c.u);
                    (gu, vec![gwq, gwk, gwv, gwo])
                }
            }
            Branch::Cross {
                wo, memory_mean, ..
            } => {
                let gsum: DVector<f64> = g.column_sum();
                let vm = c.last_input.column(0).into_owned();
                let gwo = &gsum * vm.transpose();
                let gwv = wo.tr_mul(&gsum) * memory_mean.transpose();
                (DMatrix::zeros(d, n), vec![gwv, gwo])
            }
        }
    }
}
