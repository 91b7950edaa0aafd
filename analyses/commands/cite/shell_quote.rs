//! POSIX shell quoting, for the `regenerate:` line that `cite` prints: a word made only of
//! characters no shell treats specially (`[A-Za-z0-9_@%+=:,./-]`, not starting with `=`,
//! which zsh expands to a command's path) is left as it is; every
//! other word, the empty one included, goes in single quotes, inside which a POSIX shell
//! expands nothing (`$( )`, backticks, `${IFS}`, `;`, `#`, `"` and `\` are plain characters),
//! with each `'` written `'\''` (close the quotes, an escaped quote, reopen them).

/// Whether `c` may stand unquoted in a shell word.
fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// `arg` as one POSIX shell word that the shell reads back as exactly `arg`.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::cite::shell_quote::quote;
/// assert_eq!(quote("--only"), "--only");
/// assert_eq!(quote("c;touch${IFS}PWNED;#.toml"), "'c;touch${IFS}PWNED;#.toml'");
/// assert_eq!(quote("it's"), r"'it'\''s'");
/// assert_eq!(quote(""), "''");
/// assert_eq!(quote("=ls"), "'=ls'");
/// ```
pub fn quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.starts_with('=') && arg.chars().all(safe) {
        return arg.to_string();
    }
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// `args` as shell words ([`quote`]), separated by spaces.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::commands::cite::shell_quote::join;
/// let line = join(&["reproduce", "--config", "my file.toml", "$(id)"]);
/// assert_eq!(line, "reproduce --config 'my file.toml' '$(id)'");
/// ```
pub fn join<S: AsRef<str>>(args: &[S]) -> String {
    args.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}
