//! The extension recipes of `CONTRIBUTING.md` hold: each kind of extension touches the files its
//! recipe names and no others. The checks read the sources (code lines only: comments and
//! `#[cfg(test)]` modules are skipped), so a registry or a match that grows a second list of
//! metrics, presets, branches, optimizers or analyses elsewhere fails here, and so does a
//! recipe whose file count in `CONTRIBUTING.md` no longer matches the one checked here.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, recursively, as paths relative to the repository root.
fn rust_files(dir: &str) -> Vec<String> {
    crate::common::files_with_ext(&root().join(dir), "rs")
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(root()).unwrap().to_string_lossy();
            rel.replace('\\', "/")
        })
        .collect()
}

/// The workspace's library and binary sources (not tests, benches or examples).
fn sources() -> Vec<String> {
    let mut all = rust_files("crates");
    all.retain(|f| f.contains("/src/"));
    all.extend(rust_files("src"));
    // The analyses crate's files sit in `analyses/` itself; its tests do not count.
    all.extend(
        rust_files("analyses")
            .into_iter()
            .filter(|f| !f.starts_with("analyses/tests/")),
    );
    all
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The code lines of a source file up to its first `#[cfg(test)]`, comment lines blanked (so
/// index + 1 is the line number).
fn code(rel: &str) -> Vec<String> {
    read(rel)
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .map(|l| {
            if l.trim_start().starts_with("//") {
                String::new()
            } else {
                l.to_string()
            }
        })
        .collect()
}

fn mentions(rel: &str, needle: &str) -> bool {
    code(rel).iter().any(|l| contains_word(l, needle))
}

/// Whether `line` contains `needle` not followed by an identifier character (so
/// `Metric::Corr` does not match `Metric::CorrX`).
fn contains_word(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(i, _)| {
        !line[i + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The files of `files` whose code names any of `needles`.
fn naming(files: &[String], needles: &[String]) -> BTreeSet<String> {
    files
        .iter()
        .filter(|f| needles.iter().any(|n| mentions(f, n)))
        .cloned()
        .collect()
}

/// The counts `CONTRIBUTING.md` states for the recipe headed `heading`: `(new, edited)` from
/// its `(N new, M edited)`.
fn stated(heading: &str) -> (usize, usize) {
    let doc = read("CONTRIBUTING.md");
    let line = doc
        .lines()
        .find(|l| l.starts_with("## ") && l.contains(heading))
        .unwrap_or_else(|| panic!("CONTRIBUTING.md has no recipe heading {heading:?}"));
    let inner = line
        .rsplit_once('(')
        .and_then(|(_, r)| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?}: no (N new, M edited)"));
    let number = |what: &str| -> usize {
        inner
            .split(", ")
            .find_map(|p| p.strip_suffix(what))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{line:?}: no count of {what:?}"))
    };
    (number(" new"), number(" edited"))
}

/// The files of `dir` (not `mod.rs`) whose code contains `marker`, by stem.
fn files_with(dir: &str, marker: &str) -> BTreeSet<String> {
    rust_files(dir)
        .into_iter()
        .filter(|f| !f.ends_with("/mod.rs") && read(f).contains(marker))
        .map(|f| {
            f.rsplit('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect()
}

/// The one file of `dir` (not `mod.rs`) defining `name: "<name>"`.
fn defining(dir: &str, name: &str) -> String {
    let needle = format!("name: \"{name}\",");
    let found: Vec<String> = rust_files(dir)
        .into_iter()
        .filter(|f| !f.ends_with("/mod.rs") && code(f).iter().any(|l| l.trim() == needle))
        .collect();
    assert_eq!(found.len(), 1, "{name}: defined in {found:?}");
    found[0].clone()
}

fn stem(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap().trim_end_matches(".rs")
}

#[test]
fn a_metric_is_one_new_file_and_one_line_pair_in_the_registry() {
    use normscope::metrics::Metric;
    assert_eq!(stated("A metric"), (1, 1));
    let dir = "crates/core/src/metrics";
    let names: BTreeSet<String> = Metric::ALL.iter().map(|m| m.name().to_string()).collect();
    // Exactly one file per metric, named after it: the files holding an `INFO` are the metrics.
    assert_eq!(files_with(dir, "pub static INFO: Info = Info {"), names);
    let registry = read(&format!("{dir}/mod.rs"));
    for m in Metric::ALL {
        let file = defining(dir, m.name());
        assert_eq!(stem(&file), m.name());
        // The one edited file: its `mod` line and its registry line.
        for line in [
            format!("pub mod {};", m.name()),
            format!("{m:?} => {},", m.name()),
        ] {
            let n = registry.lines().filter(|l| l.trim() == line).count();
            assert_eq!(n, 1, "{dir}/mod.rs: {line:?} {n} times");
        }
    }
    let variants: Vec<String> = Metric::ALL
        .iter()
        .map(|m| format!("Metric::{m:?}"))
        .collect();
    let outside: Vec<String> = sources()
        .into_iter()
        .filter(|f| !f.starts_with(&format!("{dir}/")))
        .collect();
    // The engines decide what to compute from each metric's `Info`, never from its name.
    let engine: Vec<String> = outside
        .iter()
        .filter(|f| f.starts_with("crates/core/src/"))
        .cloned()
        .collect();
    let by_name = naming(&engine, &variants);
    assert!(
        by_name.is_empty(),
        "the engine names metrics outside {dir}/: {by_name:?}"
    );
    // No other file lists every metric (a list a new metric would have to join).
    for f in &outside {
        let all = variants.iter().all(|v| mentions(f, v));
        assert!(!all, "{f} names every metric");
    }
    // No match over metrics has a catch-all arm a new metric would fall into silently.
    for f in sources() {
        let lines = code(&f);
        for (i, l) in lines.iter().enumerate() {
            if !l.trim_start().starts_with("_ =>") {
                continue;
            }
            let start = (0..i)
                .rev()
                .find(|&j| lines[j].contains("match "))
                .unwrap_or(i);
            // An arm whose pattern names a metric: `Metric::X =>` or `(Metric::X, ..) =>`.
            let over_metric = lines[start..i].iter().any(|x| {
                let t = x.trim_start().trim_start_matches('(');
                t.starts_with("Metric::") && x.contains("=>")
            });
            assert!(!over_metric, "{f}:{}: `_ =>` in a match over Metric", i + 1);
        }
    }
}

#[test]
fn a_preset_is_one_new_file_and_its_registry_line() {
    assert_eq!(stated("A preset"), (1, 1));
    let dir = "crates/core/src/placement";
    let registry = read(&format!("{dir}/mod.rs"));
    let core: Vec<String> = sources()
        .into_iter()
        .filter(|f| f.starts_with("crates/core/src/") && !f.starts_with(&format!("{dir}/")))
        .collect();
    for p in normscope::placement::REGISTRY {
        let file = defining(dir, p.name);
        let module = stem(&file);
        assert!(
            registry
                .lines()
                .any(|l| l.trim() == format!("mod {module};")),
            "{dir}/mod.rs: no `mod {module};`"
        );
        assert!(
            registry
                .lines()
                .any(|l| l.trim().starts_with(&format!("{module}::"))),
            "{dir}/mod.rs: {module} is not in REGISTRY"
        );
        // The engine builds stacks from the registry, never from a preset's name.
        let quoted = format!("\"{}\"", p.name);
        let by_name = naming(&core, &[quoted]);
        assert!(by_name.is_empty(), "{}: named in {by_name:?}", p.name);
    }
}

#[test]
fn a_branch_is_one_new_file_and_the_arms_the_compiler_lists() {
    use normscope::branch::BranchKind;
    assert_eq!(stated("A branch"), (1, 5));
    let dir = "crates/core/src/branch";
    for k in BranchKind::ALL {
        defining(dir, k.name());
    }
    // Outside branch/, the files naming a module's variant (an exhaustive match or a
    // construction): a new module is one arm in each.
    let outside: Vec<String> = sources()
        .into_iter()
        .filter(|f| !f.starts_with(&format!("{dir}/")))
        .collect();
    let arms = naming(
        &outside,
        &["Block::Linear".to_string(), "Branch::Linear".to_string()],
    );
    let expected: BTreeSet<String> = [
        "crates/core/src/monte_carlo/sampler.rs",
        "crates/core/src/monte_carlo/size.rs",
        "crates/core/src/train/dump.rs",
    ]
    .map(String::from)
    .into();
    assert_eq!(arms, expected);
    // With branch/mod.rs and branch/drawn.rs: the recipe's edited files.
    assert_eq!(expected.len() + 2, stated("A branch").1);
}

#[test]
fn an_optimizer_is_one_new_file_and_its_registry_line() {
    use normscope::train::optim::OptimizerKind;
    let (new, edited) = stated("An optimizer");
    let dir = "crates/core/src/train/optim";
    let registry = format!("{dir}/mod.rs");
    let lines = code(&registry);
    let mut own = BTreeSet::new();
    let mut fields = Vec::new();
    for name in OptimizerKind::NAMES {
        // One file per optimizer, named after it: its name, hyperparameters, state and step.
        let needle = format!("const NAME: &'static str = \"{name}\";");
        let found: Vec<String> = rust_files(dir)
            .into_iter()
            .filter(|f| code(f).iter().any(|l| l.trim() == needle))
            .collect();
        assert_eq!(found.len(), 1, "{name}: defined in {found:?}");
        assert_eq!(stem(&found[0]), *name);
        // The registry's two lines: `pub mod <name>;` and `Variant(<name>::Type),`.
        assert!(
            lines.iter().any(|l| l.trim() == format!("pub mod {name};")),
            "{registry}: no `pub mod {name};`"
        );
        let entries = lines
            .iter()
            .filter(|l| l.contains(&format!("({name}::")) && l.trim().ends_with("),"))
            .count();
        assert_eq!(
            entries, 1,
            "{registry}: {name} in the registry {entries} times"
        );
        // Each hyperparameter's flag field is declared once, in its optimizer's file (the
        // command line and the raw configuration flatten the declaration).
        let kind = OptimizerKind::parse(name).unwrap();
        for flag in kind.flags() {
            let field = flag.trim_start_matches("--").replace('-', "_");
            let declared = naming(&sources(), &[format!("flag {field} \"{flag}\"")]);
            assert_eq!(declared.len(), 1, "{flag}: declared in {declared:?}");
            fields.push(format!("pub {field}: Option<f64>,"));
        }
        own.insert(found[0].clone());
    }
    // ... and only there (AdamW's file declares `--weight-decay`, Adam's its betas and eps).
    for flag in OptimizerKind::NAMES
        .iter()
        .flat_map(|n| OptimizerKind::parse(n).unwrap().flags())
    {
        let field = flag.trim_start_matches("--").replace('-', "_");
        let declared = naming(&sources(), &[format!("flag {field} \"{flag}\"")]);
        assert!(declared.is_subset(&own), "{flag}: declared in {declared:?}");
    }
    // So a new optimizer is one new file.
    assert_eq!(new, 1);
    // What a new optimizer touches besides its own file: the files naming the optimizers'
    // variants (a match or a construction), declaring a flag field, or holding the registry.
    let variants: Vec<String> = OptimizerKind::NAMES
        .iter()
        .map(|n| {
            let debug = format!("{:?}", OptimizerKind::parse(n).unwrap());
            format!("OptimizerKind::{}", debug.split('(').next().unwrap())
        })
        .collect();
    let mut touched = naming(&sources(), &variants);
    // A hyperparameter field written by hand (not by the declaration's macro) is a second list.
    touched.extend(naming(&sources(), &fields));
    touched.insert(registry.clone());
    let touched: BTreeSet<String> = touched.difference(&own).cloned().collect();
    assert_eq!(touched, BTreeSet::from([registry]));
    assert_eq!(touched.len(), edited, "{touched:?}");
    // No match over optimizers has a catch-all arm a new optimizer would fall into silently.
    for f in sources() {
        let lines = code(&f);
        for (i, l) in lines.iter().enumerate() {
            if !l.trim_start().starts_with("_ =>") {
                continue;
            }
            let start = (0..i)
                .rev()
                .find(|&j| lines[j].contains("match "))
                .unwrap_or(i);
            let over_optimizer = lines[start..i]
                .iter()
                .any(|x| x.contains("OptimizerKind::") && x.contains("=>"));
            assert!(
                !over_optimizer,
                "{f}:{}: `_ =>` in a match over OptimizerKind",
                i + 1
            );
        }
    }
}

#[test]
fn an_analysis_is_two_new_files_and_three_edits() {
    assert_eq!(stated("An analysis"), (2, 3));
    let lib = read("analyses/lib.rs");
    let manifest = read("analyses/Cargo.toml");
    let ids = normscope::analyses::ids();
    for id in &ids {
        let needle = format!("id: \"{id}\",");
        let found: Vec<String> = rust_files("analyses")
            .into_iter()
            .filter(|f| code(f).iter().any(|l| l.trim() == needle))
            .collect();
        assert_eq!(found.len(), 1, "{id}: defined in {found:?}");
        let module = stem(&found[0]);
        assert!(
            lib.lines()
                .any(|l| l.trim() == format!("pub mod {module};"))
        );
        assert!(
            lib.lines()
                .any(|l| l.trim() == format!("{module}::ANALYSIS,")),
            "{id}: not in REGISTRY"
        );
        // Its binary: three lines over the shared entry point, declared without a harness.
        let bin = format!("analyses/bin/{id}.rs");
        assert!(
            code(&bin)
                .iter()
                .any(|l| l.trim() == format!("normscope_analyses::binary::main(\"{id}\")")),
            "{bin} does not run {id}"
        );
        let entry = format!(
            "[[bin]]\nname = \"{id}\"\npath = \"bin/{id}.rs\"\ntest = false\nbench = false\n"
        );
        assert!(
            manifest.contains(&entry),
            "analyses/Cargo.toml: no entry {entry:?}"
        );
    }
    // No binary without its analysis.
    let bins: BTreeSet<String> = rust_files("analyses/bin")
        .iter()
        .map(|f| stem(f).to_string())
        .collect();
    let ids: BTreeSet<String> = ids.iter().map(|s| s.to_string()).collect();
    assert_eq!(bins, ids);
    assert_eq!(manifest.matches("[[bin]]").count(), ids.len());
}

/// The arm patterns of `lines` (a file's code) that name a value of `ty` (`NormKind::X =>`,
/// `(NormKind::X, ..) =>`, `Some(NormKind::X) =>`, `| NormKind::X =>`, the type's path
/// written out or not), by line number.
fn arms_over(lines: &[String], ty: &str) -> Vec<usize> {
    let prefix = format!("{ty}::");
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let t = l
                .trim_start()
                .trim_start_matches("| ")
                .trim_start_matches("Some(")
                .trim_start_matches('(')
                .trim_start_matches("crate::spec::")
                .trim_start_matches("normscope_core::spec::");
            t.starts_with(&prefix) && l.contains("=>")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn a_norm_is_one_row_in_the_table_of_norm_kinds() {
    use normscope::spec::NormKind;
    assert_eq!(stated("A norm"), (0, 1));
    let table = "crates/core/src/spec.rs";
    let lines = code(table);
    // Each kind has its row in the one table, `NormKind::info`, and its line in `ALL`.
    for k in NormKind::ALL {
        let row = format!("NormKind::{k:?} => NormInfo {{");
        let n = lines.iter().filter(|l| l.trim() == row).count();
        assert_eq!(n, 1, "{table}: {row:?} {n} times");
        let name = format!("name: \"{}\",", k.name());
        assert_eq!(lines.iter().filter(|l| l.trim() == name).count(), 1);
    }
    // The one edited file: nothing else matches on the kinds (every other question reads the
    // kind's row), so a new kind whose statistic and closed-form map exist is one row.
    let mut touched = BTreeSet::from([table.to_string()]);
    for f in sources() {
        let arms = arms_over(&code(&f), "NormKind");
        if !arms.is_empty() {
            assert_eq!(
                f, table,
                "{f}:{arms:?}: a match over NormKind outside the table"
            );
            touched.insert(f);
        }
    }
    assert_eq!(touched.len(), stated("A norm").1, "{touched:?}");
    // No file outside the table lists every kind.
    let variants: Vec<String> = NormKind::ALL
        .iter()
        .map(|k| format!("NormKind::{k:?}"))
        .collect();
    for f in sources().iter().filter(|f| *f != table) {
        assert!(
            !variants.iter().all(|v| mentions(f, v)),
            "{f} names every norm kind"
        );
    }
    // The engines ask a kind's row a named question, never compare kinds.
    for f in sources()
        .into_iter()
        .filter(|f| f.starts_with("crates/core/src/") && f != table)
    {
        for (i, l) in code(&f).iter().enumerate() {
            let compared = ["== ", "!= ", "matches!("].iter().any(|op| {
                l.match_indices(op).any(|(j, _)| {
                    let rest = l[j + op.len()..].trim_start_matches("crate::spec::");
                    rest.contains("NormKind::") && !rest.starts_with("NormKind::ALL")
                })
            });
            assert!(!compared, "{f}:{}: compares NormKind values: {l:?}", i + 1);
        }
    }
    // No match over norm kinds, or over the table's columns (what a norm divides by, its
    // closed-form map), has a catch-all arm a new kind or column value would fall into
    // silently.
    for f in sources() {
        let lines = code(&f);
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            let catch_all = t.starts_with("_ =>")
                || t.split_once(" =>").is_some_and(|(p, _)| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                });
            if !catch_all {
                continue;
            }
            let start = (0..i)
                .rev()
                .find(|&j| lines[j].contains("match "))
                .unwrap_or(i);
            for ty in ["NormKind", "NormStatistic", "NormMap"] {
                let over = !arms_over(&lines[start..i], ty).is_empty();
                assert!(!over, "{f}:{}: a catch-all arm in a match over {ty}", i + 1);
            }
        }
    }
}

#[test]
fn presets_are_looked_up_by_name_only_where_names_are_parsed() {
    // A name becomes its preset once, where it is parsed (`parse_presets`, an analysis's
    // configuration); the engines take the resolved `&'static Preset` (`ModelConfig::stack`,
    // `tables::rows`, `compare`, `train::run`), and a stack carries its preset's name, label
    // and placement file (`StackSpec::preset`, `label`, `file`), so nothing downstream looks
    // its preset up again. The registry's lookups by name, outside `placement/` itself:
    let lookups = [
        "placement::find(",
        "placement::build(",
        "find_builtin(",
        "placement::all(",
        "placement::loaded(",
    ];
    let allowed: BTreeSet<&str> = [
        // `parse_presets`: the command line's `--preset` (`src/app` parses through it) and a
        // training request's presets, checked and resolved once.
        "crates/core/src/model.rs",
        // An analysis's default presets (`common::presets`), resolved when its configuration
        // is made; a configuration file's names resolve as it is read (`&'static Preset`'s
        // `Deserialize`, in `placement/`).
        "analyses/common.rs",
    ]
    .into();
    let mut found = BTreeSet::new();
    for f in sources() {
        let hits: Vec<usize> = code(&f)
            .iter()
            .enumerate()
            .filter(|(_, l)| lookups.iter().any(|n| l.contains(n)))
            .map(|(i, _)| i + 1)
            .collect();
        if f.starts_with("crates/core/src/placement/") || hits.is_empty() {
            continue;
        }
        assert!(
            allowed.contains(f.as_str()),
            "{f}:{hits:?}: a preset looked up by name after parsing (take the resolved preset, \
             or the stack's own name, label or file)"
        );
        found.insert(f);
    }
    // The list holds no stale entry.
    let allowed: BTreeSet<String> = allowed.into_iter().map(String::from).collect();
    assert_eq!(found, allowed);
    // The core's engines and the analyses take labels from the stack or the rows, never
    // from the registry: `Setup::label_of` is gone.
    let by_name = naming(&sources(), &["label_of(".to_string()]);
    assert!(by_name.is_empty(), "{by_name:?}");
}
