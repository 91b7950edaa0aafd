//! Pre-Norm: `x_l = x_{l-1} + F_l(Norm(x_{l-1}))`, with a final Norm on x_L (on by default).
//!
//! Source: the seed notes (eq. 1 of seed 001); Xiong et al. 2020, "On Layer Normalization in the
//! Transformer Architecture".

use super::Preset;
use crate::spec::{BlockSpec, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "pre",
    aliases: &["pre-ln", "prenorm"],
    label: "Pre-LN",
    equation: "x_l = x_{l-1} + F_l(Norm(x_{l-1})); output Norm(x_L)",
    source: "Xiong et al. 2020 (arXiv:2002.04745); seeds 000-004",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    StackSpec::uniform("pre", depth, BlockSpec::PRE, Slot::Norm)
}
