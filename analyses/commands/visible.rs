//! Values from files and manifests printed one to a line and as they are: a control character
//! (a newline, an escape), a line or paragraph separator (U+2028, U+2029: a new line to some
//! terminals and editors), a zero-width or invisible character (U+200B-U+200D, U+2060,
//! U+FEFF, the tag characters U+E0000-U+E007F: they hide text) or a bidirectional formatting
//! character (which reorders what a terminal shows) is written as its Rust escape, `\n` or
//! `\u{202e}`, so no value can start a line of its own or hide its text. `cite` prints every
//! value so; `plot` and `cite` print a table's column names so in their errors.

/// Whether `c` would change how the report reads rather than show as a character.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'
                | '\u{feff}'
                | '\u{e0000}'..='\u{e007f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [`hidden`] character escaped.
pub fn visible(text: impl std::fmt::Display) -> String {
    let text = text.to_string();
    if !text.chars().any(hidden) {
        return text;
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_escapes_and_bidi_controls_are_escaped() {
        assert_eq!(visible("a\nb"), "a\\nb");
        assert_eq!(visible("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(visible("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(visible("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
        assert_eq!(
            visible("p\u{200b}x\u{feff}\u{e0041}"),
            "p\\u{200b}x\\u{feff}\\u{e0041}"
        );
        assert_eq!(visible("data/norms/été.csv"), "data/norms/été.csv");
    }
}
