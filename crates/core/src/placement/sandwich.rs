//! Sandwich / Peri-LN: `x_l = x_{l-1} + Norm(F_l(Norm(x_{l-1})))`, final Norm on x_L.
//!
//! Sources: Ding et al. 2021, "CogView" (arXiv:2105.13290), Sandwich-LN; Kim et al. 2025,
//! "Peri-LN" (arXiv:2502.02732).

use super::Preset;
use crate::spec::{BlockSpec, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "sandwich",
    aliases: &["peri", "peri-ln"],
    label: "Peri-LN",
    equation: "x_l = x_{l-1} + Norm(F_l(Norm(x_{l-1}))); output Norm(x_L)",
    source: "Ding et al. 2021 CogView (arXiv:2105.13290); Kim et al. 2025 Peri-LN (arXiv:2502.02732)",
    build: super::Builder::BuiltIn(build),
    halves: None,
};

fn build(depth: usize) -> StackSpec {
    let block = BlockSpec {
        n_br: Slot::Norm,
        ..BlockSpec::PRE
    };
    StackSpec::uniform("sandwich", depth, block, Slot::Norm)
}
