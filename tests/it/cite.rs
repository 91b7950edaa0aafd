//! `normscope cite`: the help's examples run on the committed data and print the number, the
//! file's state against its manifest, the commit, the regeneration command and a BibTeX entry
//! whose group author BibTeX keeps whole; a changed file is refused (cited only with
//! `--allow-changed`, marked modified); an ambiguous or empty filter and a path outside
//! `data/`/`figures/` are refused naming the field. The submodules turn hostile files on it:
//! shell injection through the regenerate line, forged manifest values, and files checked
//! against git.

mod against_git;
mod forgery;
mod injection;

use std::path::Path;
use std::process::{Command, Output};

fn normscope(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `cite` of the one exact number the effective-depth fixture is cited at.
const THEORY: [&str; 6] = [
    "cite",
    "data/effective-depth/theory.csv",
    "--where",
    "preset=post",
    "--where",
    "depth=1000000",
];

/// A temporary output root holding copies of the committed `data/effective-depth/theory.csv`
/// and its manifest (no git checkout).
fn effective_depth_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data/effective-depth");
    std::fs::create_dir_all(&data).unwrap();
    for f in ["manifest.json", "theory.csv"] {
        std::fs::copy(root().join("data/effective-depth").join(f), data.join(f)).unwrap();
    }
    dir
}

/// Rewrites the effective-depth manifest under `dir` with `edit`.
fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("data/effective-depth/manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

/// Edits one value of the fixture's table (500000.0 becomes 500001.0) and, if `reseal`, writes
/// the edited file's sha256 into its manifest, as a forger would.
fn edit_theory(dir: &Path, reseal: bool) {
    let table = dir.join("data/effective-depth/theory.csv");
    let text = std::fs::read_to_string(&table).unwrap();
    let edited = text.replace(",500000.0,", ",500001.0,");
    assert_ne!(text, edited);
    if reseal {
        write_resealed(dir, &edited);
    } else {
        std::fs::write(&table, &edited).unwrap();
    }
}

/// Writes `text` as the fixture's table under `dir` and its sha256 into the manifest, as a
/// forger would (no git checkout there to catch it).
fn write_resealed(dir: &Path, text: &str) {
    std::fs::write(dir.join("data/effective-depth/theory.csv"), text).unwrap();
    let hash = normscope::analyses::manifest::sha256(text.as_bytes());
    edit_manifest(dir, |m| {
        m["outputs"]["data/effective-depth/theory.csv"] = hash.into();
    });
}

/// The error of a refused run: its status, its one line of standard error, and no output.
fn refused(o: &Output, status: i32) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(status), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

#[test]
fn every_cite_help_example_runs_on_the_committed_data() {
    let help = String::from_utf8(normscope(&["cite", "--help"], root()).stdout).unwrap();
    let examples: Vec<&str> = help
        .lines()
        .filter_map(|l| l.strip_prefix("  normscope "))
        .collect();
    assert_eq!(examples.len(), 3, "{help}");
    for ex in examples {
        let o = normscope(&ex.split_whitespace().collect::<Vec<_>>(), root());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for part in [
            "file: ",
            "commit: ",
            "regenerate: git checkout ",
            "cargo run --release -- reproduce",
        ] {
            assert!(out.contains(part), "{ex}: {out}");
        }
        assert!(
            out.contains("author  = {{The normscope developers}}"),
            "{out}"
        );
        assert!(out.contains("as the commit wrote it"), "{ex}: {out}");
    }
    // The number as stored, with the interval columns named.
    let o = normscope(
        &[
            "cite",
            "data/norms/verdicts.csv",
            "--where",
            "norm=batch",
            "--column",
            "post_x0_factor",
        ],
        root(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("(post_x0_factor_ci_low, post_x0_factor_ci_high)"),
        "{out}"
    );
}

#[test]
fn a_changed_table_is_refused_unless_allowed_and_bad_requests_are_refused() {
    let dir = effective_depth_copy();
    edit_theory(dir.path(), false);
    let err = refused(&normscope(&THEORY, dir.path()), 1);
    assert!(
        err.contains("CHANGED since the commit") && err.contains("--allow-changed"),
        "{err}"
    );
    let o = normscope(&[&THEORY[..], &["--allow-changed"]].concat(), dir.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("value: 500001.0 (exact: the closed form)") && out.contains("CHANGED"),
        "{out}"
    );
    assert!(
        out.contains("MODIFIED after the commit: its sha256 differs from the manifest's}"),
        "{out}"
    );
    for (args, field) in [
        (
            &[
                "cite",
                "data/effective-depth/theory.csv",
                "--where",
                "preset=post",
            ][..],
            "invalid --where",
        ),
        (
            &[
                "cite",
                "data/effective-depth/theory.csv",
                "--where",
                "preset=nothing",
            ][..],
            "invalid --where",
        ),
        (
            &[
                "cite",
                "data/effective-depth/theory.csv",
                "--where",
                "presett=post",
            ][..],
            "did you mean 'preset'",
        ),
        (&["cite", "theory.csv"][..], "invalid PATH"),
        (
            &["cite", "figures/effective-depth/x.pdf", "--where", "a=b"][..],
            "invalid",
        ),
    ] {
        let o = normscope(args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(field) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn the_bibtex_matches_citation_cff() {
    use normscope::analyses::commands::cite::{CITATION_TITLE, CITATION_YEAR};
    let cff = std::fs::read_to_string(root().join("CITATION.cff")).unwrap();
    assert!(
        cff.contains(&format!("date-released: {CITATION_YEAR}-")),
        "year"
    );
    assert!(
        cff.contains(&format!("title: \"{CITATION_TITLE}\"")),
        "title"
    );
}

#[test]
fn paths_are_resolved_and_must_be_in_the_manifest() {
    // `..` and a relative path from inside the analysis's folder name the same file.
    let up = normscope(
        &[
            "cite",
            "data/norms/../norms/verdicts.csv",
            "--where",
            "norm=rms",
            "--column",
            "eff_depth_pre",
        ],
        root(),
    );
    let inside = normscope(
        &[
            "cite",
            "verdicts.csv",
            "--where",
            "norm=rms",
            "--column",
            "eff_depth_pre",
        ],
        &root().join("data/norms"),
    );
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    assert_eq!(up.stdout, inside.stdout);
    // The Parquet twin gives the same number.
    let parquet = normscope(
        &[
            "cite",
            "data/norms/verdicts.parquet",
            "--where",
            "norm=rms",
            "--column",
            "eff_depth_pre",
        ],
        root(),
    );
    let first = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(first(&parquet), first(&up));
    // Keys differ between two numbers of one commit; the note is escaped for LaTeX.
    let out = String::from_utf8_lossy(&up.stdout);
    assert!(out.contains("eff\\_depth\\_pre"), "{out}");
    let other = normscope(
        &[
            "cite",
            "data/norms/verdicts.csv",
            "--where",
            "norm=layer",
            "--column",
            "eff_depth_pre",
        ],
        root(),
    );
    let key = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("@software{"))
            .unwrap()
            .to_string()
    };
    assert_ne!(key(&up), key(&other));
    // A file the manifest does not list is refused.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data/norms");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(
        root().join("data/norms/manifest.json"),
        data.join("manifest.json"),
    )
    .unwrap();
    std::fs::copy(
        root().join("data/norms/verdicts.csv"),
        data.join("extra.csv"),
    )
    .unwrap();
    let o = normscope(
        &["cite", "data/norms/extra.csv", "--where", "norm=rms"],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("lists among its outputs"), "{err}");
}

#[test]
fn a_symlinked_folder_cannot_borrow_another_manifest() {
    // data/effective-depth/link/.. is data/effective-depth to a lexical reading, but the system
    // follows the link to elsewhere/deep and its `..` to elsewhere, where a forged copy of the
    // table lies under no analysis's folder: it is that file that would be read.
    let dir = effective_depth_copy();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("deep")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("deep"),
        dir.path().join("data/effective-depth/link"),
    )
    .unwrap();
    let text = std::fs::read_to_string(dir.path().join("data/effective-depth/theory.csv")).unwrap();
    std::fs::write(
        elsewhere.join("theory.csv"),
        text.replace(",500000.0,", ",1.0,"),
    )
    .unwrap();
    let mut args = THEORY;
    args[1] = "data/effective-depth/link/../theory.csv";
    let err = refused(&normscope(&args, dir.path()), 2);
    assert!(
        err.contains("invalid PATH") && err.contains("data/<analysis>/"),
        "{err}"
    );
    // The same path without the link is the table itself.
    args[1] = "data/effective-depth/../effective-depth/theory.csv";
    let o = normscope(&args, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_table_too_large_to_cite_is_refused_before_it_is_parsed() {
    use normscope::analyses::commands::table_bounds::MAX_TABLE_CELLS;
    let dir = effective_depth_copy();
    // A resealed table (its manifest names its sha256, no git checkout to catch it) of one
    // cell more than the cap: refused as too large, not parsed.
    let big = format!(
        "preset,depth\n{}",
        "post,1\n".repeat(MAX_TABLE_CELLS as usize / 2)
    );
    write_resealed(dir.path(), &big);
    let err = refused(&normscope(&THEORY, dir.path()), 2);
    assert!(
        err.contains("invalid PATH") && err.contains("cells (rows times columns) to cite"),
        "{err}"
    );
}

/// A table's column names are printed escaped in `cite`'s and `plot`'s errors: a header
/// holding an escape sequence and a right-to-left override cannot recolour or reorder the
/// terminal's text.
#[test]
fn column_names_from_the_file_are_escaped_in_errors() {
    let dir = effective_depth_copy();
    let table = dir.path().join("data/effective-depth/theory.csv");
    let text = std::fs::read_to_string(&table).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let evil = format!(
        "{header},ev\u{202e}il\u{1b}[31mRED\n{}",
        rest.replace('\n', ",x\n")
    );
    write_resealed(dir.path(), &evil);
    for extra in [&["--column", "nope"][..], &["--where", "nope=1"]] {
        let err = refused(&normscope(&[&THEORY[..], extra].concat(), dir.path()), 2);
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{202e}'),
            "{err:?}"
        );
        assert!(err.contains("ev\\u{202e}il\\u{1b}[31mRED"), "{err}");
    }
    let o = normscope(
        &[
            "plot",
            "data/effective-depth/theory.csv",
            "--x",
            "nope",
            "--y",
            "value",
            "--out",
            "f.svg",
        ],
        dir.path(),
    );
    let err = refused(&o, 2);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{202e}'),
        "{err:?}"
    );
}
