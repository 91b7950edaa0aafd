//! The Transformer stack: blocks alternate softmax self-attention (odd blocks) and a ReLU MLP
//! (even blocks), so a Transformer layer is two residual blocks (Vaswani et al. 2017; Xiong
//! et al. 2020 count Pre-/Post-LN the same way). Its blocks are [`super::attention`] and
//! [`super::mlp`] modules; the closed form has no softmax attention, so the stack is Monte
//! Carlo only.

use super::{Activation, Block, KindInfo};

/// Registry entry.
pub const INFO: KindInfo = KindInfo {
    name: "transformer",
    aliases: &[],
    about: "odd blocks softmax attention, even blocks ReLU MLP (Monte Carlo only)",
    closed_form: false,
};

/// Block l (1-based) of the stack: attention at odd l, the ReLU MLP at even l.
pub fn block(l: usize, uniform: bool) -> Block {
    if l % 2 == 1 {
        Block::Attention { uniform }
    } else {
        Block::Mlp(Activation::Relu)
    }
}
