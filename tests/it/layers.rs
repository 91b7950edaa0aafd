//! The workspace's layers, read from the source: imports point downward only.
//!
//! - Crates: `normscope-numeric` <- `normscope-core` <- `normscope-analyses` <- the binary.
//!   No crate names a crate above it, in its manifest or its source.
//! - Inside `normscope-analyses`: `runner` <- `ledger` <- the analyses <- `claims` and the
//!   registry (`lib.rs`) <- `commands`, with no import loop between its modules.
//! - `unsafe` only in `normscope-numeric`; every other crate root denies it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Source text without line comments (doc comments mention other layers by name).
fn code(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crates, bottom to top, with the names their code is imported by.
const CRATES: [(&str, &str, &str); 4] = [
    ("crates/numeric", "normscope-numeric", "normscope_numeric"),
    ("crates/core", "normscope-core", "normscope_core"),
    (
        "crates/analyses",
        "normscope-analyses",
        "normscope_analyses",
    ),
    (".", "normscope", "normscope"),
];

#[test]
fn no_crate_imports_a_crate_above_it() {
    for (i, (dir, _, _)) in CRATES.iter().enumerate() {
        let manifest = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let deps = manifest
            .split("\n[")
            .filter(|s| s.contains("dependencies]"))
            .collect::<String>();
        let src = if *dir == "." {
            // The binary and the facade import every crate below; nothing is above them.
            continue;
        } else {
            root().join(dir).join("src")
        };
        for (_, package, name) in &CRATES[i + 1..] {
            assert!(
                !deps.lines().any(|l| l.starts_with(&format!("{package} "))
                    || l.starts_with(&format!("{package}."))),
                "{dir}/Cargo.toml depends on {package}, a layer above it"
            );
            for f in sources(&src) {
                let text = code(&f);
                let hit = if *name == "normscope" {
                    text.contains("normscope::")
                } else {
                    text.contains(&format!("{name}::"))
                };
                assert!(!hit, "{} imports {name}, a layer above it", f.display());
            }
        }
    }
}

#[test]
fn unsafe_code_lives_only_in_the_numeric_layer() {
    for (dir, _, _) in &CRATES[1..] {
        let lib = if *dir == "." {
            vec![root().join("src/lib.rs"), root().join("src/main.rs")]
        } else {
            vec![root().join(dir).join("src/lib.rs")]
        };
        for f in lib {
            assert!(
                std::fs::read_to_string(&f)
                    .unwrap()
                    .contains("#![deny(unsafe_code)]"),
                "{} does not deny unsafe code",
                f.display()
            );
        }
    }
    for dir in ["crates/core/src", "crates/analyses/src", "src"] {
        for f in sources(&root().join(dir)) {
            let text = code(&f);
            assert!(
                !text.contains("unsafe {")
                    && !text.contains("unsafe fn")
                    && !text.contains("allow(unsafe_code)"),
                "{}: unsafe outside normscope-numeric",
                f.display()
            );
        }
    }
    let numeric = code(&root().join("crates/numeric/src/lib.rs"));
    assert!(!numeric.contains("deny(unsafe_code)"));
}

/// The module of the analyses crate that a file belongs to: the folder under `src/` or the
/// file's stem (`lib.rs` is the registry).
fn module_of(src: &Path, f: &Path) -> String {
    let rel = f.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The modules of the analyses crate each module names (`crate::m`, or `super::m` from a
/// file at the crate's top level), with the crate root's re-exports resolved to the module
/// they come from.
fn analyses_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("crates/analyses/src");
    let files = sources(&src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    // The crate root's `pub use` lines: name -> module.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut reexport = BTreeMap::new();
    for stmt in lib.split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ") else {
            continue;
        };
        let (module, names) = rest.split_once("::").unwrap();
        for n in names
            .trim_matches(|c| c == '{' || c == '}' || c == ' ' || c == '\n')
            .split(',')
        {
            let n = n.trim();
            if !n.is_empty() {
                reexport.insert(n.to_string(), module.to_string());
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let me = module_of(&src, f);
        let top = f.parent() == Some(src.as_path());
        let mut text = code(f);
        if me == "lib" {
            // The crate root's `pub use` lines are its public paths, not imports it uses.
            text = text
                .split(';')
                .filter(|s| !s.trim_start().starts_with("pub use "))
                .collect::<Vec<_>>()
                .join(";");
        }
        let mut names = Vec::new();
        for prefix in ["crate::", "super::"] {
            if prefix == "super::" && !top {
                continue;
            }
            for (i, _) in text.match_indices(prefix) {
                let rest = &text[i + prefix.len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let end = group.find('}').unwrap_or(group.len());
                    names.extend(
                        group[..end]
                            .split(',')
                            .map(|n| n.trim().split("::").next().unwrap().trim().to_string()),
                    );
                } else {
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    names.push(rest[..end].to_string());
                }
            }
        }
        if me == "lib" {
            // The crate root names its modules without a prefix (`claims::ANALYSIS`).
            for m in &modules {
                let pat = format!("{m}::");
                if text.match_indices(&pat).any(|(i, _)| {
                    !text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                }) {
                    names.push(m.clone());
                }
            }
        }
        let deps = graph.entry(me.clone()).or_default();
        for n in names {
            let m = if modules.contains(&n) {
                n
            } else if let Some(m) = reexport.get(&n) {
                m.clone()
            } else if ["REGISTRY", "find", "ids"].contains(&n.as_str()) {
                "lib".into()
            } else {
                continue;
            };
            if m != me {
                deps.insert(m);
            }
        }
    }
    graph
}

#[test]
fn the_analyses_crate_has_layers_and_no_import_loop() {
    let g = analyses_graph();
    let deps = |m: &str| g.get(m).cloned().unwrap_or_default();
    assert!(
        deps("runner").is_empty(),
        "runner imports {:?}: the run machinery sits below every analysis",
        deps("runner")
    );
    assert!(
        deps("ledger").iter().all(|m| m == "runner"),
        "ledger imports {:?}: it may import only the runner",
        deps("ledger")
    );
    for (m, d) in &g {
        if m != "commands" {
            assert!(
                !d.contains("commands"),
                "{m} imports the commands, the top layer"
            );
        }
        if !["commands", "lib"].contains(&m.as_str()) {
            assert!(!d.contains("lib"), "{m} imports the registry");
            if m != "claims" {
                assert!(!d.contains("claims"), "{m} imports the ledger analysis");
            }
        }
    }
    // No loop: repeatedly remove modules that import nothing left.
    let mut left = g.clone();
    while !left.is_empty() {
        let free: Vec<String> = left
            .iter()
            .filter(|(_, d)| d.iter().all(|x| !left.contains_key(x)))
            .map(|(m, _)| m.clone())
            .collect();
        assert!(
            !free.is_empty(),
            "import loop among {:?}",
            left.keys().collect::<Vec<_>>()
        );
        for m in free {
            left.remove(&m);
        }
    }
}

#[test]
fn the_layer_graph_finds_the_edges_it_must() {
    // The checks above are only as good as the graph: it is read from real files, so check
    // that it finds edges known to exist.
    let g = analyses_graph();
    assert!(
        g["claims"].contains("warmup"),
        "claims reads warmup's verdicts"
    );
    assert!(
        g["warmup"].contains("runner"),
        "warmup writes through the runner's Out"
    );
    assert!(
        g["commands"].contains("lib"),
        "the commands run the registry"
    );
    assert!(g["lib"].contains("claims"), "the registry lists the ledger");
}
