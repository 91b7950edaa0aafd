//! Training: trainable models built from the same [`crate::spec::StackSpec`] and branch
//! modules as the Monte Carlo engine, their whole-model gradients, optimizers and schedules,
//! seeded tasks, and the per-step log (issue 11; `../shared/TRAINING.md`).
//!
//! - [`optim`]: SGD (momentum), Adam, AdamW, global-norm clipping.
//! - [`schedule`]: constant, linear warmup then constant / linear decay / inverse square root /
//!   cosine.
//! - [`task`]: teacher-student regression, next-token prediction from a random teacher
//!   Transformer, copy / reverse / sort; every batch drawn from a seed.

// pub mod optim;
// pub mod schedule;
// pub mod task;
pub mod init;
pub mod layer_norm;
pub mod model;
pub mod pass;
