//! Training: trainable models built from the same [`crate::spec::StackSpec`] and branch
//! modules as the Monte Carlo engine, their whole-model gradients, optimizers and schedules,
//! seeded tasks, and the per-step log (docs/training.md).
//!
//! - [`model`], [`layer_norm`], [`init`]: the trainable model, its norms with learnable
//!   affine maps, and every preset's init recipe (the body drawn by the Monte Carlo sampler).
//! - [`pass`]: forward, backward and JVP of the whole model, and the losses.
//! - [`optim`]: SGD (momentum), Adam, AdamW, global-norm clipping; [`schedule`]: constant,
//!   linear warmup then constant / linear decay / inverse square root / cosine.
//! - [`task`]: teacher-student regression, next-token prediction from a random teacher
//!   Transformer, copy / reverse / sort; every batch drawn from a seed.
//! - [`config`], [`run`], [`diagnostics`], [`log`]: a checked request, the loop and what it
//!   logs, the tidy table; [`dump`]: the initial weights and batches for the PyTorch check.
//! - [`classify`]: a run's class from its curve (diverged, collapsed, still descending,
//!   trained); [`search`]: the widening log-scale search for a maximum stable learning rate.
//! - [`trainable`]: what the loop needs of a model; [`seq2seq`]: the encoder-decoder
//!   Transformer (`--arch encoder-decoder`) and its passes, on the reverse-pairs task.
//! - [`sweep`]: many runs over cells and paired seeds; [`ablation`]: each block's ablation
//!   cost and angular distance (Curse of Depth); [`lens`]: a trained model as the Monte Carlo
//!   engine's network, so its init-time estimators run on trained weights.
//!
//! Float type: the model, its passes and the optimizer are generic over
//! [`normscope_numeric::gemm::Real`] with f64 as the default type parameter (`TrainModel<T =
//! f64>`, ...), so f64 code reads as before and computes the same bits. `normscope train
//! --precision f32` runs one request in f32 ([`run::run_one`] dispatches on
//! `cfg.mc.precision`): products, activations, parameters and optimizer state in f32; sums of
//! squares, dot products, norm statistics, losses and every logged value accumulated in f64.
//! Sweeps, ablations and the training analyses use the f64 entry points ([`run::start`],
//! [`init::model`]) and stay f64: [`run::start`] (hence a sweep and `--dump-init`) refuses a
//! request whose precision is not f64 ([`run::check_f64`]) instead of computing it in f64.

pub mod ablation;
pub mod batch_cache;
pub mod classify;
pub mod config;
pub mod diagnostics;
pub mod dump;
pub mod first_update;
pub mod init;
pub mod layer_norm;
pub mod lens;
pub mod log;
pub mod model;
pub mod optim;
pub mod pass;
pub mod run;
pub mod schedule;
pub mod search;
pub mod seq2seq;
pub mod summary;
pub mod sweep;
pub mod task;
pub mod trainable;
