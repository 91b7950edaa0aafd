//! LayerNorm Scaling: `x_l = x_{l-1} + F_l(Norm(x_{l-1}) / sqrt(l))`, final Norm on x_L.
//!
//! Source: Sun et al. 2025, "The Curse of Depth in Large Language Models" (arXiv:2502.05795).

use super::Preset;
use crate::spec::{BlockSpec, InputScale, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "lns",
    aliases: &["layernorm-scaling"],
    label: "LayerNorm Scaling",
    equation: "x_l = x_{l-1} + F_l(Norm(x_{l-1}) / sqrt(l)); output Norm(x_L)",
    source: "Sun et al. 2025, The Curse of Depth (arXiv:2502.05795)",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    let block = BlockSpec {
        in_scale: InputScale::InvSqrtLayer,
        ..BlockSpec::PRE
    };
    StackSpec::uniform("lns", depth, block, Slot::Norm)
}
