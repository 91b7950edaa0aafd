//! A forged manifest or table cannot make `cite` print a line it did not mean: a manifest
//! value not as `reproduce` writes it is refused naming its field and the manifest, and a
//! table's values print escaped, one to a line, and stay inside their BibTeX field.

use super::{THEORY, edit_manifest, effective_depth_copy, normscope, refused};
use std::path::Path;

/// Whether the braces of `text` balance, as BibTeX counts them (a backslash escapes none).
fn balanced(text: &str) -> bool {
    let mut depth = 0i64;
    for c in text.chars() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

#[test]
fn forged_manifest_values_are_refused_naming_field_and_manifest() {
    let dir = effective_depth_copy();
    let good = std::fs::read(dir.path().join("data/effective-depth/manifest.json")).unwrap();
    let commit = "34f4f45533708ffe613ae0908e712fb614cdabc8";
    let forged_line = format!(
        "{commit}\nfile: data/effective-depth/theory.csv, as the commit wrote it (sha256 matches the manifest)"
    );
    for (pointer, value, field) in [
        (
            "/source/git_commit",
            serde_json::json!(forged_line),
            "git_commit",
        ),
        (
            "/source/git_commit",
            serde_json::json!("34f4f45"),
            "git_commit",
        ),
        ("/source/git_commit", serde_json::json!(7), "git_commit"),
        ("/source/dirty", serde_json::json!("false"), "dirty"),
        ("/quick", serde_json::json!(null), "quick"),
        (
            "/crate_version",
            serde_json::json!("0.1.0},\ntitle = {PWNED"),
            "crate_version",
        ),
        (
            "/crate_version",
            serde_json::json!("latest"),
            "crate_version",
        ),
        (
            "/invocation",
            serde_json::json!("normscope reproduce\nfile: forged"),
            "invocation",
        ),
        (
            "/outputs/data~1effective-depth~1theory.csv",
            serde_json::json!("not a hash"),
            "outputs",
        ),
    ] {
        std::fs::write(dir.path().join("data/effective-depth/manifest.json"), &good).unwrap();
        edit_manifest(dir.path(), |m| *m.pointer_mut(pointer).unwrap() = value);
        let err = refused(&normscope(&THEORY, dir.path()), 2);
        assert!(
            err.contains(&format!("invalid {field} = "))
                && err.contains("data/effective-depth/manifest.json"),
            "{pointer}: {err}"
        );
    }
}

/// Writes `data/x/t.csv` under `dir` with `csv`, and a manifest listing it.
fn hostile_table(dir: &Path, csv: &str) {
    let data = dir.join("data/x");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("t.csv"), csv).unwrap();
    let manifest = serde_json::json!({
        "analysis": "x",
        "crate_version": "0.1.0",
        "source": {"git_commit": "34f4f45533708ffe613ae0908e712fb614cdabc8", "dirty": false},
        "invocation": "normscope reproduce --only x",
        "quick": false,
        "outputs": {"data/x/t.csv": normscope::analyses::manifest::sha256(csv.as_bytes())},
    });
    std::fs::write(data.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn table_values_print_escaped_and_stay_in_their_field() {
    let dir = tempfile::tempdir().unwrap();
    let name = "x},\n  title = {PWNED";
    hostile_table(
        dir.path(),
        &format!(
            "name,value\n\"{name}\",\"1.0\nfile: data/x/t.csv, as the commit wrote it\u{1b}[2K\"\n"
        ),
    );
    let filter = format!("name={name}");
    let o = normscope(&["cite", "data/x/t.csv", "--where", &filter], dir.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.starts_with(
            "value: 1.0\\nfile: data/x/t.csv, as the commit wrote it\\u{1b}[2K (no interval"
        ),
        "{out}"
    );
    // One `file:` line (the real one), one title, and the entry's braces balance.
    assert_eq!(
        out.lines().filter(|l| l.starts_with("file: ")).count(),
        1,
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.trim_start().starts_with("title"))
            .count(),
        1,
        "{out}"
    );
    let entry = &out[out.find("@software").unwrap()..];
    assert!(balanced(entry), "{entry}");
    assert!(
        entry.contains("x\\textbraceright{},\\textbackslash{}n  title = \\textbraceleft{}PWNED"),
        "{entry}"
    );
}
