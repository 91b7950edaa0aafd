//! A streamed MLP block that holds one of its two weight matrices at a time.
//!
//! An MLP block `F(u) = W2 phi(W1 u)` has two `d x rd` matrices; regenerated whole, a block is
//! `2 d^2 r` values, two thirds of the issue's whole bound `d^2 r + L d n` at L = 32, d = 512,
//! n = 128 (docs/performance.md). A streamed network ([`super::Memory::Streamed`]) therefore
//! runs its MLP blocks through [`LeanMlp`] in the forward and backward passes:
//!
//! - forward: draw `W1`, compute `h = W1 u`, `z = phi(h)`, drop `W1`; draw `W2` (the next
//!   draws of the same stream), compute `W2 z`;
//! - backward: `dL/dh = phi'(h) ⊙ W2^T g` and `||g z^T||^2` with the `W2` of the step just
//!   recomputed, drop it; draw `W1` again from the generator saved before the block, and
//!   `dL/du = W1^T dL/dh`.
//!
//! The products, their order and the draws are those of [`Mlp`]'s `forward` and
//! `backward_last_sq` on the block drawn by [`sampler::draw_block`] ([`sampler::mlp_draws`]),
//! so the values are bit-identical to a held network's (test `tests/it/mc_memory.rs`); the cost is
//! one more draw of `W1` per backward step.

use super::sampler::{self, MatrixDraw};
use super::sampling::McConfig;
use crate::branch::mlp::Mlp;
use crate::branch::{Activation, Block, Cache, Init};
use crate::spec::StackSpec;
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, Timed, timed, tn};
use normscope_numeric::rng::Rng;

/// Block l of a streamed network when it is an MLP: its activation, init and two matrices.
///
/// # Examples
///
/// Block 1 of a ReLU-MLP stack is an MLP; under He init (`Var = 2 / fan_in`) at d = 8 and
/// hidden width 32 its `W1` (32 x 8) has std `sqrt(2/8) = 0.5` and its `W2` (8 x 32)
/// `sqrt(2/32) = 0.25`. A linear branch has no [`LeanMlp`].
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{lean_mlp::LeanMlp, McConfig, RawMc};
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
/// let lean = LeanMlp::of(&spec, &cfg, 1).expect("an MLP block");
/// assert_eq!(lean.stds(), vec![0.5, 0.25]);
///
/// let linear = McConfig::new(&RawModel { branch: "linear".into(), ..raw }, &RawMc::default())?;
/// assert!(LeanMlp::of(&spec, &linear, 1).is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LeanMlp {
    act: Activation,
    init: Init,
    draws: [MatrixDraw; 2],
}

impl LeanMlp {
    /// Block l's [`LeanMlp`] if its branch is an MLP, else `None`.
    pub fn of(spec: &StackSpec, cfg: &McConfig, l: usize) -> Option<Self> {
        match cfg.block(l) {
            Block::Mlp(act) => Some(LeanMlp {
                act,
                init: cfg.init(),
                draws: sampler::mlp_draws(spec, cfg, l),
            }),
            _ => None,
        }
    }

    /// Init standard deviation of `W1` and `W2` (what [`sampler::draw_block`] returns).
    pub fn stds(&self) -> Vec<f64> {
        self.draws.iter().map(|m| m.std(self.init)).collect()
    }

    fn draw<T: Real>(&self, i: usize, rng: &mut Rng) -> DMatrix<T> {
        timed(Timed::Draw, || self.draws[i].draw(self.init, rng))
    }

    /// `(W2 phi(W1 u), cache, W2)`, drawing `W1` then `W2` from `rng` (positioned at the
    /// block's first draw; left after its last) and never holding both.
    pub fn forward<T: Real>(
        &self,
        rng: &mut Rng,
        u: &DMatrix<T>,
    ) -> (DMatrix<T>, Cache<T>, DMatrix<T>) {
        let w1 = self.draw::<T>(0, rng);
        let (h, z) = Mlp::hidden(&w1, self.act, u);
        drop(w1);
        let w2 = self.draw::<T>(1, rng);
        let (out, cache) = Mlp::output(&w2, u, h, z);
        (out, Cache::Mlp(cache), w2)
    }

    /// `(dL/du, ||dL/dW2||^2)` from `g = dL/dF`, given the forward's `W2` (dropped before
    /// `W1` is drawn again from `saved`, the generator before the block's draws).
    pub fn backward<T: Real>(
        &self,
        w2: DMatrix<T>,
        saved: &Rng,
        cache: &Cache<T>,
        g: &DMatrix<T>,
    ) -> (DMatrix<T>, f64) {
        let Cache::Mlp(c) = cache else {
            panic!("an MLP block's cache")
        };
        let (gh, gw2_sq) = Mlp::back_to_hidden(&w2, self.act, c, g);
        drop(w2);
        let w1 = self.draw::<T>(0, &mut saved.clone());
        (tn(&w1, &gh), gw2_sq)
    }
}
