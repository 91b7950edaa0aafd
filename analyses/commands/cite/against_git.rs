//! Whether git holds the cited file as it is, so that a resealed manifest (the file and its
//! sha256 both edited) is caught. Checked only where the output root is a git checkout (it
//! has a `.git`): git runs with fixed arguments, no shell, and none of the caller's `GIT_*`
//! variables (which could point it at another repository).
//!
//! The file is as git holds it if the recorded commit has these bytes at its path, or if HEAD
//! has both these bytes and this manifest (the outputs of a run are committed after the
//! commit that wrote them, which therefore holds an older version of them, or none). It
//! differs if either commit holds it, or HEAD its manifest, with other bytes: it was edited,
//! or its run is not committed yet.

use super::visible::visible;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What git says of the cited file.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// The file is as git holds it, and where.
    Matches(String),
    /// Git holds it, or its manifest, with other bytes, and where.
    Differs(String),
    /// Not checked, and why.
    Unverified(String),
}

/// What git holds at one path of one commit, compared with the bytes on disk.
#[derive(Clone, Copy, PartialEq)]
enum Blob {
    /// The same bytes.
    Same,
    /// Other bytes (or not a file).
    Other,
    /// Nothing at that path.
    Absent,
}

/// Runs git in `root` with `args`; an error if git cannot be run at all.
fn git(root: &Path, args: &[&str]) -> std::io::Result<Output> {
    let mut cmd = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.arg("--no-replace-objects")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
}

/// What commit `rev` holds at `rel`, compared with `bytes` (read only when its size is theirs).
fn blob(root: &Path, rev: &str, rel: &str, bytes: &[u8]) -> std::io::Result<Blob> {
    let spec = format!("{rev}:{rel}");
    let size = git(root, &["cat-file", "-s", &spec])?;
    if !size.status.success() {
        return Ok(Blob::Absent);
    }
    if String::from_utf8_lossy(&size.stdout).trim() != bytes.len().to_string() {
        return Ok(Blob::Other);
    }
    let out = git(root, &["cat-file", "blob", &spec])?;
    Ok(if out.status.success() && out.stdout == bytes {
        Blob::Same
    } else {
        Blob::Other
    })
}

/// The verdict once git runs (see the module docs).
fn ask(
    root: &Path,
    commit: &str,
    file: (&str, &[u8]),
    manifest: (&str, &[u8]),
) -> std::io::Result<Verdict> {
    let repo = git(root, &["rev-parse", "--git-dir"])?;
    if !repo.status.success() {
        let why = String::from_utf8_lossy(&repo.stderr);
        return Ok(Verdict::Unverified(format!(
            "git reads no repository at {}: {}",
            visible(root.display()),
            visible(why.lines().next().unwrap_or_default().trim())
        )));
    }
    let known = git(root, &["cat-file", "-e", &format!("{commit}^{{commit}}")])?;
    if !known.status.success() {
        return Ok(Verdict::Unverified(format!(
            "the repository at {} does not hold commit {commit}",
            visible(root.display())
        )));
    }
    let at_commit = blob(root, commit, file.0, file.1)?;
    if at_commit == Blob::Same {
        return Ok(Verdict::Matches(
            "git holds these bytes at the recorded commit".into(),
        ));
    }
    let mut differs = Vec::new();
    if at_commit == Blob::Other {
        differs.push("the recorded commit holds other bytes".to_string());
    }
    let head = git(root, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let is_commit = !head.is_empty() && head.bytes().all(|b| b.is_ascii_hexdigit());
    if is_commit && head != commit {
        let f = blob(root, &head, file.0, file.1)?;
        let m = blob(root, &head, manifest.0, manifest.1)?;
        if (f, m) == (Blob::Same, Blob::Same) {
            return Ok(Verdict::Matches(format!(
                "git holds these bytes and this manifest at HEAD {head}"
            )));
        }
        for (b, what) in [(f, "other bytes"), (m, "another manifest")] {
            if b == Blob::Other {
                differs.push(format!("HEAD {head} holds {what}"));
            }
        }
    }
    Ok(if differs.is_empty() {
        Verdict::Unverified("git holds it neither at the recorded commit nor at HEAD".into())
    } else {
        Verdict::Differs(differs.join(" and "))
    })
}

/// What git says of the file `file` (its path from `root` and its bytes), whose manifest is
/// `manifest` (likewise) and names `commit`.
pub(super) fn check(
    root: &Path,
    commit: Option<&str>,
    file: (&str, &[u8]),
    manifest: (&str, &[u8]),
) -> Verdict {
    let Some(commit) = commit else {
        return Verdict::Unverified("the manifest records no commit".into());
    };
    if std::fs::symlink_metadata(root.join(".git")).is_err() {
        return Verdict::Unverified(format!("{} is not a git checkout", visible(root.display())));
    }
    ask(root, commit, file, manifest)
        .unwrap_or_else(|e| Verdict::Unverified(format!("git is unavailable: {}", visible(e))))
}
