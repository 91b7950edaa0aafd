//! ReZero: `x_l = x_{l-1} + lambda_l F_l(x_{l-1})` with `lambda_l = 0` at init (a trainable
//! scalar), no norm anywhere.
//!
//! Source: Bachlechner et al. 2020, "ReZero is All You Need" (arXiv:2003.04887).

use super::Preset;
use crate::spec::{BlockSpec, BranchScale, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "rezero",
    aliases: &[],
    label: "ReZero",
    equation: "x_l = x_{l-1} + lambda_l F_l(x_{l-1}), lambda_l = 0 at init",
    source: "Bachlechner et al. 2020, ReZero (arXiv:2003.04887)",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    let block = BlockSpec {
        n_in: Slot::Identity,
        n_br: Slot::Identity,
        n_out: Slot::Identity,
        lambda: BranchScale::Lambda(0.0),
        ..BlockSpec::PRE
    };
    StackSpec::uniform("rezero", depth, block, Slot::Identity)
}
