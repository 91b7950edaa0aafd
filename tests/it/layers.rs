//! The workspace's layers, read from the source: imports point downward only.
//!
//! - Crates: `normscope-numeric` <- `normscope-core` <- `normscope-figure` <-
//!   `normscope-analyses` <- the `normscope` binary (and its facade) <- `normscope-bench` <-
//!   the Python extension (`python/`). No crate names a crate above it, in its manifest or
//!   its source.
//! - Inside every crate: no two files import each other, directly or through others
//!   ([`file_graph`]); inside `normscope-core`, modules import only lower rows of
//!   [`CORE_LAYERS`].
//! - Inside `normscope-analyses`: `runner` <- `ledger` <- the analyses <- `claims` and the
//!   registry (`lib.rs`) <- `commands`, with no import loop between its modules.
//! - `unsafe` only in `normscope-numeric`; every other crate root denies it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.rs` files under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = crate::common::files_with_ext(dir, "rs");
    // The analyses crate's sources sit in its folder beside its integration tests.
    files.retain(|f| !f.starts_with(dir.join("tests")));
    files
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
const CRATES: [(&str, &str, &str); 7] = [
    ("crates/numeric", "normscope-numeric", "normscope_numeric"),
    ("crates/core", "normscope-core", "normscope_core"),
    ("crates/figure", "normscope-figure", "normscope_figure"),
    ("analyses", "normscope-analyses", "normscope_analyses"),
    (".", "normscope", "normscope"),
    ("crates/bench", "normscope-bench", "normscope_bench"),
    ("python", "normscope-python", "_normscope"),
];

/// Where a crate's sources are: `src/` below its folder, except the analyses crate, whose
/// files sit in `analyses/` itself (one file per analysis, as the design card lays it out).
fn source_dir(dir: &str) -> String {
    if dir == "analyses" {
        dir.to_string()
    } else {
        format!("{dir}/src")
    }
}

#[test]
fn no_crate_imports_a_crate_above_it() {
    for (i, (dir, _, _)) in CRATES.iter().enumerate() {
        let manifest = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let deps = manifest
            .split("\n[")
            .filter(|s| s.contains("dependencies]"))
            .collect::<String>();
        let src = root().join(source_dir(dir));
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
        let lib = match *dir {
            "." => vec![root().join("src/lib.rs"), root().join("src/main.rs")],
            "crates/bench" => vec![root().join("crates/bench/src/main.rs")],
            _ => vec![root().join(source_dir(dir)).join("lib.rs")],
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
    for dir in [
        "crates/core/src",
        "crates/figure/src",
        "analyses",
        "src",
        "crates/bench/src",
        "python/src",
    ] {
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

/// The module of the analyses crate that a file belongs to: the folder under `analyses/` or the
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
    let src = root().join("analyses");
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
        // The analysis binaries' entry point sits on top of the commands.
        assert!(
            !d.contains("binary"),
            "{m} imports the binaries' entry point"
        );
        if !["commands", "binary"].contains(&m.as_str()) {
            assert!(
                !d.contains("commands"),
                "{m} imports the commands, the top layer"
            );
        }
        if !["commands", "lib", "binary"].contains(&m.as_str()) {
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
    assert!(
        g["binary"].contains("commands"),
        "the binaries' entry point takes the run flags of the commands"
    );
    assert!(g["lib"].contains("claims"), "the registry lists the ledger");
}

/// A module path inside a crate (`["monte_carlo", "measure"]`; empty for the crate root).
type ModPath = Vec<String>;

/// The file of every module under `src`: `a/b.rs` and `a/b/mod.rs` are `a::b`, `lib.rs` and
/// `main.rs` the root.
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    for f in sources(src) {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut m: ModPath = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if m.last().is_some_and(|l| l == "mod") {
            m.pop();
        }
        if m.len() == 1 && (m[0] == "lib" || m[0] == "main") {
            m.clear();
        }
        out.insert(m, f);
    }
    out
}

/// The paths a `use` tree names: `a::{b, c::{d, e as f}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn rec(prefix: &[String], s: &str, out: &mut Vec<Vec<String>>) {
        let s = s.trim();
        if s.is_empty() {
            return;
        }
        if let Some(inner) = s.strip_prefix('{') {
            let inner = &inner[..inner.rfind('}').unwrap_or(inner.len())];
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        rec(prefix, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            rec(prefix, &inner[start..], out);
            return;
        }
        match s.split_once("::") {
            Some((head, rest)) if !head.contains('{') => {
                let mut p = prefix.to_vec();
                p.push(head.trim().to_string());
                rec(&p, rest, out);
            }
            _ => {
                let mut p = prefix.to_vec();
                p.push(s.split(" as ").next().unwrap().trim().to_string());
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    rec(&[], tree, &mut out);
    out
}

/// Source text without comments and without its `#[cfg(test)] mod tests` (a test module may
/// import its parent: that is not an import of the file).
fn code_without_tests(p: &Path) -> String {
    let text = code(p);
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The import graph between the files (modules) of one crate. An import is a `use` line or a
/// `crate::`/`super::` path; `pub use` re-exports are resolved to the module that defines the
/// name, and a parent naming its children (declaring, registering, re-exporting them) is not
/// an import.
fn file_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let files = module_files(src);
    let texts: BTreeMap<ModPath, String> = files
        .iter()
        .map(|(m, f)| (m.clone(), code_without_tests(f)))
        .collect();
    // A statement `[pub[(..)]] use TREE`, with whether it is a re-export.
    let uses = |text: &str| -> Vec<(bool, String)> {
        [text]
            .into_iter()
            .filter_map(|stmt| {
                let s = stmt.trim_start();
                let (public, rest) = if let Some(r) = s.strip_prefix("pub use ") {
                    (true, r)
                } else if let Some(r) = s.strip_prefix("pub(crate) use ") {
                    (true, r)
                } else if let Some(r) = s.strip_prefix("pub(super) use ") {
                    (true, r)
                } else {
                    (false, s.strip_prefix("use ")?)
                };
                Some((public, rest.to_string()))
            })
            .collect()
    };
    // A `use` statement spans lines; read whole statements from the text.
    let statements = |text: &str| -> Vec<(bool, String)> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("use ") {
            let before = &rest[..i];
            let line_start = before.rfind('\n').map_or(0, |j| j + 1);
            let lead = before[line_start..].trim();
            let at_statement = lead.is_empty() || lead.starts_with("pub");
            let word_start =
                i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            let end = rest[i..].find(';').map_or(rest.len(), |j| i + j);
            if at_statement && word_start {
                out.extend(uses(&format!("{}{}", &rest[line_start..i], &rest[i..end])));
            }
            rest = &rest[(i + 4).min(rest.len())..];
        }
        out
    };
    let resolve =
        |cur: &ModPath, path: &[String], reexport: &BTreeMap<(ModPath, String), ModPath>| {
            let (mut m, rest): (ModPath, &[String]) = match path.first().map(String::as_str) {
                Some("crate") => (vec![], &path[1..]),
                Some("self") => (cur.clone(), &path[1..]),
                Some("super") => {
                    let mut m = cur.clone();
                    let mut k = 0;
                    while path.get(k).is_some_and(|s| s == "super") {
                        m.pop();
                        k += 1;
                    }
                    (m, &path[k..])
                }
                _ => return None,
            };
            for s in rest {
                let mut next = m.clone();
                next.push(s.clone());
                if files.contains_key(&next) {
                    m = next;
                } else {
                    return Some(reexport.get(&(m.clone(), s.clone())).cloned().unwrap_or(m));
                }
            }
            Some(m)
        };
    let absolute = |cur: &ModPath, p: Vec<String>| -> Vec<String> {
        if ["crate", "self", "super"].contains(&p[0].as_str()) {
            p
        } else {
            let mut child = cur.clone();
            child.push(p[0].clone());
            if files.contains_key(&child) {
                let mut q = vec!["self".to_string()];
                q.extend(p);
                q
            } else {
                p
            }
        }
    };
    // Re-exports, resolved twice so that a re-export of a re-export lands on its definition.
    let mut reexport: BTreeMap<(ModPath, String), ModPath> = BTreeMap::new();
    for _ in 0..2 {
        for (m, t) in &texts {
            for (public, tree) in statements(t) {
                if !public {
                    continue;
                }
                for p in use_paths(&tree) {
                    let name = p.last().unwrap().clone();
                    let p = absolute(m, p);
                    if let Some(target) = resolve(m, &p, &reexport) {
                        reexport.insert((m.clone(), name), target);
                    }
                }
            }
        }
    }
    let mut graph: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (m, t) in &texts {
        let mut paths: Vec<Vec<String>> = Vec::new();
        for (public, tree) in statements(t) {
            if !public {
                paths.extend(use_paths(&tree).into_iter().map(|p| absolute(m, p)));
            }
        }
        for prefix in ["crate::", "super::"] {
            for (i, _) in t.match_indices(prefix) {
                if t[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let rest = &t[i..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                if rest[end..].starts_with('{') {
                    // A use tree (`crate::{a, b}`): read with its statement.
                    continue;
                }
                let p: Vec<String> = rest[..end]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                paths.push(p);
            }
        }
        let deps = graph.entry(m.clone()).or_default();
        for p in paths {
            if let Some(target) = resolve(m, &p, &reexport)
                && &target != m
                && files.contains_key(&target)
            {
                deps.insert(target);
            }
        }
    }
    graph
}

/// The modules of `graph` left in import loops: repeatedly removes modules that import nothing
/// left; what remains (empty when there is no loop) is in or above a loop.
fn in_loops<K: Ord + Clone>(graph: &BTreeMap<K, BTreeSet<K>>) -> Vec<K> {
    let mut left = graph.clone();
    loop {
        let free: Vec<K> = left
            .iter()
            .filter(|(_, d)| d.iter().all(|x| !left.contains_key(x)))
            .map(|(m, _)| m.clone())
            .collect();
        if free.is_empty() {
            return left.into_keys().collect();
        }
        for m in free {
            left.remove(&m);
        }
    }
}

/// Every crate's source folders: the four libraries, the `normscope` binary and its facade,
/// and the bench binary.
const SOURCE_DIRS: [&str; 6] = [
    "crates/numeric/src",
    "crates/core/src",
    "crates/figure/src",
    "analyses",
    "src",
    "crates/bench/src",
];

#[test]
fn no_file_of_any_crate_imports_in_a_loop() {
    for dir in SOURCE_DIRS {
        let g = file_graph(&root().join(dir));
        let looped: Vec<String> = in_loops(&g).iter().map(|m| m.join("::")).collect();
        assert!(looped.is_empty(), "{dir}: import loop among {looped:?}");
    }
}

#[test]
fn the_file_graph_finds_loops_and_the_edges_it_must() {
    // Edges known to exist, read from the real files.
    let core = file_graph(&root().join("crates/core/src"));
    let m = |s: &str| -> ModPath { s.split("::").map(str::to_string).collect() };
    for (from, to) in [
        ("closed_form", "metrics::closed"),
        ("branch::drawn", "branch::module"),
        ("branch::linear", "branch::module"),
        ("monte_carlo::size", "monte_carlo::memory"),
        ("metrics::grad_sq", "metrics::sampled"),
        ("train::trainable", "train::pass"),
    ] {
        assert!(core[&m(from)].contains(&m(to)), "{from} -> {to} not found");
    }
    // A loop written on purpose is found: two files importing each other, one through a
    // re-export and a multi-line use tree.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "pub mod x;\npub use x::X;\n").unwrap();
    std::fs::write(src.join("a/x.rs"), "use crate::b::B;\npub struct X(B);\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "use crate::{\n    a::X,\n};\npub struct B;\nfn f(_: X) {}\n",
    )
    .unwrap();
    let g = file_graph(src);
    assert_eq!(
        in_loops(&g),
        vec![m("a::x"), m("b")],
        "the planted loop a::x <-> b: {g:?}"
    );
    // Without the back edge there is none.
    std::fs::write(src.join("a/x.rs"), "pub struct X;\n").unwrap();
    assert!(in_loops(&file_graph(src)).is_empty());
}

/// normscope-core's modules bottom to top: a module imports only modules of lower rows.
const CORE_LAYERS: &[&[&str]] = &[
    &["error"],
    &["input", "interrupt", "layers", "norms", "spec", "stats"],
    &["branch", "placement"],
    &["theory"],
    &["budget", "metrics"],
    &["profile"],
    &["model"],
    &["engine"],
    &["closed_form", "monte_carlo"],
    &["output"],
    &["symbolic", "tables", "train"],
    &["compare"],
];

#[test]
fn core_modules_import_only_lower_layers() {
    let g = file_graph(&root().join("crates/core/src"));
    let row = |m: &str| CORE_LAYERS.iter().position(|r| r.contains(&m));
    // Top-level modules and the top-level modules they import.
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, deps) in &g {
        let Some(me) = m.first() else { continue };
        let e = top.entry(me.clone()).or_default();
        for d in deps {
            if let Some(to) = d.first()
                && to != me
            {
                e.insert(to.clone());
            }
        }
    }
    let mut wrong = Vec::new();
    for (m, deps) in &top {
        let mine = row(m).unwrap_or_else(|| panic!("core module {m} is in no row of CORE_LAYERS"));
        for d in deps {
            let theirs = row(d).unwrap_or_else(|| panic!("core module {d} is in no row"));
            if theirs >= mine {
                wrong.push(format!("{m} (row {mine}) imports {d} (row {theirs})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports point to lower rows only: {wrong:#?}"
    );
    assert!(top["closed_form"].contains("metrics") && top["monte_carlo"].contains("engine"));
}
