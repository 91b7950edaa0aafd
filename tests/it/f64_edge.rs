//! No wrong number at f64's edge: at gains, input moments, skip scales and branch
//! multipliers near f64's limits, every value the closed form writes is right, and every value
//! whose true result is beyond f64 is a missing cell with its reason.
//!
//! Two checks that need no reference table:
//!
//! - for linear branches, `output_change = eff_depth` exactly behind a final norm (docs/theory.md
//!   section 5: the output's first-order change per relative weight perturbation is the mean
//!   path length when every branch is linear; without a final norm, as in ReZero, it is
//!   `eff_depth q_l`), so rows computed by different recursions must agree;
//! - `merge_error` of a linear branch has a closed form in the stream's second moments, computed
//!   here independently in log space: behind a norm (Pre-LN) `2 (1 - cos_l)` with
//!   `cos_l^2 = alpha^2 q_{l-1} / q_l`, `q_l = alpha^2 q_{l-1} + lambda^2 g`; without one
//!   (ReZero with a multiplier lambda) `((alpha - 1)^2 + lambda^2 g) / (alpha^2 + lambda^2 g)`.

use crate::common::*;
use normscope::model::{RawModel, TheoryConfig};
use normscope::placement::REGISTRY;
use normscope::tables;
use normscope::theory::logsum::ln_add;
use proptest::prelude::*;
use std::collections::HashMap;

/// f64's unit roundoff.
const EPS: f64 = f64::EPSILON / 2.0;

/// `output_change` against `eff_depth` at layer l, relative. Both are sums over l blocks of
/// positive terms, each formed by a handful of roundings (`SplitPaths::push_mean`'s compensated
/// sum; the tangent recursion's `a^2 O + b^2 O + p`, one rounding per operation at any
/// exponent), so each is within about `4 l` roundings of the exact value: `2 * 4 l 2^-53`
/// (3.6e-14 at l = 40, 8.9e-13 at l = 1000).
fn identity_rel(l: u64) -> f64 {
    2.0 * 4.0 * l.max(1) as f64 * EPS
}

/// The ten built-in presets, comma-separated.
fn all_presets() -> String {
    REGISTRY
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(",")
}

/// One CSV row of a `theory` run: preset, layer, metric, value (None when missing), reason.
#[derive(Debug)]
struct Cell {
    preset: String,
    layer: u64,
    metric: String,
    value: Option<f64>,
    missing: String,
}

/// The fields of a CSV line (quoted fields may hold commas and doubled quotes).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The rows of a `theory` CSV.
fn cells(csv: &str) -> Vec<Cell> {
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("a header"));
    let col = |n: &str| header.iter().position(|h| h == n).expect(n);
    let (p, l, m, v, r) = (
        col("preset"),
        col("layer"),
        col("metric"),
        col("value"),
        col("missing"),
    );
    lines
        .map(|line| {
            let f = fields(line);
            let value = (!f[v].is_empty()).then(|| f[v].parse::<f64>().expect("a number"));
            assert!(value.is_none_or(f64::is_finite), "{line}");
            assert_eq!(value.is_none(), !f[r].is_empty(), "{line}");
            Cell {
                preset: f[p].clone(),
                layer: f[l].parse().expect("a layer"),
                metric: f[m].clone(),
                value,
                missing: f[r].clone(),
            }
        })
        .collect()
}

/// Runs `theory` on every preset with `eff_depth,output_change,stream_sq` at every layer.
fn identity_run(depth: &str, extra: &[&str]) -> Vec<Cell> {
    let presets = all_presets();
    let mut args = vec![
        "theory",
        "--preset",
        &presets,
        "--metrics",
        "eff_depth,output_change,stream_sq",
        "--depth",
        depth,
        "--layers",
        "all",
    ];
    args.extend_from_slice(extra);
    cells(&success_stdout(&normscope(&args)))
}

/// A written value, or the first word of the reason it is missing (`underflow:`, ...).
type Written = Result<f64, String>;

/// One cell as [`Written`].
fn written(value: Option<f64>, missing: &str) -> Written {
    value.ok_or_else(|| missing.split_whitespace().next().unwrap_or("").to_string())
}

/// `ln` of a stream's second moment from its cell: the value, or the exponent its reason gives
/// (`e^-708.5 = ...`, to 0.05).
fn ln_of(w: &Written, reason: &str) -> Option<f64> {
    match w {
        Ok(v) => Some(v.ln()),
        Err(_) => reason
            .split("e^")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok(),
    }
}

/// The identity at one layer: `eff_depth` and `output_change / s` (s = `q_l` without a final
/// norm, given as its log `ln_s`; else 1) both written and equal within [`identity_rel`] (and a
/// mean path length in `[0, l]`), or both missing for the same kind of reason, or a written
/// `eff_depth` whose product with `q_l` is beyond f64 (more than 0.1 in the log, as `ln_s`
/// may come from a reason) where `output_change` is missing.
fn identity_holds(e: &Written, o: &Written, l: u64, ln_s: Option<f64>) -> Result<(), String> {
    let in_path_range = |e: f64| (0.0..=l as f64).contains(&e);
    let (lo, hi) = (f64::MIN_POSITIVE.ln(), f64::MAX.ln());
    match (e, o, ln_s) {
        (Ok(e), Ok(o), Some(ln_s)) => {
            let o = if ln_s == 0.0 {
                *o
            } else {
                (o.ln() - ln_s).exp()
            };
            // Without a final norm the quotient by q_l adds an exp and a log of size |ln q_l|.
            let tol = identity_rel(l) + 4.0 * EPS * (ln_s.abs() + 1.0);
            if (e - o).abs() <= tol * e.abs() && in_path_range(*e) {
                Ok(())
            } else {
                Err(format!("eff_depth {e:e} output_change / q_l {o:e}"))
            }
        }
        (Err(a), Err(b), _) if a == b => Ok(()),
        (Ok(e), Err(why), Some(ln_s)) if in_path_range(*e) => {
            let ln_o = e.ln() + ln_s;
            let over = why == "overflow:" && ln_o > hi + 0.1;
            let under = why == "underflow:" && ln_o < lo - 0.1;
            if over || under {
                Ok(())
            } else {
                Err(format!(
                    "eff_depth {e:e} (ln q_l {ln_s}) but output_change {why}"
                ))
            }
        }
        _ => Err(format!(
            "eff_depth {e:?} output_change {o:?} ln q_l {ln_s:?}"
        )),
    }
}

/// Whether preset p has a final norm (then `output_change = eff_depth`).
fn has_final_norm(p: &str, raw: &RawModel) -> bool {
    raw.check()
        .unwrap()
        .stack(normscope::placement::find(p).unwrap())
        .unwrap()
        .final_norm
        .is_norm()
}

/// Every (preset, layer) pair has both metrics, and the identity holds; returns the number of
/// pairs where both are written.
fn assert_identity(rows: &[Cell], depth: u64, what: &str) -> usize {
    type Three = (Option<Written>, Option<Written>, Option<f64>);
    let mut by_key: HashMap<(&str, u64), Three> = HashMap::new();
    for c in rows {
        let e = by_key.entry((&c.preset, c.layer)).or_default();
        let w = written(c.value, &c.missing);
        match c.metric.as_str() {
            "eff_depth" => e.0 = Some(w),
            "output_change" => e.1 = Some(w),
            "stream_sq" if has_final_norm(&c.preset, &RawModel::default()) => e.2 = Some(0.0),
            "stream_sq" => e.2 = ln_of(&w, &c.missing),
            m => panic!("{what}: unexpected metric {m}"),
        }
    }
    assert_eq!(
        by_key.len(),
        REGISTRY.len() * (depth as usize + 1),
        "{what}"
    );
    let mut both = 0;
    for ((p, l), (e, o, ln_s)) in &by_key {
        let (e, o) = (
            e.as_ref().expect("eff_depth"),
            o.as_ref().expect("output_change"),
        );
        if let Err(why) = identity_holds(e, o, *l, *ln_s) {
            panic!("{what}: {p} layer {l}: {why}");
        }
        both += usize::from(e.is_ok() && o.is_ok());
    }
    both
}

/// The reported runs: every layer of every preset satisfies the identity.
#[test]
fn reported_identity_runs_agree_at_every_layer() {
    let cases: [(&str, &[&str]); 7] = [
        ("16", &["--gain", "3e307"]),
        ("16", &["--gain", "1.7e308"]),
        ("16", &["--q0", "5e307"]),
        ("16", &["--q0", "1.7e308"]),
        ("16", &["--lambda", "1e154"]),
        ("1000", &["--gain", "1e306"]),
        ("1000", &["--q0", "1e307"]),
    ];
    for (depth, extra) in cases {
        let rows = identity_run(depth, extra);
        let what = format!("--depth {depth} {}", extra.join(" "));
        let depth: u64 = depth.parse().unwrap();
        // Most pairs are written (layer 0 is a true 0; only shares below f64's range are not).
        let both = assert_identity(&rows, depth, &what);
        assert!(
            2 * both > REGISTRY.len() * depth as usize,
            "{what}: {both} written"
        );
    }
}

/// `ln cos_l` of Pre-LN's layer l in log space: `q_l = alpha^2 q_{l-1} + lambda^2 g`, and
/// `ln(1 - cos_l)` and `ln cos` are returned through `t = ln(lambda^2 g / (alpha^2 q_{l-1}))`.
struct PreStream {
    ln_q: f64,
    ln_skip: f64,
    ln_branch: f64,
}

impl PreStream {
    fn new(q0: f64, g: f64, alpha: f64, lambda: f64) -> Self {
        PreStream {
            ln_q: q0.ln(),
            ln_skip: 2.0 * alpha.ln(),
            ln_branch: 2.0 * lambda.ln() + g.ln(),
        }
    }

    /// Advances one block and returns `ln merge_error` of the new layer,
    /// `ln 2 + ln(-expm1(d/2))` with `d = ln cos^2 = -ln(1 + e^t)`, and an error bound on it
    /// (absolute, in the log): the roundings of `t`, whose logs are of size `|ln_skip + ln_q|`.
    fn step(&mut self) -> (f64, f64) {
        let ln_prev = self.ln_skip + self.ln_q;
        let t = self.ln_branch - ln_prev;
        let d = -ln_add(0.0, t);
        self.ln_q = ln_add(ln_prev, self.ln_branch);
        let ln_merge = std::f64::consts::LN_2 + (-(d / 2.0).exp_m1()).ln();
        let err = 8.0 * EPS * (self.ln_branch.abs() + ln_prev.abs() + 1.0);
        (ln_merge, err)
    }
}

/// ReZero's `ln merge_error` with a multiplier: the same at every layer.
fn rezero_ln_merge(g: f64, alpha: f64, lambda: f64) -> (f64, f64) {
    let ln_branch = 2.0 * lambda.ln() + g.ln();
    let ln_merge =
        ln_add(2.0 * (alpha - 1.0).abs().ln(), ln_branch) - ln_add(2.0 * alpha.ln(), ln_branch);
    let err = 8.0 * EPS * (ln_branch.abs() + 2.0 * alpha.ln().abs() + 1.0);
    (ln_merge, err)
}

/// The engine's merge error of a linear branch rounds `K(a,a) + K(b,b) - 2 K(a,b)` in plain f64
/// while it cancels by at most 2^20 (the condition `(K(a,a) + K(b,b)) / num`), a few roundings
/// times that condition; beyond, the difference route, a few roundings.
fn engine_rel(cond: f64) -> f64 {
    8.0 * EPS * cond.min((1u64 << 20) as f64)
}

/// Checks one written-or-missing merge error against `ln_merge` (error bound `err`, in the log,
/// plus `engine` relative): written and close where in range, missing with the reason's
/// direction where beyond; cases within the bounds of f64's edge are not judged.
fn check_merge(got: &Option<f64>, missing: &str, ln_merge: f64, err: f64, engine: f64, what: &str) {
    let (lo, hi) = (f64::MIN_POSITIVE.ln(), f64::MAX.ln());
    let slack = err + engine + 1e-9;
    if ln_merge > hi + slack {
        assert!(
            got.is_none() && missing.starts_with("overflow"),
            "{what}: {got:?} {missing}"
        );
    } else if ln_merge < lo - slack {
        assert!(
            got.is_none() && missing.starts_with("underflow"),
            "{what}: {got:?} {missing}"
        );
    } else if ln_merge < hi - slack && ln_merge > lo + slack {
        let v = got.unwrap_or_else(|| panic!("{what}: missing ({missing}), expected e^{ln_merge}"));
        let rel = (v.ln() - ln_merge).abs();
        assert!(
            rel <= err + engine + 4.0 * EPS,
            "{what}: got {v:e}, expected e^{ln_merge} = {:e} (|ln ratio| {rel:e})",
            ln_merge.exp()
        );
    }
}

/// Closed-form cells by (metric, layer): the value (None when missing) and the reason.
type Cells = HashMap<(String, u64), (Option<f64>, String)>;

/// The closed-form rows of one preset: (metric, layer) -> (value, reason). A numerical error
/// (the CLI writes every cell of the preset as missing with it) is returned as such.
fn rows_of(preset: &str, raw: &RawModel, metrics: &str) -> Result<Cells, String> {
    let cfg = TheoryConfig::new(preset, raw, metrics, "all").expect("valid config");
    let rows = match tables::theory_rows(&cfg, &mut Vec::new()) {
        Ok(rows) => rows,
        Err(e) if e.is_numerical() => return Err(e.to_string()),
        Err(e) => panic!("{preset} {raw:?}: {e}"),
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            let v = r.missing.is_none().then_some(r.value);
            (
                (r.metric.to_string(), r.layer),
                (v, r.missing.unwrap_or_default()),
            )
        })
        .collect())
}

/// A number `10^e` with the exponent uniform over f64's range.
fn decade() -> impl Strategy<Value = f64> {
    (-300.0f64..308.0).prop_map(|e| 10f64.powf(e))
}

#[test]
fn reported_merge_errors() {
    // Pre-LN at g = 1.7e308, layer 2: 2 - 2 cos with cos^2 = (1 + g)/(1 + 2g).
    let out = success_stdout(&normscope(&[
        "theory",
        "--preset",
        "pre",
        "--depth",
        "4",
        "--gain",
        "1.7e308",
        "--metrics",
        "merge_error",
        "--layers",
        "2",
    ]));
    let rows = cells(&out);
    assert_eq!(rows.len(), 1, "{out}");
    let mut s = PreStream::new(1.0, 1.7e308, 1.0, 1.0);
    s.step();
    let (ln_merge, err) = s.step();
    check_merge(
        &rows[0].value,
        &rows[0].missing,
        ln_merge,
        err,
        engine_rel(4.0 / ln_merge.exp()),
        "pre g=1.7e308",
    );
    assert!(rows[0].value.is_some());
    // ReZero scaled by alpha = 1e-155: (1 - 1/alpha)^2 ~ 1e310 is beyond f64.
    let out = success_stdout(&normscope(&[
        "theory",
        "--preset",
        "rezero",
        "--depth",
        "4",
        "--alpha",
        "1e-155",
        "--metrics",
        "merge_error",
        "--layers",
        "1",
    ]));
    let rows = cells(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert!(
        rows[0].value.is_none() && rows[0].missing.starts_with("overflow"),
        "{out}"
    );
}

proptest! {
    #![proptest_config(crate::common::proptest_config(96, 33))]

    /// Over the whole representable range of gain, q0, alpha and lambda, every preset's
    /// `output_change` equals its `eff_depth` at every layer, or both are missing.
    #[test]
    fn output_change_is_eff_depth_at_any_scale(
        p in 0..REGISTRY.len(), depth in 1usize..40, g in decade(), q0 in decade(),
        alpha in proptest::option::of(decade()), lambda in proptest::option::of(decade()),
    ) {
        let raw = RawModel { depth, gain: Some(g), q0, alpha, lambda, ..RawModel::default() };
        let preset = REGISTRY[p].name;
        // A stack that is identically zero (x_1 = 0 at alpha = 0) has no values at all.
        let Ok(t) = rows_of(preset, &raw, "eff_depth,output_change,stream_sq") else { return Ok(()) };
        let normed = has_final_norm(preset, &raw);
        for l in 0..=depth as u64 {
            let (e, er) = &t[&("eff_depth".to_string(), l)];
            let (o, or) = &t[&("output_change".to_string(), l)];
            let (s, sr) = &t[&("stream_sq".to_string(), l)];
            let ln_s = if normed { Some(0.0) } else { ln_of(&written(*s, sr), sr) };
            let check = identity_holds(&written(*e, er), &written(*o, or), l, ln_s);
            prop_assert!(check.is_ok(), "{preset} l={l} {raw:?}: {check:?} ({er} / {or})");
        }
    }

    /// Pre-LN's merge error at any scale: its closed form in log space, or missing exactly when
    /// that is beyond f64.
    #[test]
    fn pre_merge_error_matches_log_space(
        depth in 2usize..20, g in decade(), q0 in decade(), alpha in decade(), lambda in decade(),
    ) {
        let raw = RawModel { depth, gain: Some(g), q0, alpha: Some(alpha), lambda: Some(lambda), ..RawModel::default() };
        let t = rows_of("pre", &raw, "merge_error").expect("a stack with a branch");
        let mut s = PreStream::new(q0, g, alpha, lambda);
        for l in 1..depth as u64 {
            let (ln_merge, err) = s.step();
            let (v, why) = &t[&("merge_error".to_string(), l)];
            let m = ln_merge.exp();
            check_merge(v, why, ln_merge, err, engine_rel((4.0 - m) / m), &format!("pre l={l} {raw:?}"));
        }
    }

    /// ReZero's merge error with a branch multiplier at any scale, likewise.
    #[test]
    fn rezero_merge_error_matches_log_space(
        g in decade(), alpha in decade(), lambda in decade(), q0 in decade(),
    ) {
        let raw = RawModel { depth: 3, gain: Some(g), q0, alpha: Some(alpha), lambda: Some(lambda), ..RawModel::default() };
        let t = rows_of("rezero", &raw, "merge_error").expect("a stack with a branch");
        let (ln_merge, err) = rezero_ln_merge(g, alpha, lambda);
        // Plain route's terms: 1 + ratio + 2 alpha ratio over the result, ratio = q_{l-1}/q_l.
        let ln_ratio = -ln_add(2.0 * alpha.ln(), 2.0 * lambda.ln() + g.ln());
        let cond = (1.0 + ln_ratio.exp() * (1.0 + 2.0 * alpha)) / ln_merge.exp();
        for l in 1..3u64 {
            let (v, why) = &t[&("merge_error".to_string(), l)];
            check_merge(v, why, ln_merge, err, engine_rel(cond), &format!("rezero l={l} {raw:?}"));
        }
    }
}
