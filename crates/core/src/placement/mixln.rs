//! Mix-LN: Post-Norm blocks for `l <= floor(rho L)`, Pre-Norm blocks after, rho = 0.25; final
//! Norm on x_L (the Pre-Norm part's).
//!
//! Source: Li et al. 2024, "Mix-LN: Unleashing the Power of Deeper Layers by Combining Pre-LN
//! and Post-LN" (arXiv:2412.13795).

use super::Preset;
use crate::spec::{BlockSpec, Segment, Slot, StackSpec};

/// Share of the blocks that use Post-Norm.
pub(crate) const RHO: f64 = 0.25;

pub(super) const PRESET: Preset = Preset {
    name: "mixln",
    aliases: &["mix-ln"],
    label: "Mix-LN",
    equation: "Post-Norm for l <= floor(0.25 L), Pre-Norm after; output Norm(x_L)",
    source: "Li et al. 2024, Mix-LN (arXiv:2412.13795)",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    let switch = (RHO * depth as f64).floor() as usize;
    let mut s = StackSpec::uniform("mixln", depth, BlockSpec::PRE, Slot::Norm);
    // rho < 1, so 1 <= switch < depth whenever switch >= 1.
    if switch >= 1 {
        s.segments = vec![
            Segment {
                last: switch,
                block: BlockSpec::POST,
            },
            Segment {
                last: depth,
                block: BlockSpec::PRE,
            },
        ];
    }
    s
}
