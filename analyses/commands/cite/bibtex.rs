//! The BibTeX entry of a citation. Every value is written so that the entry stays one entry
//! with its fields: BibTeX counts braces whatever precedes them, so a brace is escaped as
//! `\textbraceleft{}`/`\textbraceright{}` (not `\{`, which would leave the field's braces
//! unbalanced), a backslash as `\textbackslash{}`, LaTeX's other special characters with a
//! backslash, and a control character as its visible escape first: values are escaped, never
//! refused.

use super::{CITATION_TITLE, CITATION_YEAR};
use crate::commands::visible::visible;
use crate::runner::manifest::sha256;

/// `text` with BibTeX's and LaTeX's special characters escaped (see the module docs).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::new();
    for ch in visible(text).chars() {
        match ch {
            '_' | '%' | '&' | '#' | '$' => {
                out.push('\\');
                out.push(ch);
            }
            '{' => out.push_str("\\textbraceleft{}"),
            '}' => out.push_str("\\textbraceright{}"),
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '\\' => out.push_str("\\textbackslash{}"),
            _ => out.push(ch),
        }
    }
    out
}

/// What one entry cites.
pub(super) struct Cited<'a> {
    /// The commit (40 hexadecimal digits), if the manifest records one.
    pub commit: Option<&'a str>,
    /// The crate version (a checked semantic version).
    pub version: &'a str,
    /// The file, and the column and row of a table's number.
    pub what: &'a str,
    /// Why the file is not as its commit wrote it (`--allow-changed`), if it is not.
    pub modified: Option<&'a str>,
}

impl Cited<'_> {
    /// The entry: one key per cited number (the commit and a hash of what is cited), the note
    /// naming the commit, what is cited and, for a changed file, that it was modified.
    pub(super) fn entry(&self) -> String {
        let commit = self.commit.unwrap_or("unknown");
        let short: String = commit.chars().take(7).collect();
        let tag: String = sha256(self.what.as_bytes()).chars().take(6).collect();
        let modified = self
            .modified
            .map(|why| format!("; MODIFIED after the commit: {}", escape(why)))
            .unwrap_or_default();
        format!(
            "@software{{normscope_{short}_{tag},\n  author  = {{{{The normscope developers}}}},\n  title   = {{{CITATION_TITLE}}},\n  version = {{{}}},\n  year    = {{{CITATION_YEAR}}},\n  note    = {{Commit {commit}; {}{modified}}}\n}}\n",
            escape(self.version),
            escape(self.what),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_values_stay_inside_their_field() {
        let what = "data/x/t.csv, value at a=0.1.0},\ntitle = {PWNED \\ {";
        let entry = Cited {
            commit: Some(&"a".repeat(40)),
            version: "0.1.0",
            what,
            modified: Some("its sha256 differs from the manifest's"),
        }
        .entry();
        // As many braces close as open (the integration tests check their order too).
        assert_eq!(
            entry.matches('{').count(),
            entry.matches('}').count(),
            "{entry}"
        );
        assert_eq!(entry.lines().count(), 7, "{entry}");
        assert!(
            !entry
                .lines()
                .any(|l| l.trim_start().starts_with("title = {PWNED"))
        );
        assert!(
            entry.contains("\\textbraceright{},\\textbackslash{}ntitle"),
            "{entry}"
        );
        assert!(entry.contains("MODIFIED after the commit"), "{entry}");
    }
}
