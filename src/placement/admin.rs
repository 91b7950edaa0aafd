//! Admin: `x_l = Norm(omega_l x_{l-1} + F_l(x_{l-1}))`, with the skip scale profiled at init as
//! `omega_l^2 = 1 + sum_{j<l} Var F_j` (THEORY.md section 2), `Var F_j` the per-coordinate
//! second moment of branch j's output.
//!
//! Source: Liu et al. 2020, "Understanding the Difficulty of Training Transformers"
//! (arXiv:2004.08249).

use super::Preset;
use crate::spec::{BlockSpec, SkipScale, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "admin",
    aliases: &[],
    label: "Admin",
    equation: "x_l = Norm(omega_l x_{l-1} + F_l(x_{l-1})), omega_l^2 = 1 + sum_{j<l} Var F_j",
    source: "Liu et al. 2020, Admin (arXiv:2004.08249)",
    build: super::Builder::BuiltIn(build),
};

fn build(depth: usize) -> StackSpec {
    let block = BlockSpec {
        skip: SkipScale::AdminOmega,
        ..BlockSpec::POST
    };
    StackSpec::uniform("admin", depth, block, Slot::Identity)
}
