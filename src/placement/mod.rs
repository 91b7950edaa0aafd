//! Presets: one file per placement, each documenting its equation and its paper, plus the
//! registry that the CLI, the analyses and the tests iterate.
//!
//! Adding a preset is one new file plus one line in [`REGISTRY`].

mod admin;
mod deepnorm;
mod lns;
mod mixln;
mod post;
mod pre;
mod rezero;
mod sandwich;

use crate::spec::{BranchScale, SkipScale, Slot, StackSpec};
use crate::{Error, Result};

/// A named placement of normalization.
pub struct Preset {
    /// Canonical name used in tables and on the command line.
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// How papers name it in legends and tables (e.g. `Post-LN`).
    pub label: &'static str,
    /// The block equation.
    pub equation: &'static str,
    /// The paper it comes from.
    pub source: &'static str,
    /// Builds the stack for depth L (L >= 1).
    pub build: fn(usize) -> StackSpec,
}

/// Every preset, in the order tables list them.
pub const REGISTRY: &[Preset] = &[
    pre::PRESET,
    post::PRESET,
    deepnorm::PRESET,
    deepnorm::ENCDEC_ENCODER,
    deepnorm::ENCDEC_DECODER,
    sandwich::PRESET,
    lns::PRESET,
    admin::PRESET,
    mixln::PRESET,
    rezero::PRESET,
];

/// Comma-separated list of valid names (for error messages).
pub fn valid_names() -> String {
    REGISTRY
        .iter()
        .map(|p| {
            if p.aliases.is_empty() {
                p.name.to_string()
            } else {
                format!("{} (also {})", p.name, p.aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks a preset up by name or alias, ignoring ASCII case (`Pre`, `POST`, `DeepNorm`).
pub fn find(name: &str) -> Result<&'static Preset> {
    REGISTRY
        .iter()
        .find(|p| {
            p.name.eq_ignore_ascii_case(name)
                || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        })
        .ok_or_else(|| Error::Unknown {
            kind: "preset",
            name: name.to_string(),
            valid: valid_names(),
        })
}

/// User overrides applied on top of a preset (`--alpha`, `--beta`, `--lambda`, `--final-norm`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Replaces every block's skip scale by the symbol alpha with this value.
    pub alpha: Option<f64>,
    /// Sets DeepNet's branch-weight scale beta.
    pub beta: Option<f64>,
    /// Replaces every block's branch multiplier by the symbol lambda with this value.
    pub lambda: Option<f64>,
    /// Forces the final norm on (`Some(true)`) or off (`Some(false)`).
    pub final_norm: Option<bool>,
}

/// Builds preset `name` at depth `depth` and applies `ov`.
pub fn build(name: &str, depth: usize, ov: &Overrides) -> Result<StackSpec> {
    if depth == 0 {
        return Err(Error::invalid("--depth", 0, "an integer >= 1"));
    }
    let p = find(name)?;
    let mut spec = (p.build)(depth);
    spec.preset = p.name.to_string();
    if let Some(a) = ov.alpha {
        spec.map_blocks(|mut b| {
            b.skip = SkipScale::Alpha(a);
            b
        });
    }
    if let Some(l) = ov.lambda {
        spec.map_blocks(|mut b| {
            b.lambda = BranchScale::Lambda(l);
            b
        });
    }
    if let Some(b) = ov.beta {
        spec.beta = Some(b);
    }
    if let Some(f) = ov.final_norm {
        spec.final_norm = if f { Slot::Norm } else { Slot::Identity };
    }
    Ok(spec)
}

/// A tab-separated table of the presets: name, aliases, equation, source
/// (`normscope presets`).
pub fn table() -> String {
    let mut s = String::from("preset\taliases\tequation\tsource\n");
    for p in REGISTRY {
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            p.name,
            p.aliases.join(","),
            p.equation,
            p.source
        ));
    }
    s
}
