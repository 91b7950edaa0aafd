//! Forward, backward and forward-mode (JVP) passes of a whole [`TrainModel`]: input map, every
//! block, output norm and head, and the loss. Backward reuses each branch module's own
//! backward ([`crate::branch::Module::backward`]) and the norms' symmetric Jacobians; the
//! gradients come back in [`TrainModel::params`] order.
//!
//! Per block (docs/theory.md, "The block model", with the affine maps of [`super::layer_norm`]):
//!
//! ```text
//! u = s A_in(N_in(x)),  o = F(u),  b = A_br(N_br(o)),  z = alpha ⊙ x + lambda b,  y = A_out(N_out(z))
//! dL/dz = J_out^T A_out^T g,   dL/dx = alpha ⊙ dL/dz + J_in^T A_in^T s J_F^T J_br^T A_br^T lambda dL/dz
//! dL/dalpha = sum_t dL/dz ⊙ x,   dL/dlambda = <dL/dz, b>
//! ```
//!
//! Everything is generic over the float type `T` ([`Real`], f64 by default): products and
//! activations in `T` (f32: faer's `matmul`), every sum of squares, dot product and
//! row sum (the embedding gradients' sums over tokens too) accumulated in f64 and rounded
//! once, and the loss computed in f64 from the outputs. For f64 every operation is the one it
//! was before the type became generic.

use super::layer_norm::{Mode, NormLayer, row_sums};
use super::model::{InputMap, Multiplier, Skip, TrainBlock, TrainModel};
use super::task::Batch;
use crate::branch::{Cache, Module};
use crate::monte_carlo::network::scaled_sum;
use crate::monte_carlo::norm::NormCache;
use crate::norms::running::Running;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use std::borrow::Cow;

/// What the model reads.
///
/// # Examples
///
/// A vector input is read by the model's linear input map (8 x 4), giving `x_0` of width 8:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use nalgebra::DMatrix;
/// use normscope_core::train::pass::Input;
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let (model, _, _) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let x = DMatrix::from_element(4, 3, 1.0);
/// assert_eq!(model.embed(Input::Vectors(&x)).shape(), (8, 3));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Input<'a, T: Real = f64> {
    /// Token ids, sequence-major (`b * seq + t`), `seq` tokens per sequence.
    Tokens {
        /// The ids.
        ids: &'a [u32],
        /// Tokens per sequence.
        seq: usize,
    },
    /// One example per column.
    Vectors(&'a DMatrix<T>),
}

/// What the loss compares the output with.
///
/// # Examples
///
/// The squared error of `f = (1, 2)` against 0 is `(1 + 4) / 2 = 2.5`, with gradient
/// `2 (f - y) / n = (1, 2)`; the cross-entropy of four equal logits is `ln 4`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::pass::{Target, loss};
///
/// let f = DMatrix::from_column_slice(2, 1, &[1.0, 2.0]);
/// let y = DMatrix::zeros(2, 1);
/// let (l, g) = loss(&f, Target::Values(&y));
/// assert_eq!(l, 2.5);
/// assert_eq!(g.as_slice(), &[1.0, 2.0]);
///
/// let logits = DMatrix::<f64>::zeros(4, 1);
/// let (l, _) = loss(&logits, Target::Classes { ids: &[2], weights: &[1.0] });
/// assert_eq!(l, 4f64.ln());
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Target<'a, T: Real = f64> {
    /// Softmax cross-entropy `sum_t w_t (logsumexp(f_t) - f_t[y_t]) / sum_t w_t`.
    Classes {
        /// Target ids, one per column.
        ids: &'a [u32],
        /// Weights `w_t` (0 where the loss does not count).
        weights: &'a [f64],
    },
    /// Mean squared error over every entry, `mean (f - y)^2` (`torch.nn.MSELoss()`).
    Values(&'a DMatrix<T>),
}

impl<T: Real> Input<'_, T> {
    /// Tokens per sequence of the model's columns: the sequence length, or 1 for vectors
    /// (every column an example of its own).
    pub fn seq(&self) -> usize {
        match self {
            Input::Tokens { seq, .. } => *seq,
            Input::Vectors(_) => 1,
        }
    }
}

/// The norm slots of a stack of blocks and its output norm: every block's `N_in`, `N_br`,
/// `N_out` (where present), then the output norm.
pub(crate) fn stack_norm_slots<'a, T: Real>(
    blocks: &'a [TrainBlock<T>],
    final_norm: &'a Option<NormLayer<T>>,
) -> impl Iterator<Item = &'a NormLayer<T>> {
    blocks
        .iter()
        .flat_map(|b| [&b.n_in, &b.n_br, &b.n_out])
        .chain([final_norm])
        .flatten()
}

/// [`stack_norm_slots`], mutable.
pub(crate) fn stack_norm_slots_mut<'a, T: Real>(
    blocks: &'a mut [TrainBlock<T>],
    final_norm: &'a mut Option<NormLayer<T>>,
) -> impl Iterator<Item = &'a mut NormLayer<T>> {
    blocks
        .iter_mut()
        .flat_map(|b| [&mut b.n_in, &mut b.n_br, &mut b.n_out])
        .chain([final_norm])
        .flatten()
}

/// The caches of every norm slot of a stack's pass, present or not, in [`stack_norm_slots`]
/// order.
pub(crate) fn stack_caches<'a, T: Real>(
    blocks: &'a [BlockCache<T>],
    final_norm: &'a Option<NormCache<T>>,
) -> impl Iterator<Item = &'a Option<NormCache<T>>> {
    blocks
        .iter()
        .flat_map(|c| [&c.n_in, &c.n_br, &c.n_out])
        .chain([final_norm])
}

/// BatchNorm's running statistics after a training pass: for each norm slot of `slots` and its
/// cache (the caches of every slot, present or not, in the same order), the slot's
/// [`NormLayer::running_after`].
pub(crate) fn running_after<'a, T: Real + 'a>(
    slots: impl IntoIterator<Item = &'a NormLayer<T>>,
    caches: impl Iterator<Item = &'a Option<NormCache<T>>>,
) -> Vec<Running> {
    slots
        .into_iter()
        .zip(caches.flatten())
        .filter_map(|(n, c)| n.running_after(c))
        .collect()
}

/// Sets the BatchNorm slots' running statistics among `slots` to `running` in order (nothing
/// when `running` is empty, as after an evaluation pass).
pub(crate) fn set_running<'a, T: Real + 'a>(
    slots: impl IntoIterator<Item = &'a mut NormLayer<T>>,
    running: Vec<Running>,
) {
    if running.is_empty() {
        return;
    }
    let mut it = running.into_iter();
    for r in slots.into_iter().filter_map(|n| n.running.as_mut()) {
        *r = it.next().expect("one running statistic per BatchNorm slot");
    }
    assert!(
        it.next().is_none(),
        "one running statistic per BatchNorm slot"
    );
}

/// An f64 matrix of a task's batch in float type `T`: borrowed as it is for f64, rounded entry
/// by entry for f32.
pub(crate) fn real_ref<T: Real>(m: &DMatrix<f64>) -> Cow<'_, DMatrix<T>> {
    match (m as &dyn std::any::Any).downcast_ref::<DMatrix<T>>() {
        Some(same) => Cow::Borrowed(same),
        None => Cow::Owned(m.map(T::of)),
    }
}

/// One block's values from the forward pass.
///
/// # Examples
///
/// A Post-LN block: no `N_in` or `N_br` (so `b = o`), and `N_out` normalizes `z = x_0 +
/// F(x_0)`, whose mean square the cache records.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::{pass, run};
///
/// let raw = RawTrain {
///     presets: "post".into(),
///     model: RawModel { depth: 1, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     batch: 4,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
/// let (model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("post")?, 0)?;
/// let p = model.forward(pass::views(&first).0);
/// let b = &p.blocks[0];
/// assert!(b.n_in.is_none() && b.n_br.is_none() && b.br.is_none());
/// assert_eq!(b.br(), &b.out);
/// let z = &p.xs[0] + &b.out;
/// assert!((b.z_sq - z.norm_squared() / 32.0).abs() < 1e-12 * b.z_sq);
/// assert_eq!(b.n_out.as_ref().unwrap().y, p.xs[1]); // the affine map is 1 * y + 0 at init
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BlockCache<T: Real = f64> {
    /// `N_in`'s cache.
    pub n_in: Option<NormCache<T>>,
    /// The branch's cache.
    pub branch: Cache<T>,
    /// The raw branch output `o = F(u)`.
    pub out: DMatrix<T>,
    /// `N_br`'s cache.
    pub n_br: Option<NormCache<T>>,
    /// `b = A_br(N_br(o))` when the block has `N_br`; `None` when `b = o` ([`Self::br`]).
    pub br: Option<DMatrix<T>>,
    /// `N_out`'s cache.
    pub n_out: Option<NormCache<T>>,
    /// Mean square of `z`, the input of `N_out` (whether or not it is a norm), accumulated in
    /// f64.
    pub z_sq: f64,
}

/// A forward pass.
///
/// # Examples
///
/// A forward pass over a batch of 4 examples: the streams `x_0..=x_2`, one cache per block, the
/// head's input and the output (2 x 4).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::pass::{self, Pass};
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let (model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let p: Pass = model.forward(pass::views(&first).0);
/// assert_eq!((p.xs.len(), p.blocks.len()), (3, 2));
/// assert!(p.final_norm.is_some());
/// assert_eq!((p.top.shape(), p.output.shape()), ((8, 4), (2, 4)));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Pass<T: Real = f64> {
    /// The streams `x_0..=x_L`.
    pub xs: Vec<DMatrix<T>>,
    /// Block l at index l - 1.
    pub blocks: Vec<BlockCache<T>>,
    /// The output norm's cache.
    pub final_norm: Option<NormCache<T>>,
    /// The head's input `A_final(N_final(x_L))` (or `x_L`).
    pub top: DMatrix<T>,
    /// The output `f` (outputs x columns).
    pub output: DMatrix<T>,
}

impl<T: Real> BlockCache<T> {
    /// `b = A_br(N_br(o))`: the stored matrix, or the branch output `o` itself when the
    /// block has no `N_br`.
    pub fn br(&self) -> &DMatrix<T> {
        self.br.as_ref().unwrap_or(&self.out)
    }
}

/// A norm slot applied to `z`: `(cache, A(N(z)))`, or `(None, z)` itself (no copy) when the
/// slot is empty.
pub(crate) fn slot<'a, T: Real>(
    n: &Option<NormLayer<T>>,
    mode: Mode,
    z: Cow<'a, DMatrix<T>>,
) -> (Option<NormCache<T>>, Cow<'a, DMatrix<T>>) {
    match n {
        Some(n) => {
            let (c, y) = n.forward_cow(mode, z);
            (Some(c), Cow::Owned(y))
        }
        None => (None, z),
    }
}

/// A norm slot's backward pass of `g`: `J^T A^T g` (its parameters' gradients appended to
/// `grads`), or `g` itself when the slot is empty.
pub(crate) fn slot_back<T: Real>(
    n: &Option<NormLayer<T>>,
    c: &Option<NormCache<T>>,
    g: DMatrix<T>,
    grads: &mut Vec<DMatrix<T>>,
) -> DMatrix<T> {
    match (n, c) {
        (Some(n), Some(c)) => {
            let (gz, gp) = n.backward_cow(c, Cow::Owned(g));
            grads.extend(gp);
            gz
        }
        _ => g,
    }
}

/// A norm slot's tangent: [`NormLayer::jvp`], or `dz` itself when the slot is empty.
fn slot_jvp<'a, T: Real>(
    n: &Option<NormLayer<T>>,
    c: &Option<NormCache<T>>,
    dz: &DMatrix<T>,
    tangents: &mut impl Iterator<Item = &'a DMatrix<T>>,
) -> DMatrix<T> {
    match (n, c) {
        (Some(n), Some(c)) => n.jvp(c, dz, tangents),
        _ => dz.clone(),
    }
}

fn scale_rows<T: Real>(x: &DMatrix<T>, s: &DMatrix<T>) -> DMatrix<T> {
    let mut out = x.clone();
    for mut col in out.column_iter_mut() {
        col.component_mul_assign(&s.column(0));
    }
    out
}

/// Token and position embeddings of `ids` (sequence-major, `seq` tokens per sequence):
/// `x_0[:, t] = E[:, ids_t] + P[:, t mod seq]`.
pub(crate) fn embed_tokens<T: Real>(
    tokens: &DMatrix<T>,
    positions: &DMatrix<T>,
    ids: &[u32],
    seq: usize,
) -> DMatrix<T> {
    DMatrix::from_fn(tokens.nrows(), ids.len(), |i, t| {
        tokens[(i, ids[t] as usize)] + positions[(i, t % seq)]
    })
}

/// The gradients `[dL/dE, dL/dP]` of [`embed_tokens`] for `g0 = dL/dx_0`, with `E` of `vocab`
/// columns and `P` of `seq`.
pub(crate) fn embedding_grads<T: Real>(
    g0: &DMatrix<T>,
    (vocab, seq): (usize, usize),
    ids: &[u32],
) -> Vec<DMatrix<T>> {
    // Each column a sum over the tokens (positions) that use it: accumulated in f64 and
    // rounded to `T` once, as `row_sums` does for gains and biases (for f64: the same
    // additions in the same order as accumulating in place).
    // On slices (column-major storage), column by column: the same additions.
    let rows = g0.nrows();
    let mut ge = DMatrix::<f64>::zeros(rows, vocab);
    let mut gp = DMatrix::<f64>::zeros(rows, seq);
    if rows > 0 {
        for (t, col) in g0.as_slice().chunks_exact(rows).enumerate() {
            let id = ids[t] as usize;
            let e = &mut ge.as_mut_slice()[id * rows..(id + 1) * rows];
            for (e, v) in e.iter_mut().zip(col) {
                *e += v.as_f64();
            }
            let q = t % seq;
            let q = &mut gp.as_mut_slice()[q * rows..(q + 1) * rows];
            for (q, v) in q.iter_mut().zip(col) {
                *q += v.as_f64();
            }
        }
    }
    vec![ge.map(T::of), gp.map(T::of)]
}

/// One block's forward pass from `x = x_{l-1}`, the branch computed by `branch` (its input
/// `u` to `(F(u), cache)`): `(cache, x_l)`.
pub(crate) fn block_forward<T: Real>(
    b: &TrainBlock<T>,
    mode: Mode,
    x: &DMatrix<T>,
    branch: impl FnOnce(&DMatrix<T>) -> (DMatrix<T>, Cache<T>),
) -> (BlockCache<T>, DMatrix<T>) {
    let (n_in, mut u) = slot(&b.n_in, mode, Cow::Borrowed(x));
    if let Some(s) = b.in_scale {
        *u.to_mut() *= T::of(s);
    }
    let (out, branch) = branch(&u);
    drop(u);
    let (n_br, br) = slot(&b.n_br, mode, Cow::Borrowed(&out));
    let lambda = T::of(b.lambda.value());
    // The Monte Carlo engine's order of operations: x * alpha + br * lambda.
    let z = match &b.skip {
        Skip::Fixed(a) => scaled_sum(x, T::of(*a), &br, lambda),
        Skip::Learnable(a) => scale_rows(x, a) + &*br * lambda,
    };
    let br = match br {
        Cow::Owned(b) => Some(b),
        Cow::Borrowed(_) => None,
    };
    let z_sq = T::sum_sq(&z) / z.len() as f64;
    let (n_out, y) = slot(&b.n_out, mode, Cow::Owned(z));
    let cache = BlockCache {
        n_in,
        branch,
        out,
        n_br,
        br,
        n_out,
        z_sq,
    };
    (cache, y.into_owned())
}

/// One block's backward pass: `(dL/dx_{l-1}, the block's gradients in
/// [`TrainBlock::named_params`] order)` for `gx = dL/dx_l`, with `x = x_{l-1}` and the branch
/// backpropagated by `branch` (`dL/do` to `(dL/du, [dL/dW])`).
pub(crate) fn block_backward<T: Real>(
    b: &TrainBlock<T>,
    c: &BlockCache<T>,
    x: &DMatrix<T>,
    gx: DMatrix<T>,
    branch: impl FnOnce(&DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>),
) -> (DMatrix<T>, Vec<DMatrix<T>>) {
    let mut out_grads = Vec::new();
    let gz = slot_back(&b.n_out, &c.n_out, gx, &mut out_grads);
    let lambda = T::of(b.lambda.value());
    let mut br_grads = Vec::new();
    let g_o = slot_back(&b.n_br, &c.n_br, &gz * lambda, &mut br_grads);
    let (mut gu, gw) = branch(&g_o);
    if let Some(s) = b.in_scale {
        gu *= T::of(s);
    }
    let mut in_grads = Vec::new();
    let g_in = slot_back(&b.n_in, &c.n_in, gu, &mut in_grads);
    // `dL/dx = (alpha ⊙ dL/dz) + g_in`, summed into `g_in`'s buffer: the same two operations
    // per entry as adding the scaled copy.
    let mut gx = g_in;
    let skip_grad = match &b.skip {
        Skip::Fixed(a) => {
            let a = T::of(*a);
            gx.zip_apply(&gz, |g, z| *g = z * a + *g);
            None
        }
        Skip::Learnable(a) => {
            let rows = gz.nrows();
            if rows > 0 {
                let a = &a.as_slice()[..rows];
                let chunks = gx.as_mut_slice().chunks_exact_mut(rows);
                for (gc, zc) in chunks.zip(gz.as_slice().chunks_exact(rows)) {
                    for ((g, &z), &s) in gc.iter_mut().zip(zc).zip(a) {
                        *g = z * s + *g;
                    }
                }
            }
            Some(row_sums(&gz.component_mul(x)))
        }
    };
    let mut grads = gw;
    grads.extend(in_grads);
    grads.extend(br_grads);
    grads.extend(out_grads);
    grads.extend(skip_grad);
    if let Multiplier::Learnable(_) = b.lambda {
        grads.push(DMatrix::from_element(1, 1, T::of(T::dot(&gz, c.br()))));
    }
    (gx, grads)
}

/// The blocks' forward pass from `x0`: `(x_0..=x_L, caches)`, block i (0-based) computing its
/// branch with `branch(i, block, u)`.
pub(crate) fn forward_blocks<T: Real>(
    blocks: &[TrainBlock<T>],
    mode: Mode,
    x0: DMatrix<T>,
    mut branch: impl FnMut(usize, &TrainBlock<T>, &DMatrix<T>) -> (DMatrix<T>, Cache<T>),
) -> (Vec<DMatrix<T>>, Vec<BlockCache<T>>) {
    let mut xs = Vec::with_capacity(blocks.len() + 1);
    xs.push(x0);
    let mut caches = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        let x = xs.last().expect("x_0");
        let (c, y) = block_forward(b, mode, x, |u| branch(i, b, u));
        caches.push(c);
        xs.push(y);
    }
    (xs, caches)
}

/// What [`backward_blocks`] returns.
pub(crate) struct BlocksBackward<T: Real> {
    /// `dL/dx_0`.
    pub(crate) g0: DMatrix<T>,
    /// Block i's gradients (0-based), each in [`TrainBlock::named_params`] order.
    pub(crate) grads: Vec<Vec<DMatrix<T>>>,
    /// `||dL/dx_l||_F^2` for l = 0..=L (accumulated in f64).
    pub(crate) stream_sq: Vec<f64>,
}

/// The blocks' backward pass from `gx = dL/dx_L` over the forward pass `(xs, caches)`, block
/// i's branch backpropagated by `branch(i, block, cache, dL/do)`.
pub(crate) fn backward_blocks<T: Real>(
    blocks: &[TrainBlock<T>],
    (xs, caches): (&[DMatrix<T>], &[BlockCache<T>]),
    mut gx: DMatrix<T>,
    mut branch: impl FnMut(
        usize,
        &TrainBlock<T>,
        &Cache<T>,
        &DMatrix<T>,
    ) -> (DMatrix<T>, Vec<DMatrix<T>>),
) -> BlocksBackward<T> {
    let depth = blocks.len();
    let mut grads = vec![Vec::new(); depth];
    let mut stream_sq = vec![0.0; depth + 1];
    stream_sq[depth] = T::sum_sq(&gx);
    for i in (0..depth).rev() {
        let (b, c) = (&blocks[i], &caches[i]);
        let (g, w) = block_backward(b, c, &xs[i], gx, |g_o| branch(i, b, &c.branch, g_o));
        gx = g;
        stream_sq[i] = T::sum_sq(&gx);
        grads[i] = w;
    }
    BlocksBackward {
        g0: gx,
        grads,
        stream_sq,
    }
}

/// The head's backward pass from `g = dL/df` with `top` its input: `(dL/dx_L, [final norm's
/// gradients.., dL/dH])`.
pub(crate) fn head_backward<T: Real>(
    head: &DMatrix<T>,
    final_norm: (&Option<NormLayer<T>>, &Option<NormCache<T>>),
    top: &DMatrix<T>,
    g: &DMatrix<T>,
) -> (DMatrix<T>, Vec<DMatrix<T>>) {
    let g_head = normscope_numeric::gemm::nt(g, top);
    let g_top = normscope_numeric::gemm::tn(head, g);
    let mut top_grads = Vec::new();
    let gx = slot_back(final_norm.0, final_norm.1, g_top, &mut top_grads);
    top_grads.push(g_head);
    (gx, top_grads)
}

impl<T: Real> TrainModel<T> {
    /// `x_0` for an input.
    pub fn embed(&self, input: Input<T>) -> DMatrix<T> {
        match (&self.input, input) {
            (InputMap::Embedding { tokens, positions }, Input::Tokens { ids, seq }) => {
                embed_tokens(tokens, positions, ids, seq)
            }
            (InputMap::Linear(w), Input::Vectors(x)) => normscope_numeric::gemm::nn(w, x),
            _ => panic!("the input does not match the model's input map"),
        }
    }

    /// How this model's norm slots run on columns of `seq` tokens per sequence: its epsilon,
    /// and training or evaluation ([`Self::training`]).
    pub fn mode(&self, seq: usize) -> Mode {
        Mode {
            eps: self.eps,
            seq,
            training: self.training,
        }
    }

    /// The forward pass from the stream `x_0` (columns in sequences of `seq` tokens).
    pub fn forward_from(&self, x0: DMatrix<T>, seq: usize) -> Pass<T> {
        let mode = self.mode(seq);
        let (xs, blocks) = forward_blocks(&self.blocks, mode, x0, |_, b, u| b.branch.forward(u));
        let (final_norm, top) = slot(
            &self.final_norm,
            mode,
            Cow::Borrowed(xs.last().expect("x_L")),
        );
        let top = top.into_owned();
        let output = normscope_numeric::gemm::nn(&self.head, &top);
        Pass {
            xs,
            blocks,
            final_norm,
            top,
            output,
        }
    }

    /// The forward pass of an input.
    pub fn forward(&self, input: Input<T>) -> Pass<T> {
        self.forward_from(self.embed(input), input.seq())
    }

    /// BatchNorm's running statistics after the training pass `p`, one per BatchNorm slot in
    /// [`Self::norm_slots`] order (empty for a model without one, or a pass in evaluation
    /// mode).
    pub fn running_after(&self, p: &Pass<T>) -> Vec<Running> {
        running_after(self.norm_slots(), stack_caches(&p.blocks, &p.final_norm))
    }

    /// Every norm slot: blocks 1..=L's `N_in`, `N_br`, `N_out` (where present), then the
    /// output norm.
    pub fn norm_slots(&self) -> Vec<&NormLayer<T>> {
        stack_norm_slots(&self.blocks, &self.final_norm).collect()
    }

    /// Sets BatchNorm's running statistics to `running`, one per BatchNorm slot in
    /// [`Self::norm_slots`] order (from [`Self::running_after`]); an empty `running` leaves them.
    pub fn set_running(&mut self, running: Vec<Running>) {
        set_running(self.norm_slots_mut(), running);
    }

    /// [`Self::norm_slots`], mutable.
    pub fn norm_slots_mut(&mut self) -> Vec<&mut NormLayer<T>> {
        stack_norm_slots_mut(&mut self.blocks, &mut self.final_norm).collect()
    }

    /// `(dL/dx_0, gradients of every parameter except the input map's, in [`Self::params`]
    /// order, ||dL/dx_l||_F^2 for l = 0..=L)` for the output gradient `g = dL/df`.
    fn backward_body(&self, p: &Pass<T>, g: &DMatrix<T>) -> BlocksBackward<T> {
        let (gx, top_grads) =
            head_backward(&self.head, (&self.final_norm, &p.final_norm), &p.top, g);
        let mut body = backward_blocks(&self.blocks, (&p.xs, &p.blocks), gx, |_, b, c, g_o| {
            b.branch.backward(c, g_o)
        });
        body.grads.push(top_grads);
        body
    }

    /// Gradients of every parameter, in [`Self::params`] order, for the output gradient
    /// `g = dL/df` of a pass of `input`.
    pub fn backward(&self, input: Input<T>, p: &Pass<T>, g: &DMatrix<T>) -> Vec<DMatrix<T>> {
        self.backward_with_streams(input, p, g).0
    }

    /// [`Self::backward`] and the stream gradients' squared norms `||dL/dx_l||_F^2` for
    /// l = 0..=L (accumulated in f64), from the same pass.
    pub fn backward_with_streams(
        &self,
        input: Input<T>,
        p: &Pass<T>,
        g: &DMatrix<T>,
    ) -> (Vec<DMatrix<T>>, Vec<f64>) {
        let body = self.backward_body(p, g);
        let g0 = &body.g0;
        let mut out = match (&self.input, input) {
            (InputMap::Embedding { tokens, positions }, Input::Tokens { ids, .. }) => {
                embedding_grads(g0, (tokens.ncols(), positions.ncols()), ids)
            }
            (InputMap::Linear(_), Input::Vectors(x)) => {
                vec![normscope_numeric::gemm::nt(g0, x)]
            }
            _ => panic!("the input does not match the model's input map"),
        };
        out.extend(body.grads.into_iter().flatten());
        (out, body.stream_sq)
    }

    /// The output tangent `df` for parameter tangents `dw` (in [`Self::params`] order) at the
    /// pass `p` of `input`: forward-mode differentiation of the whole model.
    pub fn jvp(&self, input: Input<T>, p: &Pass<T>, dw: &[DMatrix<T>]) -> DMatrix<T> {
        let mut t = dw.iter();
        let mut dx = match &self.input {
            InputMap::Embedding { .. } => {
                let (de, dp) = (t.next().expect("dE"), t.next().expect("dP"));
                let Input::Tokens { ids, seq } = input else {
                    panic!("the input does not match the model's input map")
                };
                DMatrix::from_fn(self.width(), ids.len(), |i, c| {
                    de[(i, ids[c] as usize)] + dp[(i, c % seq)]
                })
            }
            InputMap::Linear(_) => {
                let Input::Vectors(x) = input else {
                    panic!("the input does not match the model's input map")
                };
                normscope_numeric::gemm::nn(t.next().expect("dW_in"), x)
            }
        };
        for (l, (b, c)) in self.blocks.iter().zip(&p.blocks).enumerate() {
            let x = &p.xs[l];
            let n_weights = b.branch.params().len();
            let dwb: Vec<DMatrix<T>> = (0..n_weights)
                .map(|_| t.next().expect("a branch tangent").clone())
                .collect();
            let mut du = slot_jvp(&b.n_in, &c.n_in, &dx, &mut t);
            if let Some(s) = b.in_scale {
                du *= T::of(s);
            }
            let d_o = b.branch.jvp(&c.branch, Some(&du), Some(&dwb));
            let d_br = slot_jvp(&b.n_br, &c.n_br, &d_o, &mut t);
            // params() lists n_in, n_br, n_out, then omega and lambda: take n_out's tangents
            // now and apply them after z.
            let n_out_t: Vec<&DMatrix<T>> = b
                .n_out
                .iter()
                .flat_map(|n| n.params())
                .map(|_| t.next().expect("an n_out tangent"))
                .collect();
            let mut dz = match &b.skip {
                Skip::Fixed(a) => &dx * T::of(*a),
                Skip::Learnable(a) => {
                    let da = t.next().expect("an omega tangent");
                    scale_rows(&dx, a) + scale_rows(x, da)
                }
            };
            dz += &d_br * T::of(b.lambda.value());
            if let Multiplier::Learnable(_) = b.lambda {
                dz += c.br() * t.next().expect("a lambda tangent")[(0, 0)];
            }
            dx = slot_jvp(&b.n_out, &c.n_out, &dz, &mut n_out_t.into_iter());
        }
        let d_top = slot_jvp(&self.final_norm, &p.final_norm, &dx, &mut t);
        let dh = t.next().expect("dH");
        assert!(t.next().is_none(), "more tangents than parameters");
        normscope_numeric::gemm::nn(&self.head, &d_top) + normscope_numeric::gemm::nn(dh, &p.top)
    }
}

/// `(loss, dL/df)` of an output against its target: the loss in f64 (cross-entropy's
/// log-sum-exp and every sum from the outputs widened to f64; the squared error's sum
/// accumulated in f64), the gradient rounded once to `T`.
pub fn loss<T: Real>(f: &DMatrix<T>, target: Target<T>) -> (f64, DMatrix<T>) {
    match target {
        Target::Classes { ids, weights } => {
            let total: f64 = weights.iter().sum();
            let mut g = DMatrix::zeros(f.nrows(), f.ncols());
            let mut sum = 0.0;
            // One column widened to f64 at a time, in a buffer kept across columns.
            let mut col = Vec::with_capacity(f.nrows());
            for (t, fcol) in f.column_iter().enumerate() {
                let w = weights[t];
                if w == 0.0 {
                    continue;
                }
                let m = fcol.max().as_f64();
                col.clear();
                col.extend(fcol.iter().map(|v| v.as_f64()));
                let z: f64 = col.iter().map(|v| (v - m).exp()).sum();
                let lse = m + z.ln();
                let y = ids[t] as usize;
                sum += w * (lse - col[y]);
                for (i, v) in col.iter().enumerate() {
                    let gi = w / total * (v - lse).exp();
                    g[(i, t)] = T::of(if i == y { gi - w / total } else { gi });
                }
            }
            (sum / total, g)
        }
        Target::Values(y) => {
            let r = f - y;
            let n = r.len() as f64;
            (T::sum_sq(&r) / n, r * T::of(2.0 / n))
        }
    }
}

/// The decoder-only model's input and the loss's target of a batch (a batch of pairs, read by
/// the encoder-decoder model, panics).
pub fn views(b: &Batch) -> (Input<'_>, Target<'_>) {
    match b {
        Batch::Vectors(v) => views_with(b, Some((&v.x, &v.y))),
        _ => views_with(b, None),
    }
}

/// The model's input and the loss's target of a batch whose vectors `(x, y)`, if it has them,
/// are given in float type `T`.
fn views_with<'a, T: Real>(
    b: &'a Batch,
    vectors: Option<(&'a DMatrix<T>, &'a DMatrix<T>)>,
) -> (Input<'a, T>, Target<'a, T>) {
    match (b, vectors) {
        (Batch::Tokens(t), _) => (
            Input::Tokens {
                ids: &t.inputs,
                seq: t.seq,
            },
            Target::Classes {
                ids: &t.targets,
                weights: &t.weights,
            },
        ),
        (Batch::Vectors(_), Some((x, y))) => (Input::Vectors(x), Target::Values(y)),
        (Batch::Vectors(_), None) => unreachable!("a vector batch's matrices"),
        (Batch::Pairs(_), _) => panic!("pairs are read by the encoder-decoder model (seq2seq)"),
    }
}

/// A batch with its matrices in float type `T` (borrowed for f64, rounded once for f32), so
/// that a model of type `T` can read it ([`Typed::views`]).
///
/// # Examples
///
/// A regression batch read in f32: its inputs rounded once to the model's type.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::pass::{Input, Typed};
/// use normscope_core::train::task::Batch;
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let batch = task.batch(&mut run::data_rng(0), 3);
/// let typed = Typed::<f32>::new(&batch);
/// let (Input::Vectors(x), _) = typed.views() else { panic!("vectors") };
/// let Batch::Vectors(v) = &batch else { panic!("vectors") };
/// assert_eq!(x.shape(), (4, 3));
/// assert_eq!(x[(0, 0)], v.x[(0, 0)] as f32);
/// # Ok(())
/// # }
/// ```
pub struct Typed<'a, T: Real> {
    batch: &'a Batch,
    /// A vector batch's inputs `x` in `T`.
    x: Option<Cow<'a, DMatrix<T>>>,
    /// A vector batch's targets `y` in `T`.
    y: Option<Cow<'a, DMatrix<T>>>,
}

impl<'a, T: Real> Typed<'a, T> {
    /// `b` in type `T`.
    pub fn new(batch: &'a Batch) -> Self {
        let (x, y) = match batch {
            Batch::Vectors(v) => (Some(real_ref(&v.x)), Some(real_ref(&v.y))),
            Batch::Tokens(_) | Batch::Pairs(_) => (None, None),
        };
        Typed { batch, x, y }
    }

    /// The model's input and the loss's target ([`views`] in type `T`).
    pub fn views(&self) -> (Input<'_, T>, Target<'_, T>) {
        let vectors = self.x.as_deref().zip(self.y.as_deref());
        views_with(self.batch, vectors)
    }
}
