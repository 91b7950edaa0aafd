//! The Python package's generated type stub (`python/normscope/__init__.pyi`) is the one the
//! command line's definition gives now ([`normscope::app::python::stub`]); its keyword
//! arguments are the commands' flags. Regenerate with
//! `NORMSCOPE_BLESS=1 cargo test --release --test it -- python::`. The package itself is
//! tested from Python (`python/tests`, run by `.ci/run`).

use normscope::app::python::{FUNCTIONS, Kind, params, stub};

const STUB: &str = "python/normscope/__init__.pyi";

#[test]
fn the_committed_stub_is_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(STUB);
    let now = stub();
    if std::env::var("NORMSCOPE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &now).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "{STUB} is stale: regenerate it with NORMSCOPE_BLESS=1 cargo test --release --test it -- python::"
    );
}

#[test]
fn every_flag_of_a_command_is_a_keyword_argument() {
    use clap::CommandFactory;
    let cli = normscope::app::cli::Cli::command();
    for f in FUNCTIONS {
        let Some(c) = f.command else { continue };
        let sub = cli.find_subcommand(c).unwrap();
        let longs: Vec<&str> = sub
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| !matches!(*l, "help" | "version"))
            .collect();
        let ps = params(c);
        for l in &longs {
            let listed = ps.iter().any(|p| p.flag == format!("--{l}"));
            let skipped = f.skip.contains(&l.replace('-', "_").as_str());
            assert!(
                listed != skipped,
                "{c} --{l}: listed {listed}, skipped {skipped}"
            );
        }
        assert!(
            ps.iter().all(|p| !p.help.is_empty()),
            "{c}: a flag without help"
        );
    }
}

#[test]
fn kinds_follow_the_flags_parsers() {
    let kind = |c: &str, n: &str| params(c).into_iter().find(|p| p.name == n).unwrap().kind;
    assert_eq!(kind("compare", "finite_width"), Kind::FlagOrInt);
    assert_eq!(kind("theory", "finite_width"), Kind::Int);
    assert_eq!(kind("train", "lr"), Kind::Float);
    assert_eq!(kind("train", "dump_init"), Kind::Path);
    assert_eq!(kind("reproduce", "quick"), Kind::Flag);
    assert_eq!(kind("theory", "lambda_"), Kind::Float);
}

#[test]
fn every_function_has_a_docstring_with_an_example() {
    for f in FUNCTIONS {
        let d = normscope::app::python::docstring(f.name).unwrap();
        assert!(
            d.contains("\nExamples\n--------\n>>> import normscope"),
            "{}",
            f.name
        );
        assert!(
            d.lines().all(|l| l.len() <= 100 || l.starts_with(">>>")),
            "{}",
            f.name
        );
    }
}
