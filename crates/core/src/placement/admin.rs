//! Admin: `x_l = Norm(omega_l x_{l-1} + F_l(x_{l-1}))`, with the skip scale profiled at init as
//! the paper's code does it: `omega_1 = 1`, `omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var F_l`
//! (`docs/theory.md`, "The block model"). With unit-scale input (`q0 = 1`) this is `omega_l^2 = 1 + sum_{j<l}
//! Var F_j`; otherwise the first block's residual variance `q0` enters every later omega.
//!
//! Source: Liu et al. 2020, "Understanding the Difficulty of Training Transformers"
//! (arXiv:2004.08249); the profiling rule is Transformer-Clinic's `adaptive-profiling`
//! (github.com/LiyuanLucasLiu/Transformer-Clinic, `fairseq/modules/transformer_layer.py`).

use super::Preset;
use crate::spec::{BlockSpec, SkipScale, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "admin",
    aliases: &[],
    label: "Admin",
    equation: "x_l = Norm(omega_l x_{l-1} + F_l(x_{l-1})), omega_1 = 1, omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var F_l (profiled)",
    source: "Liu et al. 2020, Admin (arXiv:2004.08249)",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    let block = BlockSpec {
        skip: SkipScale::AdminOmega,
        ..BlockSpec::POST
    };
    StackSpec::uniform("admin", depth, block, Slot::Identity)
}
