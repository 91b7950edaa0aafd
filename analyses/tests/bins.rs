//! The analysis binaries (`analyses/bin/<id>.rs`, `cargo run --release --bin <id>`): one per
//! analysis of the registry, each with its own help, and each writing what `normscope
//! reproduce --only <id>` writes, byte for byte.
//!
//! The reference run is the library's [`reproduce`] with the command line that `normscope
//! reproduce --only <id> ...` records: the `normscope` binary calls the same function with
//! `invocation: None`, which records [`manifest::invocation_of`] of its own arguments.

use normscope_analyses::{REGISTRY, Request, manifest, reproduce};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary of analysis `id`, as cargo built it for these tests.
fn binary(id: &str) -> PathBuf {
    // Cargo names each binary's path `CARGO_BIN_EXE_<name>`; the names are the registry's ids.
    let exe = std::env::var_os(format!("CARGO_BIN_EXE_{id}"))
        .unwrap_or_else(|| panic!("cargo built no binary {id} (analyses/Cargo.toml)"));
    PathBuf::from(exe)
}

fn run(id: &str, args: &[&str]) -> Output {
    Command::new(binary(id))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{id}: {e}"))
}

/// Every file below `root`, relative path -> bytes.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn every_binary_writes_the_bytes_reproduce_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (by_bin, by_reproduce) = (tmp.path().join("bin"), tmp.path().join("reproduce"));
    // In registry order, into one root each, so `claims` reads the tables before it.
    for a in REGISTRY {
        let dir = by_bin.to_str().unwrap();
        let out = run(a.id, &["--quick", "--out-dir", dir]);
        assert!(
            out.status.success(),
            "{} --quick: {}",
            a.id,
            String::from_utf8_lossy(&out.stderr)
        );
        let args = ["reproduce", "--only", a.id, "--quick", "--out-dir", dir];
        reproduce(&Request {
            root: by_reproduce.clone(),
            only: vec![a.id.to_string()],
            quick: true,
            invocation: Some(manifest::invocation_of(args.map(String::from))),
            ..Request::default()
        })
        .unwrap();
    }
    let (bin, lib) = (files(&by_bin), files(&by_reproduce));
    assert_eq!(
        bin.keys().collect::<Vec<_>>(),
        lib.keys().collect::<Vec<_>>(),
        "the binaries and reproduce wrote different files"
    );
    for id in REGISTRY.iter().map(|a| a.id) {
        let manifest = format!("data/{id}/manifest.json");
        let text = String::from_utf8(bin[&manifest].clone()).unwrap();
        assert!(
            text.contains(&format!(
                "\"invocation\": \"normscope reproduce --only {id} --quick --out-dir DIR\""
            )),
            "{manifest}: {text}"
        );
    }
    let differ: Vec<&String> = bin.keys().filter(|k| bin[*k] != lib[*k]).collect();
    assert!(differ.is_empty(), "bytes differ: {differ:?}");
}

#[test]
fn each_binary_has_its_own_help() {
    for a in REGISTRY {
        let out = run(a.id, &["--help"]);
        assert!(out.status.success(), "{} --help", a.id);
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.starts_with(&format!("{}: {}", a.id, a.about)),
            "{help}"
        );
        assert!(
            help.contains(&format!("normscope reproduce --only {}", a.id)),
            "{help}"
        );
        assert!(help.contains(&format!("cargo run --release --bin {}", a.id)));
        for flag in [
            "--out-dir",
            "--quick",
            "--config",
            "--seed",
            "--print-config",
            "--shard",
        ] {
            assert!(help.contains(flag), "{}: no {flag} in its help", a.id);
        }
        // Which claims it serves, as the registry says.
        let claims = match a.claims {
            [] => "No verdict of the claims ledger reads its tables.".to_string(),
            [c] => format!("Serves claim {c} of"),
            many => format!(
                "Serves claims {} of",
                many.iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        assert!(help.contains(&claims), "{}: {help}", a.id);
        let version = run(a.id, &["--version"]);
        assert_eq!(
            String::from_utf8(version.stdout).unwrap(),
            format!("{} {}\n", a.id, manifest::VERSION)
        );
    }
}

#[test]
fn print_config_is_the_one_reproduce_prints() {
    for a in REGISTRY {
        let out = run(a.id, &["--quick", "--seed", "11", "--print-config"]);
        assert!(out.status.success(), "{}", a.id);
        let settings = normscope_analyses::Settings {
            quick: true,
            file: Default::default(),
            seed: Some(11),
        };
        let prepared = (a.prepare)(a.id, &settings).unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            normscope_analyses::config_toml(&[a], &[prepared], true),
            "{}",
            a.id
        );
    }
}

#[test]
fn bad_flags_are_one_line_and_exit_2_writing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let d = dir.to_str().unwrap();
    for (args, names) in [
        (vec!["--only", "warmup"], "--only"),
        (vec!["--shard", "3/2", "--out-dir", d], "--shard"),
        (vec!["--seed", "-1"], "-1"),
        (
            vec!["--config", "/nonexistent/c.toml", "--out-dir", d],
            "c.toml",
        ),
    ] {
        let out = run("expansion", &args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    assert!(!dir.exists(), "a refused run created its output folder");
}

#[test]
fn the_readme_lists_every_binary_once() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    // The list: lines `cargo run --release --bin <id>` ... in one block, in registry order.
    let listed: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("cargo run --release --bin "))
        .map(|rest| rest.split_whitespace().next().unwrap_or(""))
        .collect();
    let ids: Vec<&str> = REGISTRY.iter().map(|a| a.id).collect();
    assert_eq!(listed, ids, "README.md's list of analysis binaries");
    // The README stays a page of commands; the book (docs/) holds the rest.
    let lines = readme.lines().count();
    assert!(
        lines < 250,
        "README.md has {lines} lines (the goal: under 250)"
    );
}

#[test]
fn every_flag_form_gives_the_bytes_reproduce_gives() {
    // `--out-dir=DIR`, a seed and a configuration file whose name holds a space: the manifest
    // records the same `normscope reproduce --only <id> ...` line either way.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("my config.toml");
    std::fs::write(&config, "[expansion]\n").unwrap();
    let (by_bin, by_reproduce) = (tmp.path().join("bin"), tmp.path().join("reproduce"));
    let out_dir = format!("--out-dir={}", by_bin.display());
    let args = [
        "--quick",
        &out_dir,
        "--seed",
        "7",
        "--config",
        config.to_str().unwrap(),
    ];
    let out = run("expansion", &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = ["reproduce", "--only", "expansion"]
        .iter()
        .chain(args.iter())
        .map(|a| a.to_string());
    reproduce(&Request {
        root: by_reproduce.clone(),
        only: vec!["expansion".into()],
        quick: true,
        seed: Some(7),
        config: Some(config.clone()),
        invocation: Some(manifest::invocation_of(line)),
        ..Request::default()
    })
    .unwrap();
    let manifest = String::from_utf8(files(&by_bin)["data/expansion/manifest.json"].clone());
    assert!(
        manifest.unwrap().contains(&format!(
            "\"invocation\": \"normscope reproduce --only expansion --quick --out-dir=DIR --seed 7 --config \\\"{}\\\"\"",
            config.display()
        )),
        "the manifest records the reproduce line"
    );
    assert!(files(&by_bin) == files(&by_reproduce));
}

#[test]
fn shards_of_a_binary_merge_into_the_unsharded_bytes() {
    // Two shards run by the `mc-grid` binary, merged by the library's `merge` (what
    // `normscope merge` calls): the build fingerprint they record is this build's, so the
    // merge takes them, and the result is the unsharded run's.
    let tmp = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    for (i, dir) in shards.iter().enumerate() {
        let spec = format!("{i}/2");
        let out = run(
            "mc-grid",
            &[
                "--quick",
                "--shard",
                &spec,
                "--out-dir",
                dir.to_str().unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let merged = tmp.path().join("merged");
    normscope_analyses::merge(&shards, &merged).unwrap();
    let whole = tmp.path().join("whole");
    let out = run(
        "mc-grid",
        &["--quick", "--out-dir", whole.to_str().unwrap()],
    );
    assert!(out.status.success());
    assert!(files(&merged) == files(&whole), "merged shards differ");
}

#[test]
fn each_analysis_lists_the_claims_the_ledger_reads_it_for() {
    // Every analysis the committed ledger names for a claim (its data, measurements and
    // notes) lists that claim, so its `--help` and the README say so.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/claims/claims.csv");
    let ledger = std::fs::read_to_string(path).unwrap();
    let mut rows = ledger.lines().skip(1).peekable();
    let mut checked = 0;
    while let Some(first) = rows.next() {
        // A row may span lines inside quotes; it starts with the claim's number.
        let mut row = first.to_string();
        while rows.peek().is_some_and(|l| {
            l.split(',')
                .next()
                .and_then(|c| c.parse::<u8>().ok())
                .is_none()
        }) {
            row.push('\n');
            row.push_str(rows.next().unwrap());
        }
        let claim: u8 = row.split(',').next().unwrap().parse().unwrap();
        for a in REGISTRY.iter().filter(|a| a.id != "claims") {
            // A table path (`warmup/searches.csv`), or a hyphenated id as a word (`finite-width
            // map`): a plain word such as "warmup" is also English.
            let named = row.contains(&format!("{}/", a.id))
                || (a.id.contains('-') && row.contains(&format!("{} ", a.id)));
            if named {
                assert!(
                    a.claims.contains(&claim),
                    "the ledger reads {} for claim {claim}, which it does not list",
                    a.id
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 15,
        "only {checked} pairs found: the ledger's form changed?"
    );
}
