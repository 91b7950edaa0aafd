//! Self-attention (docs/theory.md, "Branches"): per head h, `A_h = softmax_k(Q_h^T K_h / sqrt(d_h))`
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
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, mul_into, mul_new, nn, nt, tn};

/// Registry entry of softmax attention.
pub(crate) const SOFTMAX_INFO: KindInfo = KindInfo {
    name: "attention",
    aliases: &[],
    about: "multi-head softmax self-attention (Monte Carlo only)",
    closed_form: false,
};

/// Registry entry of uniform attention.
pub(crate) const UNIFORM_INFO: KindInfo = KindInfo {
    name: "uniform-attention",
    aliases: &[],
    about: "self-attention with W_Q = W_K = 0: W_O W_V of the token mean",
    closed_form: true,
};

/// Uniform attention's mean-field summary.
pub(crate) struct UniformKernel;

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
///
/// # Examples
///
/// With `W_Q = W_K = 0` every score is 0, so softmax weights are exactly `1/n`: with identity
/// values and output, each of two tokens `(1, 2)` and `(3, 4)` becomes their mean `(2, 3)`.
/// Under a causal mask the first token sees only itself.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Module, attention::Attention};
///
/// let mut a = Attention {
///     wq: DMatrix::<f64>::zeros(2, 2),
///     wk: DMatrix::zeros(2, 2),
///     wv: DMatrix::identity(2, 2),
///     wo: DMatrix::identity(2, 2),
///     heads: 1,
///     uniform: false,
///     causal: false,
///     seq: 0,
/// };
/// let u = DMatrix::from_column_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
/// let (y, cache) = a.forward(&u);
/// assert_eq!(y, DMatrix::from_column_slice(2, 2, &[2.0, 3.0, 2.0, 3.0]));
/// assert_eq!(cache.attn[0], DMatrix::from_element(2, 2, 0.5));
/// assert_eq!(a.params().iter().map(|p| p.0).collect::<Vec<_>>(), ["wq", "wk", "wv", "wo"]);
///
/// a.causal = true;
/// let (y, _) = a.forward(&u);
/// assert_eq!(y, DMatrix::from_column_slice(2, 2, &[1.0, 2.0, 2.0, 3.0]));
/// ```
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
    /// Token i attends only to tokens `j <= i` of its sequence (a decoder's causal mask).
    pub causal: bool,
    /// Tokens per sequence: the columns are `n / seq` sequences of `seq` tokens each, and a
    /// token attends only within its own sequence; 0 means all columns are one sequence.
    pub seq: usize,
}

/// What the forward pass keeps.
///
/// # Examples
///
/// Uniform attention (`W_Q = W_K = 0`) keeps no queries or keys; its weights are `1/n`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Module, attention::Attention};
/// let a = Attention {
///     wq: DMatrix::<f64>::zeros(0, 0),
///     wk: DMatrix::zeros(0, 0),
///     wv: DMatrix::identity(2, 2),
///     wo: DMatrix::identity(2, 2),
///     heads: 1,
///     uniform: true,
///     causal: false,
///     seq: 0,
/// };
/// let u = DMatrix::from_column_slice(2, 4, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
/// let (_, c) = a.forward(&u);
/// assert_eq!((c.q.len(), c.k.len(), c.v.clone()), (0, 0, u.clone()));
/// assert_eq!(c.attn, [DMatrix::from_element(4, 4, 0.25)]);
/// assert_eq!(c.o, DMatrix::from_fn(2, 4, |i, _| [4.0, 5.0][i])); // the token mean
/// ```
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
    /// Attention weights per head and sequence (`seq x seq`, row = query), at index
    /// `h * sequences + s`.
    pub attn: Vec<DMatrix<T>>,
}

/// Softmax of every row in place; `causal` zeroes the entries right of the diagonal (a score
/// of minus infinity) before normalizing. Row i's maximum is nalgebra's `max` of its first
/// `last` entries (`last = i + 1` when causal, else every entry), a fold from the first entry
/// with `if a >= b { a } else { b }`; the exponentials are [`Real::exp_in_place`]'s (the bits
/// of glibc's `exp` and `expf`, f32 eight at a time); its sum is [`Real::row_sums`] (the additions of
/// [`Real::sum`] of the row). The matrix is read column by column, every row's chain advancing
/// side by side.
fn row_softmax<T: Real>(s: &mut DMatrix<T>, causal: bool) {
    let n = s.nrows();
    if n == 0 || s.ncols() == 0 {
        return;
    }
    // The first row whose range includes column j.
    let first = |j: usize| if causal { j } else { 0 };
    let mut max: Vec<T> = s.column(0).iter().copied().collect();
    for (j, col) in s.as_slice().chunks_exact(n).enumerate().skip(1) {
        for (m, &x) in max.iter_mut().zip(col).skip(first(j)) {
            *m = if *m >= x { *m } else { x };
        }
    }
    // `x - max` where the row sees the column, else 0 (whose exponential is set to 0 after):
    // one call over the whole matrix keeps the groups of eight whole.
    for (j, col) in s.as_mut_slice().chunks_exact_mut(n).enumerate() {
        let f = first(j).min(n);
        let (masked, seen) = col.split_at_mut(f);
        masked.fill(T::zero());
        for (x, &m) in seen.iter_mut().zip(&max[f..]) {
            *x -= m;
        }
    }
    T::exp_in_place(s.as_mut_slice());
    if causal {
        for (j, col) in s.as_mut_slice().chunks_exact_mut(n).enumerate() {
            col[..first(j).min(n)].fill(T::zero());
        }
    }
    let z: Vec<T> = T::row_sums(s).into_iter().map(T::of).collect();
    for col in s.as_mut_slice().chunks_exact_mut(n) {
        for (x, &z) in col.iter_mut().zip(&z) {
            *x /= z;
        }
    }
}

/// `A ⊙ (G - rowsum(A ⊙ G) 1^T)`: the softmax Jacobian applied row by row (symmetric).
fn softmax_jacobian<T: Real>(a: &DMatrix<T>, g: &DMatrix<T>) -> DMatrix<T> {
    let mut out = a.component_mul(g);
    let sums: Vec<T> = T::row_sums(&out).into_iter().map(T::of).collect();
    let rows = out.nrows().max(1);
    let cols = out.as_mut_slice().chunks_exact_mut(rows);
    for (col, a_col) in cols.zip(a.as_slice().chunks_exact(rows)) {
        for ((x, &a), &s) in col.iter_mut().zip(a_col).zip(&sums) {
            *x -= a * s;
        }
    }
    out
}

/// Which query columns see which key columns: `seqs` sequences side by side, sequence s's
/// queries at columns `s * q_len ..` of the queries and its keys at `s * k_len ..` of the keys
/// and values (self-attention: `q_len = k_len`, the stream's own columns; cross-attention: the
/// decoder's tokens against the encoder output's).
///
/// # Examples
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::attention::{Attention, Span};
///
/// let mut a = Attention {
///     wq: DMatrix::<f64>::zeros(2, 2),
///     wk: DMatrix::zeros(2, 2),
///     wv: DMatrix::identity(2, 2),
///     wo: DMatrix::identity(2, 2),
///     heads: 1,
///     uniform: false,
///     causal: false,
///     seq: 0,
/// };
/// // One sequence of all columns.
/// assert_eq!(a.span(3), Span { seqs: 1, q_len: 3, k_len: 3 });
/// // Sequences of 2 tokens: 4 columns are 2 sequences.
/// a.seq = 2;
/// assert_eq!(a.span(4), Span { seqs: 2, q_len: 2, k_len: 2 });
/// // Cross-attention from those 2 sequences to memories of 3 tokens each (6 columns).
/// assert_eq!(a.cross_span(4, 6, 3), Span { seqs: 2, q_len: 2, k_len: 3 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Sequences.
    pub seqs: usize,
    /// Queries per sequence.
    pub q_len: usize,
    /// Keys (and values) per sequence.
    pub k_len: usize,
}

impl<T: Real> Attention<T> {
    /// `(heads, rows per head)` at width d.
    fn head_rows(&self, d: usize) -> (usize, usize) {
        (self.heads, d / self.heads)
    }

    /// `(sequences, tokens per sequence)` for n columns.
    fn sequences(&self, n: usize) -> (usize, usize) {
        if self.seq == 0 || self.seq >= n {
            (1, n)
        } else {
            (n / self.seq, self.seq)
        }
    }

    /// The span of self-attention over n columns ([`Attention::seq`] tokens per sequence).
    pub fn span(&self, n: usize) -> Span {
        let (seqs, len) = self.sequences(n);
        Span {
            seqs,
            q_len: len,
            k_len: len,
        }
    }

    /// The span of cross-attention from `n` query columns ([`Attention::seq`] tokens per
    /// sequence) to a memory of `mem_len` tokens per sequence; panics unless the memory has
    /// `mem_len` columns per query sequence (a programming error).
    pub fn cross_span(&self, n: usize, mem_cols: usize, mem_len: usize) -> Span {
        let (seqs, q_len) = self.sequences(n);
        assert_eq!(
            seqs * mem_len,
            mem_cols,
            "one memory sequence per query sequence"
        );
        Span {
            seqs,
            q_len,
            k_len: mem_len,
        }
    }

    fn scale(dh: usize) -> T {
        T::of(1.0 / (dh as f64).sqrt())
    }

    /// `([O_1; ...; O_H], attention weights)` for projected queries, keys and values (`n`
    /// query columns), per head and sequence of `span`: `A = softmax(Q_h^T K_h / sqrt(d_h))`
    /// (causal when [`Attention::causal`]; the fixed averages when uniform), `O_h = V_h A^T`.
    fn mix(
        &self,
        (q, k, v): (&DMatrix<T>, &DMatrix<T>, &DMatrix<T>),
        n: usize,
        span: Span,
    ) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let d = v.nrows();
        let (heads, dh) = self.head_rows(d);
        let Span { seqs, q_len, k_len } = span;
        let mut attn = Vec::with_capacity(heads * seqs);
        let mut o = DMatrix::zeros(d, n);
        let scale = Self::scale(dh);
        for h in 0..heads {
            let r = h * dh;
            for s in 0..seqs {
                let (cq, ck) = (s * q_len, s * k_len);
                let a = if self.uniform {
                    DMatrix::from_fn(q_len, k_len, |i, j| {
                        if self.causal && j > i {
                            T::zero()
                        } else if self.causal {
                            T::of(1.0 / (i + 1) as f64)
                        } else {
                            T::of(1.0 / k_len as f64)
                        }
                    })
                } else {
                    let mut sc = mul_new(
                        &q.view((r, cq), (dh, q_len)),
                        true,
                        &k.view((r, ck), (dh, k_len)),
                        false,
                    );
                    sc *= scale;
                    row_softmax(&mut sc, self.causal);
                    sc
                };
                mul_into(
                    &mut o.view_mut((r, cq), (dh, q_len)),
                    &v.view((r, ck), (dh, k_len)),
                    false,
                    &a,
                    true,
                );
                attn.push(a);
            }
        }
        (o, attn)
    }

    /// `(dL/dQ, dL/dK, dL/dV)` for the gradient `go` of `[O_1; ...; O_H]` (`k_cols` key
    /// columns; `dL/dQ` and `dL/dK` empty when uniform).
    fn mix_backward(
        &self,
        c: &AttentionCache<T>,
        go: &DMatrix<T>,
        k_cols: usize,
        span: Span,
    ) -> (DMatrix<T>, DMatrix<T>, DMatrix<T>) {
        let (d, n) = (go.nrows(), go.ncols());
        let (heads, dh) = self.head_rows(d);
        let Span { seqs, q_len, k_len } = span;
        let mut gv = DMatrix::zeros(d, k_cols);
        let qk_rows = if self.uniform { 0 } else { d };
        let mut gq = DMatrix::zeros(qk_rows, n);
        let mut gk = DMatrix::zeros(qk_rows, k_cols);
        let scale = Self::scale(dh);
        for h in 0..heads {
            let r = h * dh;
            for s in 0..seqs {
                let (cq, ck, a) = (s * q_len, s * k_len, &c.attn[h * seqs + s]);
                let go_h = go.view((r, cq), (dh, q_len));
                mul_into(
                    &mut gv.view_mut((r, ck), (dh, k_len)),
                    &go_h,
                    false,
                    a,
                    false,
                );
                if !self.uniform {
                    let ga = mul_new(&go_h, true, &c.v.view((r, ck), (dh, k_len)), false);
                    let mut gs = softmax_jacobian(a, &ga);
                    gs *= scale;
                    mul_into(
                        &mut gq.view_mut((r, cq), (dh, q_len)),
                        &c.k.view((r, ck), (dh, k_len)),
                        false,
                        &gs,
                        true,
                    );
                    mul_into(
                        &mut gk.view_mut((r, ck), (dh, k_len)),
                        &c.q.view((r, cq), (dh, q_len)),
                        false,
                        &gs,
                        false,
                    );
                }
            }
        }
        (gq, gk, gv)
    }

    /// Cross-attention (Vaswani et al. 2017, "encoder-decoder attention"): queries
    /// `Q = W_Q u` from the stream `u` ([`Attention::seq`] tokens per sequence), keys and
    /// values `K = W_K m`, `V = W_V m` from the memory `m` (the encoder output, `mem_len`
    /// tokens per sequence, one sequence per query sequence), every query attending to all of
    /// its own sequence's memory tokens (not causal, not uniform). The cache's `k`, `v` have
    /// the memory's columns; `m` itself is not kept ([`Attention::backward_cross`] takes it).
    pub fn forward_cross(
        &self,
        u: &DMatrix<T>,
        m: &DMatrix<T>,
        mem_len: usize,
    ) -> (DMatrix<T>, AttentionCache<T>) {
        assert!(
            !self.uniform && !self.causal,
            "cross-attention is softmax attention over the whole source"
        );
        let span = self.cross_span(u.ncols(), m.ncols(), mem_len);
        let (q, k, v) = (nn(&self.wq, u), nn(&self.wk, m), nn(&self.wv, m));
        let (o, attn) = self.mix((&q, &k, &v), u.ncols(), span);
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

    /// Backprop of [`Attention::forward_cross`] for the output gradient `g`:
    /// `(dL/du, dL/dm, [dL/dW_Q, dL/dW_K, dL/dW_V, dL/dW_O])`, with `m` the memory the forward
    /// pass read.
    pub fn backward_cross(
        &self,
        c: &AttentionCache<T>,
        g: &DMatrix<T>,
        m: &DMatrix<T>,
        mem_len: usize,
    ) -> (DMatrix<T>, DMatrix<T>, Vec<DMatrix<T>>) {
        let span = self.cross_span(c.u.ncols(), m.ncols(), mem_len);
        let gwo = nt(g, &c.o);
        let go = tn(&self.wo, g);
        let (gq, gk, gv) = self.mix_backward(c, &go, m.ncols(), span);
        let gu = tn(&self.wq, &gq);
        let gm = tn(&self.wk, &gk) + tn(&self.wv, &gv);
        let grads = vec![nt(&gq, &c.u), nt(&gk, m), nt(&gv, m), gwo];
        (gu, gm, grads)
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
        let v = nn(&self.wv, u);
        let (q, k) = if self.uniform {
            (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0))
        } else {
            (nn(&self.wq, u), nn(&self.wk, u))
        };
        let (o, attn) = self.mix((&q, &k, &v), u.ncols(), self.span(u.ncols()));
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
        let (seqs, len) = self.sequences(n);
        let mut d_o = DMatrix::zeros(d, n);
        for h in 0..heads {
            let r = h * dh;
            for s in 0..seqs {
                let (c0, a) = (s * len, &c.attn[h * seqs + s]);
                let blk = |m: &DMatrix<T>| m.view((r, c0), (dh, len)).into_owned();
                let mut t = blk(&dv) * a.transpose();
                if !self.uniform {
                    let ds = (blk(&dq).transpose() * blk(&c.k) + blk(&c.q).transpose() * blk(&dk))
                        * scale;
                    let da = softmax_jacobian(a, &ds);
                    t += blk(&c.v) * da.transpose();
                }
                d_o.view_mut((r, c0), (dh, len)).copy_from(&t);
            }
        }
        let mut out = nn(&self.wo, &d_o);
        if let Some(dwo) = dwo {
            out += nn(dwo, &c.o);
        }
        out
    }

    fn backward(&self, c: &AttentionCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let gwo = nt(g, &c.o);
        let go = tn(&self.wo, g);
        let n = c.u.ncols();
        let (gq, gk, gv) = self.mix_backward(c, &go, n, self.span(n));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(r: usize, c: usize, seed: f64) -> DMatrix<f64> {
        DMatrix::from_fn(r, c, |i, j| ((i * c + j) as f64 * 0.37 + seed).sin())
    }

    /// `row_softmax` as it was written on nalgebra's row views, before it read the matrix
    /// column by column.
    fn row_softmax_by_rows<T: Real>(s: &mut DMatrix<T>, causal: bool) {
        for i in 0..s.nrows() {
            let mut row = s.row_mut(i);
            let last = if causal { i + 1 } else { row.len() };
            let m = row.columns(0, last).max();
            for (j, x) in row.iter_mut().enumerate() {
                *x = if j < last { (*x - m).exp() } else { T::zero() };
            }
            let z = T::of(T::sum(&row));
            row /= z;
        }
    }

    fn same_bits<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> bool {
        a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.as_f64().to_bits() == y.as_f64().to_bits())
    }

    #[test]
    fn row_softmax_keeps_the_bits_of_the_row_by_row_softmax() {
        // Square score matrices, causal (as attention makes them) and not, and a wide one, with
        // scores spread over a wide range so that maxima and sums matter; a matrix with a NaN,
        // an infinity and a minus infinity pins the maximum's `>=` fold; f64 and f32.
        let mut special = mat(4, 4, 0.7) * 30.0;
        special[(1, 0)] = f64::NAN;
        special[(2, 1)] = f64::INFINITY;
        special[(3, 2)] = f64::NEG_INFINITY;
        let cases = [
            (mat(1, 1, 0.3), vec![false, true]),
            (mat(5, 5, 1.5) * 30.0, vec![false, true]),
            (mat(32, 32, 9.6) * 30.0, vec![false, true]),
            (mat(7, 11, 2.1) * 30.0, vec![false]),
            (special, vec![false, true]),
        ];
        for (s, modes) in cases {
            for causal in modes {
                let (mut a, mut b) = (s.clone(), s.clone());
                row_softmax(&mut a, causal);
                row_softmax_by_rows(&mut b, causal);
                assert!(same_bits(&a, &b), "f64 {:?} causal {causal}", s.shape());
                let s32 = s.map(|x| x as f32);
                let (mut a, mut b) = (s32.clone(), s32);
                row_softmax(&mut a, causal);
                row_softmax_by_rows(&mut b, causal);
                assert!(same_bits(&a, &b), "f32 {:?} causal {causal}", s.shape());
            }
        }
    }

    fn attention(causal: bool, seq: usize) -> Attention<f64> {
        let d = 6;
        let s = 1.0 / (d as f64).sqrt();
        Attention {
            wq: mat(d, d, 0.1) * s,
            wk: mat(d, d, 0.2) * s,
            wv: mat(d, d, 0.3) * s,
            wo: mat(d, d, 0.4) * s,
            heads: 3,
            uniform: false,
            causal,
            seq,
        }
    }

    #[test]
    fn sequences_attend_only_within_themselves() {
        // Two sequences of 4 tokens side by side give each sequence's own output, forward and
        // backward.
        let u = mat(6, 8, 0.5);
        let g = mat(6, 8, 0.9);
        for causal in [false, true] {
            let both = attention(causal, 4);
            let one = attention(causal, 0);
            let (y, c) = both.forward(&u);
            let (gu, gw) = both.backward(&c, &g);
            let mut gw_sum = vec![DMatrix::zeros(6, 6); 4];
            for s in 0..2 {
                let part = u.columns(4 * s, 4).into_owned();
                let (ys, cs) = one.forward(&part);
                assert!(
                    (y.columns(4 * s, 4) - &ys).norm()
                        < normscope_numeric::tolerance::ROUNDING_CHAIN
                );
                let (gus, gws) = one.backward(&cs, &g.columns(4 * s, 4).into_owned());
                assert!(
                    (gu.columns(4 * s, 4) - &gus).norm()
                        < normscope_numeric::tolerance::ROUNDING_CHAIN
                );
                for (acc, w) in gw_sum.iter_mut().zip(&gws) {
                    *acc += w;
                }
            }
            for (a, b) in gw.iter().zip(&gw_sum) {
                assert!((a - b).norm() < normscope_numeric::tolerance::EXACT);
            }
        }
    }

    /// The softmax Jacobian as it was written before its rows' sums were taken at once: one
    /// row at a time, the row's sum, then the row updated entry by entry.
    fn softmax_jacobian_by_rows<T: Real>(a: &DMatrix<T>, g: &DMatrix<T>) -> DMatrix<T> {
        let mut out = a.component_mul(g);
        for i in 0..out.nrows() {
            let s = T::of(T::sum(&out.row(i)));
            for k in 0..out.ncols() {
                out[(i, k)] -= a[(i, k)] * s;
            }
        }
        out
    }

    #[test]
    fn softmax_jacobian_keeps_its_row_by_row_bits() {
        // Causal softmax rows and an order-sensitive gradient (entries over 12 decades), in
        // both precisions, square and not.
        for (rows, cols) in [(32, 32), (7, 5), (1, 9), (9, 1)] {
            let mut a = mat(rows, cols, 0.3) * 4.0;
            row_softmax(&mut a, rows == cols);
            let g = DMatrix::from_fn(rows, cols, |i, j| {
                ((i * cols + j) as f64 * 0.83).cos() * 10f64.powi(((5 * i + 3 * j) % 13) as i32 - 6)
            });
            let new = softmax_jacobian(&a, &g);
            let old = softmax_jacobian_by_rows(&a, &g);
            assert!(
                new.iter()
                    .zip(old.iter())
                    .all(|(x, y)| x.to_bits() == y.to_bits())
            );
            let (a32, g32) = (a.map(|x| x as f32), g.map(|x| x as f32));
            let new = softmax_jacobian(&a32, &g32);
            let old = softmax_jacobian_by_rows(&a32, &g32);
            assert!(
                new.iter()
                    .zip(old.iter())
                    .all(|(x, y)| x.to_bits() == y.to_bits())
            );
        }
    }

    #[test]
    fn causal_output_ignores_later_tokens() {
        let a = attention(true, 0);
        let u = mat(6, 5, 0.5);
        let mut later = u.clone();
        later.column_mut(4).fill(3.0);
        let (y, _) = a.forward(&u);
        let (y2, _) = a.forward(&later);
        assert!(
            (y.columns(0, 4) - y2.columns(0, 4)).norm() < normscope_numeric::tolerance::ROUNDING
        );
        assert!(
            (y.column(4) - y2.column(4)).norm() > normscope_numeric::tolerance::VISIBLY_DIFFERENT
        );
    }
}
