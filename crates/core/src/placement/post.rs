//! Post-Norm: `x_l = Norm(x_{l-1} + F_l(x_{l-1}))`, the original Transformer.
//!
//! Source: Vaswani et al. 2017, "Attention Is All You Need"; the seed notes (eq. 2 of seed 001).

use super::Preset;
use crate::spec::{BlockSpec, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "post",
    aliases: &["post-ln", "postnorm"],
    label: "Post-LN",
    equation: "x_l = Norm(x_{l-1} + F_l(x_{l-1}))",
    source: "Vaswani et al. 2017 (arXiv:1706.03762); seeds 000-004",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    StackSpec::uniform("post", depth, BlockSpec::POST, Slot::Identity)
}
