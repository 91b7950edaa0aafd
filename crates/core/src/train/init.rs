//! Initial weights of a trainable model: the body is drawn by the Monte Carlo engine's sampler
//! ([`crate::monte_carlo::sampler::network`]), so every preset's recipe is the one the
//! init-time analyses measure:
//!
//! - the branch matrices from the init scheme (`--init`, Xavier by default);
//! - DeepNet (Wang et al. 2022, arXiv:2203.00555, Sec. 3 and Fig. 2): `beta = (8N)^(-1/4)` on
//!   the FFN matrices and attention's value and output projections (not queries and keys),
//!   `alpha = (2N)^(1/4)` on the skip, N = L/2 layers ([`crate::placement`]'s `deepnorm`);
//! - Admin (Liu et al. 2020, arXiv:2004.08249): `omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var F_l`, profiled
//!   by one forward pass over the first training batch ([`admin_omegas`]), then learnable;
//! - ReZero (Bachlechner et al. 2020, arXiv:2003.04887): learnable `lambda_l = 0`;
//! - LayerNorm-Scaling (Sun et al. 2025, arXiv:2502.05795): `1/sqrt(l)` after `N_in`;
//! - Mix-LN (Li et al. 2024, arXiv:2412.13795): Post-LN for the first quarter of the blocks,
//!   Pre-LN after.
//!
//! Weights are drawn from a stream seeded by the training seed alone (not the preset), so
//! presets whose shapes match start from the same draws, each scaled by its own recipe. The
//! token and position embeddings are `N(0, 1/2)` each, so `x_0` has per-coordinate second
//! moment 1 (the Monte Carlo engine's `q0 = 1`); the input map of regression is `N(0, 1/d_in)`,
//! the head is drawn from the init scheme (fan-in d).
//!
//! In float type `T` = f32 ([`model_as`]) every weight is drawn in f64 from the same stream and
//! rounded once, so an f32 model starts from its f64 twin's weights rounded (the precision is
//! not part of the seed), and Admin's `omega` is profiled on the f32 model.

use super::model::{InputMap, TrainModel};
use super::task::Io;
use crate::branch::Branch;
use crate::monte_carlo::network::Network;
use crate::monte_carlo::sample;
use crate::monte_carlo::sample::into_real;
use crate::monte_carlo::sampling::McConfig;
use crate::spec::{SkipScale, StackSpec};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use normscope_numeric::rng::{Rng, config_hash, splitmix64};
use rand::SeedableRng;

/// The stream of initial weights of training seed `seed` (independent of the preset).
pub fn weight_rng(seed: u64) -> Rng {
    Rng::seed_from_u64(splitmix64(
        splitmix64(seed) ^ config_hash("normscope-train-weights-v1"),
    ))
}

/// The body: the Monte Carlo sampler's network for `spec` under `cfg`, its attention made
/// causal within sequences of `seq` tokens for a sequence task; in float type `T` (drawn in f64
/// and rounded).
pub fn body<T: Real>(spec: &StackSpec, cfg: &McConfig, io: Io, rng: &mut Rng) -> Network<T> {
    let mut net = crate::monte_carlo::sampler::network::<T>(spec, cfg, rng);
    if let Io::Tokens { seq, .. } = io {
        for b in &mut net.branches {
            if let Branch::Attention(a) = b {
                a.causal = true;
                a.seq = seq;
            }
        }
    }
    net
}

/// Admin's profiled `omega_l` (Liu et al. 2020) on the stream `x0` (the first training batch):
/// the Monte Carlo engine's forward pass profiles them as Transformer-Clinic's
/// `adaptive-profiling` code does, `omega_1 = 1`, `omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var
/// F_l` with centred variances over all entries (`np.var`, accumulated in f64); 1 for blocks
/// without Admin's skip.
pub fn admin_omegas<T: Real>(net: &Network<T>, x0: &DMatrix<T>) -> Vec<f64> {
    if !(1..=net.depth()).any(|l| net.spec.block(l).skip == SkipScale::AdminOmega) {
        return vec![1.0; net.depth()];
    }
    let mut n = net.clone();
    n.input = x0.clone();
    n.forward(|_, _, _| {})
        .blocks
        .iter()
        .map(|b| b.alpha)
        .collect()
}

/// The input map and head for `io` at width d, drawn after the body from `rng` (in f64, then
/// rounded to `T`).
pub fn ends<T: Real>(cfg: &McConfig, io: Io, rng: &mut Rng) -> (InputMap<T>, DMatrix<T>) {
    let d = cfg.model.branch.width;
    let (input, outputs) = match io {
        Io::Tokens { vocab, seq } => {
            let tokens = embedding(rng, d, vocab);
            let positions = embedding(rng, d, seq);
            (InputMap::Embedding { tokens, positions }, vocab)
        }
        Io::Vectors { d_in, d_out } => (
            InputMap::Linear(into_real(
                sample::gaussian(rng, d, d_in) / (d_in as f64).sqrt(),
            )),
            d_out,
        ),
        Io::Pairs { .. } => panic!("pairs are read by the encoder-decoder model (seq2seq::init)"),
    };
    (input, head(cfg, outputs, rng))
}

/// An embedding table (token or position), d x `cols`, entries `N(0, 1/2)`, drawn in f64 from
/// `rng` and rounded to `T`.
pub(crate) fn embedding<T: Real>(rng: &mut Rng, d: usize, cols: usize) -> DMatrix<T> {
    into_real(sample::gaussian(rng, d, cols) * 0.5f64.sqrt())
}

/// The output head, `outputs x d`, from the init scheme (fan-in d), drawn in f64 from `rng` and
/// rounded to `T`.
pub(crate) fn head<T: Real>(cfg: &McConfig, outputs: usize, rng: &mut Rng) -> DMatrix<T> {
    let d = cfg.model.branch.width;
    into_real(sample::matrix(rng, cfg.init(), outputs, d, 1.0))
}

/// The trainable model of `spec` for training seed `seed`: body, ends, Admin's profiling on
/// `x0_of(input map)` (the first batch's stream). In f64; [`model_as`] for another float type.
pub fn model(
    spec: &StackSpec,
    cfg: &McConfig,
    io: Io,
    affine: bool,
    seed: u64,
    first_batch: impl FnOnce(&TrainModel) -> DMatrix<f64>,
) -> TrainModel {
    model_as(spec, cfg, io, affine, seed, first_batch)
}

/// [`model`] in float type `T`: the same draws, rounded to `T`, and Admin's profiling on the
/// `T` model's first-batch stream.
pub fn model_as<T: Real>(
    spec: &StackSpec,
    cfg: &McConfig,
    io: Io,
    affine: bool,
    seed: u64,
    first_batch: impl FnOnce(&TrainModel<T>) -> DMatrix<T>,
) -> TrainModel<T> {
    let mut rng = weight_rng(seed);
    let net = body(spec, cfg, io, &mut rng);
    let (input, head) = ends(cfg, io, &mut rng);
    let ones = vec![1.0; net.depth()];
    let mut m = TrainModel::from_network(net.clone(), input, head, affine, &ones);
    if (1..=spec.depth).any(|l| spec.block(l).skip == SkipScale::AdminOmega) {
        let x0 = first_batch(&m);
        let omegas = admin_omegas(&net, &x0);
        m = TrainModel::from_network(net, m.input, m.head, affine, &omegas);
    }
    m
}
