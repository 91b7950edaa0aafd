//! The command line a manifest records (`invocation`), read back into its arguments: words
//! separated by one space, a word with a space, quote or backslash (or an empty one) written
//! as a Rust string literal, as `crate::runner::manifest::invocation_of` writes them.

/// The character of the escape after a `\` in a quoted word (`n`, `t`, `r`, `0`, `\`, `"`,
/// `'`, `u{...}`), reading it from `chars`.
fn escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    Some(match chars.next()? {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        c @ ('\\' | '"' | '\'') => c,
        'u' => {
            if chars.next()? != '{' {
                return None;
            }
            let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        _ => return None,
    })
}

/// The words of `line`, or `None` if it is not a command line as manifests record them.
fn words(line: &str) -> Option<Vec<String>> {
    let mut chars = line.chars().peekable();
    let mut out = Vec::new();
    loop {
        let mut word = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => word.push(escape(&mut chars)?),
                    c => word.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                match c {
                    ' ' => break,
                    '"' | '\\' => return None,
                    _ => word.push(c),
                }
                chars.next();
            }
            if word.is_empty() {
                return None;
            }
        }
        out.push(word);
        match chars.next() {
            None => return Some(out),
            Some(' ') => {}
            Some(_) => return None,
        }
    }
}

/// The arguments after `normscope` of a recorded command line (`reproduce` for the bare
/// `normscope` earlier versions recorded), or `None` if `line` is not one. Only `reproduce`
/// writes an analysis's outputs, so a line of any other subcommand (which a forged manifest
/// could name to write elsewhere) is not one.
pub(super) fn arguments(line: &str) -> Option<Vec<String>> {
    let mut words = words(line)?;
    if words.first().map(String::as_str) != Some("normscope") {
        return None;
    }
    words.remove(0);
    if words.is_empty() {
        words.push("reproduce".into());
    }
    (words[0] == "reproduce").then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::manifest::invocation_of;

    #[test]
    fn recorded_lines_read_back_into_their_arguments() {
        for args in [
            &[
                "reproduce",
                "--quick",
                "--config",
                "c;touch${IFS}PWNED;#.toml",
            ][..],
            &["reproduce", "--config", "my file.toml", "--seed", "3"],
            &["reproduce", "--config", "a\"b\\c'd", ""],
            &["reproduce", "--config", "line\nbreak\u{1b}"],
        ] {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let line = invocation_of(args.clone());
            assert_eq!(arguments(&line), Some(args), "{line}");
        }
        assert_eq!(arguments("normscope"), Some(vec!["reproduce".to_string()]));
        // Another subcommand is not an analysis's line (it could write anywhere).
        assert_eq!(arguments("normscope train --out /home/u/.bashrc"), None);
    }

    #[test]
    fn other_lines_are_refused() {
        for line in [
            "",
            "sh -c x",
            "normscope  reproduce",
            "normscope reproduce ",
            "normscope \"unterminated",
            "normscope \"a\"b",
            "normscope a\\b",
            "normscope \"\\q\"",
        ] {
            assert_eq!(arguments(line), None, "{line:?}");
        }
    }
}
