//! No unused dependency, in the manner of `cargo machete`: every crate a package lists under
//! `[dependencies]` is named in that package's library or binary code (`name::`, `use name`,
//! `name!`, `extern crate name`), and every `[dev-dependencies]` entry in its code, tests,
//! benches or doc-tests. Names are compared as Rust spells them (`-` read as `_`); an entry
//! listed only to set a feature of the build is allowed by name below, with its reason.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each package's folder, the folders of its library and binary code, and the folders its
/// dev-dependencies may be used from besides those.
const PACKAGES: [(&str, &[&str], &[&str]); 7] = [
    ("crates/numeric", &["src"], &[]),
    ("crates/core", &["src"], &[]),
    ("crates/figure", &["src"], &[]),
    ("analyses", &["."], &[]),
    (".", &["src"], &["tests", "examples", "benches"]),
    ("crates/bench", &["src"], &["tests"]),
    ("python", &["src"], &[]),
];

/// Entries listed for their features alone: (package folder, dependency, why).
const FEATURE_ONLY: [(&str, &str, &str); 2] = [
    (
        "crates/bench",
        "normscope-numeric",
        "turns on `timing`, the product counters the bench reads through the facade",
    ),
    (
        "python",
        "normscope-numeric",
        "turns on `timing` so the wheel's build shares the workspace's compiled crates",
    ),
];

/// The keys of one `[section]` of a manifest (`name = ...` or `name.workspace = true`).
fn keys(manifest: &str, section: &str) -> Vec<String> {
    let header = format!("[{section}]");
    let Some(start) = manifest.find(&header) else {
        return Vec::new();
    };
    manifest[start + header.len()..]
        .lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .map(|l| {
            let key = l.split('=').next().unwrap().trim();
            key.split('.').next().unwrap().trim().to_string()
        })
        .collect()
}

/// The text of every `.rs` file below `dirs` of package `pkg` (the analyses crate's own
/// folder without its `tests/` when only code is asked for).
fn text(pkg: &str, dirs: &[&str], with_tests: bool) -> String {
    let mut out = String::new();
    for d in dirs {
        let dir = root().join(pkg).join(d);
        if !dir.exists() {
            continue;
        }
        for f in crate::common::files_with_ext(&dir, "rs") {
            let in_tests = f.starts_with(root().join(pkg).join("tests"));
            if pkg == "analyses" && in_tests && !with_tests {
                continue;
            }
            out.push_str(&std::fs::read_to_string(&f).unwrap());
            out.push('\n');
        }
    }
    out
}

/// Whether `code` names the crate `name` (its Rust spelling).
fn names(code: &str, name: &str) -> bool {
    let id = name.replace('-', "_");
    [
        format!("{id}::"),
        format!("use {id}"),
        format!("{id}!"),
        format!("extern crate {id}"),
    ]
    .iter()
    .any(|p| {
        code.match_indices(p.as_str()).any(|(i, _)| {
            !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
        })
    })
}

fn unused(pkg: &str, code_dirs: &[&str], test_dirs: &[&str]) -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(&root()).join(pkg).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{pkg}/Cargo.toml: {e}"));
    let code = text(pkg, code_dirs, false);
    let all = code.clone() + &text(pkg, test_dirs, true) + &text(pkg, code_dirs, true);
    let allowed = |d: &str| FEATURE_ONLY.iter().any(|(p, n, _)| *p == pkg && *n == d);
    let mut out = Vec::new();
    for d in keys(&manifest, "dependencies") {
        if !names(&code, &d) && !allowed(&d) {
            out.push(format!("{pkg}: [dependencies] {d}"));
        }
    }
    for d in keys(&manifest, "dev-dependencies") {
        if !names(&all, &d) && !allowed(&d) {
            out.push(format!("{pkg}: [dev-dependencies] {d}"));
        }
    }
    out
}

#[test]
fn no_package_lists_a_dependency_it_does_not_use() {
    let found: Vec<String> = PACKAGES
        .iter()
        .flat_map(|(pkg, code, tests)| unused(pkg, code, tests))
        .collect();
    assert!(found.is_empty(), "unused dependencies: {found:#?}");
}

#[test]
fn the_check_finds_an_unused_dependency() {
    // The check is only as good as its reading of manifests and code.
    let manifest = "[dependencies]\nfoo-bar.workspace = true\nbaz = \"1\"\n# x = 1\n\n[dev-dependencies]\nqux = \"1\"\n";
    assert_eq!(keys(manifest, "dependencies"), ["foo-bar", "baz"]);
    assert_eq!(keys(manifest, "dev-dependencies"), ["qux"]);
    assert!(names("use foo_bar::X;", "foo-bar"));
    assert!(names("let x = baz::f();", "baz"));
    assert!(!names("let x = my_baz::f();", "baz"));
    assert!(!names("// nothing here", "baz"));
    // A package of this workspace is read whole: the root package uses polars.
    assert!(names(&text(".", &["src"], false), "polars"));
}
