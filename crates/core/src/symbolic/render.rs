//! Renders the exact expansion `x_L = sum_j C_{L,j} B_j` of a preset as text, a LaTeX
//! `align*` block, or a tidy CSV (`normscope expand` and the `expansion` analysis).

use crate::branch::BranchModel;
use crate::model::ModelConfig;
use crate::placement::Preset;
use crate::symbolic::{self, Subs};
use crate::{Error, Result};

/// Output format of `expand`.
///
/// # Examples
///
/// Post-LN at depth 1 with the default Xavier linear branch: `x_1 = N(x_0 + F_1(x_0))`, so
/// `C_{1,0} = C_{1,1} = (q0 (1 + g))^(-1/2)`, `2^(-1/2) = 0.7071067811865476` at `g = q0 = 1`.
///
/// ```rust
/// use normscope_core::model::RawModel;
/// use normscope_core::symbolic::Subs;
/// use normscope_core::symbolic::render::{Format, render};
///
/// let model = RawModel { depth: 1, ..RawModel::default() }.check()?;
/// let mut notes = Vec::new();
/// let mut run = |format| render(normscope_core::placement::find("post")?, &model, &Subs::default(), format, &mut notes);
/// let text = String::from_utf8(run(Format::Text)?)?;
/// let lines: Vec<&str> = text.lines().collect();
/// assert!(lines[0].starts_with("# preset post, depth 1, branch linear"));
/// assert_eq!(lines[1], "x_1 = C_{1,0} x_0 + C_{1,1} F_1");
/// assert_eq!(lines[2], "C_{1,0} = q0^(-1/2) * (1 + g)^(-1/2) = 0.7071067811865476");
///
/// let tex = String::from_utf8(run(Format::Latex)?)?;
/// assert!(tex.contains("\\begin{align*}"));
/// let csv = String::from_utf8(run(Format::Csv)?)?;
/// assert!(csv.starts_with("preset,depth,layer,source,expression,latex,value"));
/// assert_eq!(csv.lines().count(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    /// Plain text.
    Text,
    /// A LaTeX `align*` block ready to `\input`.
    #[cfg_attr(feature = "cli", value(alias = "tex"))]
    Latex,
    /// A tidy CSV: `preset,depth,layer,source,expression,latex,value`.
    Csv,
}

fn source_name(j: usize, latex: bool) -> String {
    match (j, latex) {
        (0, false) => "x_0".into(),
        (0, true) => "x_0".into(),
        (j, false) => format!("F_{j}"),
        (j, true) => format!("F_{{{j}}}"),
    }
}

/// A coefficient times a source in LaTeX: `x_0` for a coefficient `1`, `-F_{2}` for `-1`,
/// else `coef \, source`. A negative term starts with `-`.
pub fn latex_term(coef: &str, source: &str) -> String {
    match coef {
        "1" => source.to_string(),
        "-1" => format!("-{source}"),
        c => format!("{c} \\, {source}"),
    }
}

/// The LaTeX of `terms` (from [`latex_term`]) as an `align*` body: the first after
/// `lhs &relation `, each further one on its own line after `&\quad + ` (or `-`).
pub fn latex_align(lhs: &str, relation: &str, terms: &[String]) -> String {
    let mut out = String::from("\\begin{align*}\n");
    for (j, t) in terms.iter().enumerate() {
        if j == 0 {
            out.push_str(&format!("{lhs} &{relation} {t}"));
        } else {
            match t.strip_prefix('-') {
                Some(rest) => out.push_str(&format!("&\\quad - {rest}")),
                None => out.push_str(&format!("&\\quad + {t}")),
            }
        }
        out.push_str(if j + 1 == terms.len() {
            "\n"
        } else {
            " \\\\\n"
        });
    }
    out.push_str("\\end{align*}\n");
    out
}

/// Largest depth `expand` accepts: it prints one exact coefficient per source, and the exact
/// polynomial algebra of some presets (Pre-Norm with an alpha override) is O(L^2).
pub(crate) const MAX_EXPAND_DEPTH: usize = 10_000;

/// The exact expansion of `preset`, with a note for each substituted symbol whose value
/// differs from the configured one.
fn expansion(
    preset: &Preset,
    model: &ModelConfig,
    subs: &Subs,
    notes: &mut Vec<String>,
) -> Result<(crate::spec::StackSpec, symbolic::Expansion)> {
    if model.depth > MAX_EXPAND_DEPTH {
        return Err(Error::invalid(
            "--depth",
            model.depth,
            format!(
                "at most {MAX_EXPAND_DEPTH} for expand; use `normscope theory --metrics coef --layers last` for numeric coefficients at any depth"
            ),
        ));
    }
    let spec = model.stack(preset)?;
    let branch = BranchModel::new(&model.branch, spec.beta, model.inputs.q0, model.inputs.c0);
    let ex = symbolic::expand(&spec, &branch, model.inputs.q0, subs)?;
    for s in symbolic::Sym::ALL {
        if let Some(r) = subs.get(s) {
            let v = symbolic::poly::rat_to_f64(r);
            let c = match s {
                symbolic::Sym::G => branch.nominal_gain,
                symbolic::Sym::Q0 => model.inputs.q0,
                _ => v,
            };
            if (v - c).abs() > 1e-12 * c.abs().max(1.0) {
                notes.push(format!(
                    "--subs {}={} differs from the configured {} = {}; values use the substituted one",
                    s.name(),
                    r,
                    s.name(),
                    c
                ));
            }
        }
    }
    Ok((spec, ex))
}

/// The coefficients of `preset`'s exact expansion as the tidy table `--format csv`
/// writes: `preset,depth,layer,source,expression,latex,value,missing` (value missing, with
/// the reason, where it is beyond f64), and the expansion rendered in each of `formats`, all
/// from one expansion (its exact algebra is O(L^2) for some presets). Notes as [`render`].
///
/// # Examples
///
/// Post-LN at depth 2, `x_2 = C_{2,0} x_0 + C_{2,1} F_1 + C_{2,2} F_2`:
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::symbolic::{Subs, render};
///
/// let model = RawModel { depth: 2, ..RawModel::default() }.check()?;
/// let latex = render::Format::Latex;
/// let (df, texts) = render::coefficients(normscope_core::placement::find("post")?, &model, &Subs::default(), &[latex], &mut Vec::new())?;
/// assert_eq!(df.height(), 3);
/// assert_eq!(df.column("source")?.u64()?.get(2), Some(2));
/// assert_eq!(texts[0], render::render(normscope_core::placement::find("post")?, &model, &Subs::default(), latex, &mut Vec::new())?);
/// # Ok(())
/// # }
/// ```
pub fn coefficients(
    preset: &Preset,
    model: &ModelConfig,
    subs: &Subs,
    formats: &[Format],
    notes: &mut Vec<String>,
) -> Result<(polars::prelude::DataFrame, Vec<Vec<u8>>)> {
    let (spec, ex) = expansion(preset, model, subs, notes)?;
    let texts = formats
        .iter()
        .map(|&f| formatted(&spec, &ex, model, f))
        .collect::<Result<Vec<_>>>()?;
    Ok((coefficient_frame(&spec, &ex)?, texts))
}

fn coefficient_frame(
    spec: &crate::spec::StackSpec,
    ex: &symbolic::Expansion,
) -> Result<polars::prelude::DataFrame> {
    use polars::prelude::*;
    let l = ex.depth;
    let n = l + 1;
    Ok(DataFrame::new_infer_height(vec![
        Column::new("preset".into(), vec![spec.preset.as_str(); n]),
        Column::new("depth".into(), vec![l as u64; n]),
        Column::new("layer".into(), vec![l as u64; n]),
        Column::new("source".into(), (0..n as u64).collect::<Vec<_>>()),
        Column::new(
            "expression".into(),
            ex.coefs.iter().map(|c| c.text()).collect::<Vec<_>>(),
        ),
        Column::new(
            "latex".into(),
            ex.coefs.iter().map(|c| c.latex()).collect::<Vec<_>>(),
        ),
        Column::new(
            "value".into(),
            (0..n)
                .map(|j| ex.beyond_f64(j).is_none().then(|| ex.value(j)))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "missing".into(),
            (0..n).map(|j| ex.beyond_f64(j)).collect::<Vec<_>>(),
        ),
    ])?)
}

/// Renders the exact expansion of `preset` in `format`. Notes (e.g. a substituted symbol
/// whose value differs from the configured one) go to `notes`.
pub fn render(
    preset: &Preset,
    model: &ModelConfig,
    subs: &Subs,
    format: Format,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>> {
    let (spec, ex) = expansion(preset, model, subs, notes)?;
    formatted(&spec, &ex, model, format)
}

/// `ex` (of `spec` under `model`) in `format`.
fn formatted(
    spec: &crate::spec::StackSpec,
    ex: &symbolic::Expansion,
    model: &ModelConfig,
    format: Format,
) -> Result<Vec<u8>> {
    let l = ex.depth;
    let symbols: Vec<String> = ex
        .symbols
        .iter()
        .map(|s| format!("{} = {}", s.name(), ex.values[s.index()]))
        .collect();
    let header = format!(
        "preset {}, depth {l}, branch {} (init {}), final norm {}; B_0 = x_0, F_j = F_j(N_in(x_{{j-1}})) is the raw output of branch j; {}",
        spec.preset,
        model.branch.kind.name(),
        model.branch.init.name(),
        if spec.final_norm.is_norm() {
            "on"
        } else {
            "off"
        },
        if symbols.is_empty() {
            "no free symbols".to_string()
        } else {
            format!("symbols: {}", symbols.join(", "))
        }
    );
    let mut out = String::new();
    match format {
        Format::Text => {
            out.push_str(&format!("# {header}\n"));
            let terms: Vec<String> = (0..=l)
                .map(|j| format!("C_{{{l},{j}}} {}", source_name(j, false)))
                .collect();
            out.push_str(&format!("x_{l} = {}\n", terms.join(" + ")));
            for (j, c) in ex.coefs.iter().enumerate() {
                out.push_str(&format!(
                    "C_{{{l},{j}}} = {} = {}\n",
                    c.text(),
                    ex.value_text(j)
                ));
            }
        }
        Format::Latex => {
            out.push_str(&format!("% normscope expand: {header}\n"));
            out.push_str(&format!(
                "\\noindent {}, {} branch, {} init:\n",
                crate::output::latex::escape(&spec.label),
                model.branch.kind.label(),
                model.branch.init.label()
            ));
            let terms: Vec<String> = ex
                .coefs
                .iter()
                .enumerate()
                .map(|(j, c)| latex_term(&c.latex(), &source_name(j, true)))
                .collect();
            out.push_str(&latex_align(&format!("x_{{{l}}}"), "=", &terms));
        }
        Format::Csv => {
            let mut df = coefficient_frame(spec, ex)?;
            let mut buf = Vec::new();
            crate::output::table::write_csv(&mut df, &mut buf)?;
            return Ok(buf);
        }
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latex_terms_drop_unit_coefficients() {
        assert_eq!(latex_term("1", "x_0"), "x_0");
        assert_eq!(latex_term("-1", "F_{2}"), "-F_{2}");
        assert_eq!(latex_term("\\lambda", "F_{1}"), "\\lambda \\, F_{1}");
        let a = latex_align(
            "x_{2}",
            "=",
            &["x_0".into(), "-F_{1}".into(), "\\lambda \\, F_{2}".into()],
        );
        assert_eq!(
            a,
            "\\begin{align*}\nx_{2} &= x_0 \\\\\n&\\quad - F_{1} \\\\\n&\\quad + \\lambda \\, F_{2}\n\\end{align*}\n"
        );
    }
}
