//! In a git checkout, the cited file is checked against what git holds, so a resealed
//! manifest (the file and its sha256 both edited) is caught; where git cannot tell, the report
//! says so and claims nothing.

use super::{THEORY, edit_manifest, edit_theory, effective_depth_copy, normscope, refused};
use std::path::Path;
use std::process::Command;

/// Runs git in `dir` (a fixed identity, no user configuration) and returns its output.
fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// A git checkout of the fixture whose first commit holds `committed`; returns it and the
/// commit.
fn repo(committed: &[&str]) -> (tempfile::TempDir, String) {
    let dir = effective_depth_copy();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("README"), "fixture\n").unwrap();
    git(dir.path(), &["add", "README"]);
    if !committed.is_empty() {
        git(dir.path(), &[&["add"][..], committed].concat());
    }
    git(dir.path(), &["commit", "-q", "-m", "outputs"]);
    let commit = git(dir.path(), &["rev-parse", "HEAD"]);
    (dir, commit)
}

/// `cite` of the fixture, successful; its report.
fn cited(dir: &Path) -> String {
    let o = normscope(&THEORY, dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_resealed_manifest_is_changed_against_the_recorded_commit() {
    let (dir, commit) = repo(&["data/effective-depth/theory.csv"]);
    edit_manifest(dir.path(), |m| {
        m["source"]["git_commit"] = commit.clone().into()
    });
    let out = cited(dir.path());
    assert!(
        out.contains("as the commit wrote it (sha256 matches the manifest; git holds these bytes at the recorded commit (the manifest itself is not in git"),
        "{out}"
    );
    edit_theory(dir.path(), true);
    let err = refused(&normscope(&THEORY, dir.path()), 1);
    // HEAD (here the recorded commit too) is asked first.
    assert!(
        err.contains("CHANGED against the commit")
            && err.contains(&format!("HEAD {commit} holds other bytes")),
        "{err}"
    );
    let o = normscope(&[&THEORY[..], &["--allow-changed"]].concat(), dir.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("value: 500001.0")
            && out.contains("note    = {Commit ")
            && out.contains("MODIFIED after the commit: its sha256 matches the manifest, but"),
        "{out}"
    );
    assert!(!out.contains("as the commit wrote it"), "{out}");
}

#[test]
fn outputs_committed_after_their_commit_are_checked_at_head() {
    // The run's commit holds no outputs; the next commit holds them with their manifest, as
    // the repository commits data/.
    let (dir, first) = repo(&[]);
    edit_manifest(dir.path(), |m| {
        m["source"]["git_commit"] = first.clone().into()
    });
    git(dir.path(), &["add", "data"]);
    git(dir.path(), &["commit", "-q", "-m", "data"]);
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let out = cited(dir.path());
    assert!(
        out.contains(&format!(
            "as the commit wrote it (sha256 matches the manifest; git holds these bytes and this manifest at HEAD {head})"
        )),
        "{out}"
    );
    // Another commit named in the manifest: it no longer is the one HEAD holds.
    edit_manifest(dir.path(), |m| m["source"]["dirty"] = true.into());
    let err = refused(&normscope(&THEORY, dir.path()), 1);
    assert!(
        err.contains(&format!("HEAD {head} holds another manifest")),
        "{err}"
    );
    // A manifest that names the commit holding the outputs (so that the recorded commit has
    // these bytes) cannot flip its other fields: HEAD's manifest is asked first.
    git(dir.path(), &["checkout", "-q", "--", "data"]);
    edit_manifest(dir.path(), |m| {
        m["source"]["git_commit"] = head.clone().into();
        m["quick"] = (!m["quick"].as_bool().unwrap_or(false)).into();
    });
    let err = refused(&normscope(&THEORY, dir.path()), 1);
    assert!(
        err.contains(&format!("HEAD {head} holds another manifest")),
        "{err}"
    );
    git(dir.path(), &["checkout", "-q", "--", "data"]);
    edit_theory(dir.path(), true);
    let err = refused(&normscope(&THEORY, dir.path()), 1);
    assert!(
        err.contains(&format!(
            "HEAD {head} holds other bytes and HEAD {head} holds another manifest"
        )),
        "{err}"
    );
}

#[test]
fn what_git_cannot_check_is_said_and_not_claimed() {
    let (dir, _) = repo(&["data/effective-depth/theory.csv"]);
    let absent = "0123456789abcdef0123456789abcdef01234567";
    edit_manifest(dir.path(), |m| m["source"]["git_commit"] = absent.into());
    let out = cited(dir.path());
    assert!(
        out.contains(&format!(
            "not verified against the commit (the repository at {} does not hold commit {absent})",
            dir.path().canonicalize().unwrap().display()
        )),
        "{out}"
    );
    assert!(!out.contains("as the commit wrote it"), "{out}");
    // A resealed file cannot hide behind an absent or a null commit: HEAD is asked first.
    let manifest = dir.path().join("data/effective-depth/manifest.json");
    let sealed = std::fs::read(&manifest).unwrap();
    edit_theory(dir.path(), true);
    for commit in [serde_json::json!(absent), serde_json::Value::Null] {
        edit_manifest(dir.path(), |m| m["source"]["git_commit"] = commit.clone());
        let err = refused(&normscope(&THEORY, dir.path()), 1);
        assert!(err.contains("holds other bytes"), "{commit}: {err}");
    }
    git(dir.path(), &["checkout", "-q", "--", "data"]);
    std::fs::write(&manifest, sealed).unwrap();
    // Without git on the PATH.
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(THEORY)
        .current_dir(dir.path())
        .env("PATH", "")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("not verified against the commit (git is unavailable: "),
        "{out}"
    );
    // A run without git records no commit: nothing to check, nothing to check out.
    edit_manifest(dir.path(), |m| {
        m["source"] = serde_json::json!({"git_commit": null, "dirty": null});
    });
    let out = cited(dir.path());
    for part in [
        "not verified against the commit (the manifest records no commit)",
        "commit: unknown (the manifest records none)\n",
        "regenerate: cargo run --release -- reproduce",
        "note    = {Commit unknown; ",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    assert!(!out.contains("git checkout"), "{out}");
    // Outside a git checkout.
    let plain = effective_depth_copy();
    let out = cited(plain.path());
    assert!(
        out.contains("not verified against the commit (") && out.contains("is not a git checkout)"),
        "{out}"
    );
    assert!(!out.contains("as the commit wrote it"), "{out}");
}
