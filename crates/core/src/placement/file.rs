//! Placement files: new presets defined in TOML, without writing Rust (`--placements FILE`).
//!
//! ```toml
//! [[placement]]
//! name = "my-mixln"            # required; not a built-in preset's name or alias
//! label = "My Mix-LN"          # legends and tables (default: the name)
//! reproduces = "mixln"         # the built-in it reproduces: Monte Carlo draws its networks
//!                              # where the stacks are equal (optional)
//! equation = "..."             # free text for `normscope presets` (optional)
//! source = "..."               # free text for `normscope presets` (optional)
//! final_norm = "layer"         # norm on x_L: a `--norm` name or none (default none)
//! beta = "(4*L)^(-1/4)"        # DeepNet's init scale on the branch weights, an expression of L
//!
//! [[placement.segment]]        # the blocks l <= floor(until * L) ...
//! until = 0.25
//! after_sum = "layer"
//!
//! [[placement.segment]]        # ... and the rest (the last segment has no `until`)
//! input = "layer"              # norm on the branch input: layer, rms, batch, instance,
//!                              # group, dyt or none (default none)
//! branch_output = "none"       # norm on the branch output (default none)
//! after_sum = "none"           # norm on the sum (default none)
//! input_scale = "1"            # 1 or 1/sqrt(l) (default 1)
//! skip = "1"                   # skip scale alpha_l: an expression of l and L, or "admin"
//! branch = "1"                 # branch multiplier lambda_l: an expression of l and L
//! ```
//!
//! Expressions are parsed by `exmex` (f64 arithmetic, `^`, `sqrt`, `exp`, `log`, ...) in the
//! variables `l` (the 1-based block index) and `L` (the depth); numbers may have an exponent
//! (`1e-3`, `2.5E1`). A scale written as an
//! expression without variables whose value is 1 is structurally 1 (no symbol in `expand`);
//! any other scale that does not depend on `l` is the symbol `alpha` (`lambda`) with its value
//! at that depth; an `l`-dependent one gives each block its own value (consecutive equal blocks
//! share a segment), which the closed form and Monte Carlo take as given and `expand` refuses
//! (its `alpha` and `lambda` are one symbol each). Every value must be finite and `>= 0` at
//! every block; that is checked when a stack is built, since it depends on L. A unary minus
//! before a power (`-l^2`), which exmex reads as `(-l)^2`, is refused: write `-(l^2)`.
//!
//! A stack has one norm kind: the slots and the final norm of one placement may name one of
//! `layer`, `rms`, `batch`, `instance`, `group` or `dyt` (GroupNorm's groups come from
//! `--groups`), not two of them.

use crate::spec::{
    BlockSpec, BranchScale, InputScale, NormKind, Segment, SkipScale, Slot, StackSpec,
};
use crate::{Error, Result};
use exmex::{Express, FlatEx, FloatOpsFactory, MatchLiteral};

/// Number literals of placement expressions: exmex's (digits with at most one dot) and an
/// optional exponent, so `1e-3`, `2.5e1`, `1E3` and `.5` are numbers (exmex alone reads `1e-3`
/// as `1`, a variable `e`, `-`, `3`).
#[derive(Clone, Debug)]
struct SciNumber;

impl MatchLiteral for SciNumber {
    fn is_literal(text: &str) -> Option<&str> {
        let b = text.as_bytes();
        let digits = |mut i: usize| {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let int_end = digits(0);
        let mut end = int_end;
        if end < b.len() && b[end] == b'.' {
            end = digits(end + 1);
        }
        // At least one digit, and not a lone dot.
        if int_end == 0 && end <= 1 {
            return None;
        }
        if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
            let mut k = end + 1;
            if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                k += 1;
            }
            let exp_end = digits(k);
            if exp_end > k {
                end = exp_end;
            }
        }
        Some(&text[..end])
    }
}

/// A parsed placement expression.
type Expr = FlatEx<f64, FloatOpsFactory<f64>, SciNumber>;
use serde::Deserialize;
use std::path::Path;

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    placement: Vec<RawPlacement>,
}

/// One `[[placement]]` table as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlacement {
    name: String,
    label: Option<String>,
    equation: Option<String>,
    source: Option<String>,
    final_norm: Option<String>,
    beta: Option<String>,
    reproduces: Option<String>,
    segment: Vec<RawSegment>,
}

/// One `[[placement.segment]]` table as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSegment {
    until: Option<f64>,
    input: Option<String>,
    branch_output: Option<String>,
    after_sum: Option<String>,
    input_scale: Option<String>,
    skip: Option<String>,
    branch: Option<String>,
}

/// An expression of `l` and `L`, parsed.
#[derive(Clone, Debug)]
struct Formula {
    text: String,
    ex: Expr,
    /// Index of `l` and of `L` in the expression's variable list.
    l: Option<usize>,
    big_l: Option<usize>,
}

impl Formula {
    fn value(&self, l: usize, depth: usize) -> f64 {
        let mut vars = [0.0; 2];
        if let Some(i) = self.l {
            vars[i] = l as f64;
        }
        if let Some(i) = self.big_l {
            vars[i] = depth as f64;
        }
        let n = usize::from(self.l.is_some()) + usize::from(self.big_l.is_some());
        self.ex.eval(&vars[..n]).unwrap_or(f64::NAN)
    }

    fn depends_on_l(&self) -> bool {
        self.l.is_some()
    }

    /// Written without variables and equal to 1: structurally 1.
    fn is_one(&self) -> bool {
        self.l.is_none() && self.big_l.is_none() && self.value(1, 1).to_bits() == 1f64.to_bits()
    }
}

/// A scale: structurally 1, Admin's omega, or a formula.
#[derive(Clone, Debug)]
enum Scale {
    One,
    Admin,
    Formula(Box<Formula>),
}

/// One segment, checked.
#[derive(Clone, Debug)]
struct SegmentDef {
    until: Option<f64>,
    n_in: Slot,
    n_br: Slot,
    n_out: Slot,
    in_scale: InputScale,
    skip: Scale,
    branch: Scale,
}

/// A placement defined in a file, checked (names, slots, expressions); [`Placement::build`]
/// builds its stack at a depth.
///
/// # Examples
///
/// A placement that is Post-Norm for the first half of the blocks and Pre-Norm after:
///
/// ```rust
/// use normscope_core::placement::file::parse;
/// use normscope_core::spec::{BlockSpec, NormKind, SkipScale};
/// let text = r#"
/// [[placement]]
/// name = "half-post"
/// final_norm = "rms"
///
/// [[placement.segment]]
/// until = 0.5
/// after_sum = "rms"
///
/// [[placement.segment]]
/// input = "rms"
/// skip = "0.5"
/// "#;
/// let defs = parse(text, "inline.toml")?;
/// let p = &defs[0];
/// assert_eq!((p.name.as_str(), p.label.as_str(), p.path.as_str()), ("half-post", "half-post", "inline.toml"));
/// assert_eq!((p.norm, p.has_norm), (NormKind::Rms, true));
/// let spec = p.build(4)?;
/// assert_eq!(spec.block(2).n_out, BlockSpec::POST.n_out);
/// assert_eq!(spec.block(3).skip, SkipScale::Alpha(0.5));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Placement {
    /// Its name (the `preset` column).
    pub name: String,
    /// Its legend and table name.
    pub label: String,
    /// Free text for `normscope presets`.
    pub equation: String,
    /// Free text for `normscope presets`.
    pub source: String,
    /// The file it came from, as given.
    pub path: String,
    /// The stack's norm kind (layer if no slot normalizes).
    pub norm: NormKind,
    /// Whether some slot (or the final norm) normalizes.
    pub has_norm: bool,
    /// The built-in preset this placement is written to reproduce (`reproduces = "mixln"`):
    /// where their stacks are equal, Monte Carlo draws that preset's networks. Resolved when
    /// the file is read.
    pub reproduces: Option<&'static super::Preset>,
    raw: RawPlacement,
    final_norm: Slot,
    beta: Option<Formula>,
    segments: Vec<SegmentDef>,
}

impl PartialEq for Placement {
    /// Same definition (as written), wherever it was read from.
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

/// `floor(until * depth)` for the decimal `until` as written (its shortest round-trip
/// digits), in integer arithmetic: `until = 0.29` at L = 100 ends at block 29, where
/// `0.29 * 100.0` is 28.999999999999996 in f64. For Mix-LN's 0.25 it equals
/// `(0.25 * L as f64).floor()`.
pub fn until_block(until: f64, depth: usize) -> usize {
    let text = format!("{until}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let digits = format!("{int}{frac}");
    match (
        digits.parse::<u128>(),
        10u128.checked_pow(frac.len() as u32),
    ) {
        (Ok(num), Some(den)) => num
            .checked_mul(depth as u128)
            .map_or(depth, |p| ((p / den) as usize).min(depth)),
        _ => ((until * depth as f64).floor() as usize).min(depth),
    }
}

/// What a key's errors name: `placement "x", segment 2, skip`.
fn at(name: &str, segment: Option<usize>, key: &str) -> String {
    match segment {
        Some(i) => format!("[[placement]] \"{name}\", segment {i}: `{key}`"),
        None => format!("[[placement]] \"{name}\": `{key}`"),
    }
}

/// Parses `text` and checks every placement in it (not against the registry: see
/// [`super::load`]). `path` is for messages.
pub fn parse(text: &str, path: &str) -> Result<Vec<Placement>> {
    let fail = |message: String| Error::Config {
        path: path.to_string(),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        // The line of the error, and the key written on it (`until = "0.5"` names `until`).
        let line = e.span().map(|s| {
            let n = text[..s.start].matches('\n').count();
            let key = text
                .lines()
                .nth(n)
                .and_then(|l| l.split_once('='))
                .map(|(k, _)| k.trim())
                .filter(|k| !k.is_empty() && !k.starts_with('['))
                .map_or(String::new(), |k| format!("`{k}`: "));
            (key, format!(" (line {})", n + 1))
        });
        let (key, line) = line.unwrap_or_default();
        fail(format!(
            "{key}{}{line}",
            e.message().trim().replace('\n', " ")
        ))
    })?;
    if raw.placement.is_empty() {
        return Err(fail(
            "no [[placement]] table; each placement is one [[placement]] with at least one [[placement.segment]]".into(),
        ));
    }
    let mut out: Vec<Placement> = Vec::new();
    for p in raw.placement {
        let def = check(p).map_err(fail)?;
        if out.iter().any(|q| q.name.eq_ignore_ascii_case(&def.name)) {
            return Err(fail(format!(
                "{}: \"{}\" is defined twice in this file",
                at(&def.name, None, "name"),
                def.name
            )));
        }
        out.push(Placement {
            path: path.to_string(),
            ..def
        });
    }
    Ok(out)
}

/// Reads and parses a placement file. A missing or unreadable file, or one that is not a regular
/// file of at most [`crate::input::TEXT_CAP`] bytes, is bad input (exit 2).
pub fn read(path: &Path) -> Result<Vec<Placement>> {
    read_text(path).map(|(_, defs)| defs)
}

/// Like [`read`], returning the file's text with its placements (the text identifies the
/// file in provenance records, [`super::loaded_files`]).
pub fn read_text(path: &Path) -> Result<(String, Vec<Placement>)> {
    let shown = path.display().to_string();
    let text = crate::input::read_text(path).map_err(|why| Error::Config {
        path: shown.clone(),
        message: format!(
            "--placements: cannot read it as a UTF-8 TOML placement file of at most {} bytes: {why}",
            crate::input::TEXT_CAP
        ),
    })?;
    let defs = parse(&text, &shown)?;
    Ok((text, defs))
}

fn slot(
    name: &str,
    segment: Option<usize>,
    key: &str,
    value: &Option<String>,
    kind: &mut Option<(NormKind, String)>,
) -> std::result::Result<Slot, String> {
    let Some(v) = value else {
        return Ok(Slot::Identity);
    };
    let k = match NormKind::parse(v) {
        Some(k) if k.is_identity() => return Ok(Slot::Identity),
        Some(k) => k,
        None => {
            return Err(format!(
                "{} = \"{v}\": accepted: {}",
                at(name, segment, key),
                NormKind::names()
            ));
        }
    };
    match kind {
        Some((first, where_)) if *first != k => Err(format!(
            "{} = \"{v}\": this placement's {where_} is {first}, and a stack has one norm kind: use {first} or none here",
            at(name, segment, key)
        )),
        Some(_) => Ok(Slot::Norm),
        None => {
            let where_ = match segment {
                Some(i) => format!("segment {i} `{key}`"),
                None => format!("`{key}`"),
            };
            *kind = Some((k, where_));
            Ok(Slot::Norm)
        }
    }
}

/// The first unary minus whose operand is raised to a power (`-2^2`, `-l^2`, `-(l+1)^2`), as
/// written: exmex evaluates it as `(-a)^b`, where arithmetic means `-(a^b)`.
fn unary_minus_power(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut prev: Option<u8> = None;
    for i in 0..b.len() {
        let c = b[i];
        if c == b' ' {
            continue;
        }
        let unary = c == b'-' && prev.is_none_or(|p| b"(+-*/^,".contains(&p));
        prev = Some(c);
        if !unary {
            continue;
        }
        // The operand: a parenthesized group, or a run of name/number characters (with a
        // function call's parentheses).
        let mut j = i + 1;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'(' => depth += 1,
                b')' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                c if depth == 0 && !(c.is_ascii_alphanumeric() || c == b'.' || c == b'_') => break,
                _ => {}
            }
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k] == b' ' {
            k += 1;
        }
        if k < b.len() && b[k] == b'^' {
            let end = text[k + 1..]
                .find(|c: char| "+-*/,)".contains(c))
                .map_or(text.len(), |e| k + 1 + e);
            return Some(text[i..end].trim().to_string());
        }
    }
    None
}

fn formula(
    name: &str,
    segment: Option<usize>,
    key: &str,
    text: &str,
    allow_l: bool,
) -> std::result::Result<Formula, String> {
    let here = at(name, segment, key);
    if let Some(op) = unary_minus_power(text) {
        let body = op[1..].trim();
        return Err(format!(
            "{here} = \"{text}\": `{op}` is ambiguous (the parser binds a leading minus before `^`, so -2^2 would be 4): write -({body}) or (-{}",
            body.replacen('^', ")^", 1)
        ));
    }
    let ex =
        Expr::parse(text).map_err(|e| format!("{here} = \"{text}\": not an expression ({e})"))?;
    let (mut l, mut big_l) = (None, None);
    for (i, v) in ex.var_names().iter().enumerate() {
        match v.as_str() {
            "l" if allow_l => l = Some(i),
            "L" => big_l = Some(i),
            other => {
                let accepted = if allow_l {
                    "l (the block, 1..=L) and L (the depth)"
                } else {
                    "L (the depth): it is one value per stack"
                };
                return Err(format!(
                    "{here} = \"{text}\": unknown variable `{other}`; accepted: {accepted}"
                ));
            }
        }
    }
    Ok(Formula {
        text: text.to_string(),
        ex,
        l,
        big_l,
    })
}

fn scale(
    name: &str,
    segment: usize,
    key: &str,
    value: &Option<String>,
    admin: bool,
) -> std::result::Result<Scale, String> {
    let Some(text) = value else {
        return Ok(Scale::One);
    };
    if admin && text.trim().eq_ignore_ascii_case("admin") {
        return Ok(Scale::Admin);
    }
    let f = formula(name, Some(segment), key, text, true)?;
    Ok(if f.is_one() {
        Scale::One
    } else {
        Scale::Formula(Box::new(f))
    })
}

fn check(p: RawPlacement) -> std::result::Result<Placement, String> {
    let name = p.name.trim().to_string();
    if name.is_empty() || name.contains(',') || name.chars().any(char::is_whitespace) {
        return Err(format!(
            "[[placement]] `name` = \"{}\": accepted: a non-empty name without commas or spaces",
            p.name
        ));
    }
    if let Ok(b) = super::find_builtin(&name) {
        return Err(format!(
            "{} = \"{name}\": clashes with the built-in preset {} (names and aliases of `normscope presets` are taken)",
            at(&name, None, "name"),
            b.name
        ));
    }
    if p.segment.is_empty() {
        return Err(format!(
            "{}: at least one [[placement.segment]] is required",
            at(&name, None, "segment")
        ));
    }
    let mut kind = None;
    let final_norm = slot(&name, None, "final_norm", &p.final_norm, &mut kind)?;
    let mut segments = Vec::new();
    let mut prev = 0.0;
    let count = p.segment.len();
    for (i, s) in p.segment.iter().enumerate() {
        let n = i + 1;
        let last = n == count;
        match (s.until, last) {
            (Some(u), true) => {
                return Err(format!(
                    "{} = {u}: the last segment takes the remaining blocks and has no `until`",
                    at(&name, Some(n), "until")
                ));
            }
            (None, false) => {
                return Err(format!(
                    "{}: missing; every segment but the last needs `until`, the fraction of L it ends at (block l belongs while l <= floor(until * L))",
                    at(&name, Some(n), "until")
                ));
            }
            (Some(u), false) if !(u.is_finite() && u > prev && u < 1.0) => {
                return Err(format!(
                    "{} = {u}: accepted: a number in ({prev}, 1), above the previous segment's",
                    at(&name, Some(n), "until")
                ));
            }
            (Some(u), false) => prev = u,
            (None, true) => {}
        }
        let in_scale = match s.input_scale.as_deref().map(|t| t.replace(' ', "")) {
            None => InputScale::One,
            Some(t) if t == "1" => InputScale::One,
            Some(t) if t == "1/sqrt(l)" => InputScale::InvSqrtLayer,
            Some(t) => {
                return Err(format!(
                    "{} = \"{t}\": accepted: 1, 1/sqrt(l) (the block model has no other input scale)",
                    at(&name, Some(n), "input_scale")
                ));
            }
        };
        segments.push(SegmentDef {
            until: s.until,
            n_in: slot(&name, Some(n), "input", &s.input, &mut kind)?,
            n_br: slot(&name, Some(n), "branch_output", &s.branch_output, &mut kind)?,
            n_out: slot(&name, Some(n), "after_sum", &s.after_sum, &mut kind)?,
            in_scale,
            skip: scale(&name, n, "skip", &s.skip, true)?,
            branch: scale(&name, n, "branch", &s.branch, false)?,
        });
    }
    let beta = match &p.beta {
        Some(t) => Some(formula(&name, None, "beta", t, false)?),
        None => None,
    };
    Ok(Placement {
        label: p.label.clone().unwrap_or_else(|| name.clone()),
        equation: p.equation.clone().unwrap_or_default(),
        source: p.source.clone().unwrap_or_default(),
        path: String::new(),
        norm: kind.as_ref().map_or(NormKind::Layer, |k| k.0),
        has_norm: kind.is_some(),
        reproduces: match &p.reproduces {
            Some(r) => Some(super::find_builtin(r).map_err(|_| {
                format!(
                    "{} = \"{r}\": not a built-in preset; accepted: {}",
                    at(&name, None, "reproduces"),
                    super::REGISTRY
                        .iter()
                        .map(|b| b.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?),
            None => None,
        },
        name,
        raw: p,
        final_norm,
        beta,
        segments,
    })
}

impl Placement {
    fn fail(&self, message: String) -> Error {
        Error::Config {
            path: self.path.clone(),
            message,
        }
    }

    /// A formula's value, checked finite and `>= 0`.
    fn value(
        &self,
        f: &Formula,
        seg: Option<usize>,
        key: &str,
        l: usize,
        depth: usize,
    ) -> Result<f64> {
        let v = f.value(l, depth);
        if v.is_finite() && v >= 0.0 {
            return Ok(v);
        }
        let block = if f.depends_on_l() {
            format!("block l = {l} of L = {depth}")
        } else {
            format!("L = {depth}")
        };
        Err(self.fail(format!(
            "{} = \"{}\" is {v} at {block}; accepted: a value that is finite and >= 0 at every block",
            at(&self.name, seg, key),
            f.text
        )))
    }

    fn block(&self, i: usize, s: &SegmentDef, l: usize, depth: usize) -> Result<BlockSpec> {
        let seg = Some(i + 1);
        let skip = match &s.skip {
            Scale::One => SkipScale::One,
            Scale::Admin => SkipScale::AdminOmega,
            Scale::Formula(f) => SkipScale::Alpha(self.value(f, seg, "skip", l, depth)?),
        };
        let lambda = match &s.branch {
            Scale::One | Scale::Admin => BranchScale::One,
            Scale::Formula(f) => BranchScale::Lambda(self.value(f, seg, "branch", l, depth)?),
        };
        Ok(BlockSpec {
            n_in: s.n_in,
            in_scale: s.in_scale,
            n_br: s.n_br,
            n_out: s.n_out,
            skip,
            lambda,
        })
    }

    /// The stack at depth `depth >= 1`. Segment k holds the blocks
    /// `floor(until_{k-1} L) < l <= floor(until_k L)` (as Mix-LN's switch `floor(0.25 L)` is
    /// computed); empty segments are skipped and consecutive equal blocks merged.
    pub fn build(&self, depth: usize) -> Result<StackSpec> {
        let mut segments: Vec<Segment> = Vec::new();
        let mut push = |last: usize, block: BlockSpec| match segments.last_mut() {
            Some(s) if s.block == block => s.last = last,
            _ => segments.push(Segment { last, block }),
        };
        let mut first = 1;
        for (i, s) in self.segments.iter().enumerate() {
            let end = match s.until {
                Some(u) => until_block(u, depth),
                None => depth,
            };
            if end < first {
                continue;
            }
            let per_block = [&s.skip, &s.branch]
                .iter()
                .any(|x| matches!(x, Scale::Formula(f) if f.depends_on_l()));
            if per_block {
                for l in first..=end {
                    push(l, self.block(i, s, l, depth)?);
                }
            } else {
                push(end, self.block(i, s, first, depth)?);
            }
            first = end + 1;
        }
        let beta = match &self.beta {
            Some(f) => Some(self.value(f, None, "beta", 1, depth)?),
            None => None,
        };
        Ok(StackSpec {
            preset: self.name.clone(),
            label: self.label.clone(),
            file: Some(self.path.clone()),
            depth,
            segments,
            final_norm: self.final_norm,
            beta,
            norm: self.norm,
            layout: crate::spec::NormLayout::default(),
            seed_as: None,
        })
    }
}
