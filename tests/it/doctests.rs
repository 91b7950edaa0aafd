//! Every public type of the four library crates shows its use in a doc-test (an example that
//! `cargo test` compiles and runs).

use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    crate::common::files_with_ext(dir, "rs")
}

/// `(rel:Name, has a doc-test)` for every `pub struct|enum|trait|type` of `text` before its
/// first `#[cfg(test)]`, macro bodies included (a type named by a macro variable, `$Name`, is
/// skipped: its invocations are scanned). A doc-test is a fenced block in the item's `///`
/// lines, above its attributes, that is not marked `text` (or `ignore`).
fn scan(rel: &str, text: &str) -> Vec<(String, bool)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let t = line.trim_start();
        let name = ["pub struct ", "pub enum ", "pub trait ", "pub type "]
            .iter()
            .find_map(|k| t.strip_prefix(k));
        let Some(name) = name else { continue };
        let name: String = name
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        let mut doc = Vec::new();
        let mut j = i;
        while j > 0 {
            j -= 1;
            let l = lines[j].trim_start();
            if l.starts_with("///") || l.starts_with("#[") {
                doc.push(l);
            } else if l.ends_with(")]") {
                // The last line of an attribute over several lines: skip to its `#[`.
                while j > 0 && !lines[j].trim_start().starts_with("#[") {
                    j -= 1;
                }
            } else {
                break;
            }
        }
        // Fences alternate opening and closing; only an opening fence names its language.
        let mut open = false;
        let mut has = false;
        for d in doc.iter().rev().filter_map(|l| l.strip_prefix("///")) {
            let d = d.trim();
            if let Some(info) = d.strip_prefix("```") {
                if !open && !info.contains("text") && !info.contains("ignore") {
                    has = true;
                }
                open = !open;
            }
        }
        out.push((format!("{rel}:{name}"), has));
    }
    out
}

/// [`scan`] of every source file of the numeric, core, figure and analyses crates.
fn public_types() -> Vec<(String, bool)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        "crates/numeric/src",
        "crates/core/src",
        "crates/figure/src",
        "analyses",
    ] {
        for f in sources(&root.join(dir)) {
            let text = std::fs::read_to_string(&f).unwrap();
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            out.extend(scan(&rel, &text));
        }
    }
    out
}

#[test]
fn every_public_type_has_a_doc_test() {
    let types = public_types();
    assert!(types.len() > 250, "the scan found {} types", types.len());
    let missing: Vec<&str> = types
        .iter()
        .filter(|(_, has)| !has)
        .map(|(t, _)| t.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "public types without a doc-test: {missing:#?}"
    );
}

#[test]
fn the_scan_tells_examples_from_their_absence() {
    let text = r#"
/// Has one.
///
/// ```rust
/// assert_eq!(1 + 1, 2);
/// ```
#[derive(
    Clone, Debug,
)]
#[serde(rename_all = "lowercase")]
pub enum Shown {}

/// Only text.
///
/// ```text
/// x = 1
/// ```
pub struct Prose;

pub(crate) struct Private;

macro_rules! make {
    ($Name:ident) => {
        /// Made.
        pub struct $Name;
        /// A concrete type in a macro body.
        pub struct Concrete;
    };
}

pub trait Bare {}

#[cfg(test)]
pub struct InTests;
"#;
    let got = scan("f.rs", text);
    let want = [
        ("f.rs:Shown", true),
        ("f.rs:Prose", false),
        ("f.rs:Concrete", false),
        ("f.rs:Bare", false),
    ];
    let got: Vec<(&str, bool)> = got.iter().map(|(t, h)| (t.as_str(), *h)).collect();
    assert_eq!(got, want);
}
