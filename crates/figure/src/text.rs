//! The text a figure draws: ASCII math in labels turned into Unicode ([`math`]), and compact
//! tick labels ([`tick`]).

/// Unicode for the ASCII math in labels: `||x||` to `‖x‖`, ` - ` to ` − `, `^2` to `²` (not
/// in `^20`), and the whole words `alpha`, `beta`, `lambda`, `sqrt` to `α`, `β`, `λ`, `√` (not
/// inside other words).
pub fn math(text: &str) -> String {
    let mut s = text.replace("||", "‖").replace(" - ", " − ");
    s = replace_where(&s, "^2", "²", |_, after| {
        !after.is_some_and(|c| c.is_ascii_digit())
    });
    for (word, symbol) in [
        ("alpha", "α"),
        ("beta", "β"),
        ("lambda", "λ"),
        ("sqrt", "√"),
        ("pi", "π"),
    ] {
        s = replace_where(&s, word, symbol, |before, after| {
            !before.is_some_and(char::is_alphabetic) && !after.is_some_and(char::is_alphabetic)
        });
    }
    subscripts(&s)
}

/// The Unicode subscript of `c`, where DejaVu Sans has one.
fn subscript(c: char) -> Option<char> {
    const FROM: &str = "0123456789+-=()aeoxhklmnpstj";
    const TO: &str = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜⱼ";
    FROM.chars()
        .position(|f| f == c)
        .and_then(|i| TO.chars().nth(i))
}

/// `x_{t-1}` as `xₜ₋₁` and `x_0` as `x₀` where every character has a subscript; others (`x_L`)
/// stay as written.
fn subscripts(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '_' && i > 0 && chars[i - 1].is_alphanumeric() {
            if chars.get(i + 1) == Some(&'{')
                && let Some(len) = chars[i + 2..].iter().position(|&c| c == '}')
            {
                let inner = &chars[i + 2..i + 2 + len];
                if let Some(sub) = inner
                    .iter()
                    .map(|&c| subscript(c))
                    .collect::<Option<String>>()
                {
                    out.push_str(&sub);
                    i += len + 3;
                    continue;
                }
            } else if let Some(&c) = chars.get(i + 1)
                && !chars.get(i + 2).is_some_and(|n| n.is_alphanumeric())
                && let Some(sub) = subscript(c)
            {
                out.push(sub);
                i += 2;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// `text` with each `from` replaced by `to` where `ok(char before, char after)` holds.
fn replace_where(
    text: &str,
    from: &str,
    to: &str,
    ok: impl Fn(Option<char>, Option<char>) -> bool,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(from) {
        let before = text[..i].chars().next_back();
        let after = text[i + from.len()..].chars().next();
        if i >= last && ok(before, after) {
            out.push_str(&text[last..i]);
            out.push_str(to);
            last = i + from.len();
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Compact tick text: `1e6` style outside [0.01, 10^4), trailing `.0` dropped inside.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(0.01..10_000.0).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        if (m.abs() - 1.0).abs() < 1e-9 {
            format!("{}1e{e}", if v < 0.0 { "-" } else { "" })
        } else {
            format!("{m:.1}e{e}")
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
