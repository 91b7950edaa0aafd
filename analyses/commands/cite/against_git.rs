//! Whether git holds the cited file as it is, so that a resealed manifest (the file and its
//! sha256 both edited) is caught. Checked only where the output root is a git checkout (it
//! has a `.git`): git runs with fixed arguments, no shell, and none of the caller's `GIT_*`
//! variables (which could point it at another repository).
//!
//! HEAD is asked first, whatever the manifest's commit field says: the file differs if HEAD
//! holds it, or its manifest, with other bytes (it was edited, resealed, or its run is not
//! committed yet), and is as git holds it if HEAD holds both these bytes and this manifest.
//! Only where HEAD holds neither is the recorded commit asked: it differs if the commit holds
//! other bytes, and is as git holds it if the commit has these bytes at its path (the outputs
//! of a run are committed after the commit that wrote them, which then holds an older version
//! of them, or none); a commit that is absent, unknown or null leaves it unverified.

use crate::commands::visible::visible;
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
    commit: Option<&str>,
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
    // HEAD first, whatever the manifest names: a commit field pointed elsewhere (absent,
    // null, another commit's) must not hide what the checkout itself holds.
    let head = git(root, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
    let head = String::from_utf8_lossy(&head.stdout)
        .trim()
        .to_ascii_lowercase();
    let head = (!head.is_empty() && head.bytes().all(|b| b.is_ascii_hexdigit())).then_some(head);
    let mut differs = Vec::new();
    if let Some(head) = &head {
        let f = blob(root, head, file.0, file.1)?;
        let manifest_at_head = blob(root, head, manifest.0, manifest.1)?;
        if (f, manifest_at_head) == (Blob::Same, Blob::Same) {
            return Ok(Verdict::Matches(format!(
                "git holds these bytes and this manifest at HEAD {head}"
            )));
        }
        for (b, what) in [(f, "other bytes"), (manifest_at_head, "another manifest")] {
            if b == Blob::Other {
                differs.push(format!("HEAD {head} holds {what}"));
            }
        }
    }
    if !differs.is_empty() {
        return Ok(Verdict::Differs(differs.join(" and ")));
    }
    let Some(commit) = commit else {
        return Ok(Verdict::Unverified("the manifest records no commit".into()));
    };
    let known = git(root, &["cat-file", "-e", &format!("{commit}^{{commit}}")])?;
    if !known.status.success() {
        return Ok(Verdict::Unverified(format!(
            "the repository at {} does not hold commit {commit}",
            visible(root.display())
        )));
    }
    Ok(match blob(root, commit, file.0, file.1)? {
        Blob::Same => Verdict::Matches(
            "git holds these bytes at the recorded commit (the manifest itself is not in git: its \
             other fields are as the file states them)"
                .into(),
        ),
        Blob::Other => Verdict::Differs("the recorded commit holds other bytes".into()),
        Blob::Absent => {
            Verdict::Unverified("git holds it neither at the recorded commit nor at HEAD".into())
        }
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
    if std::fs::symlink_metadata(root.join(".git")).is_err() {
        return Verdict::Unverified(format!("{} is not a git checkout", visible(root.display())));
    }
    ask(root, commit, file, manifest)
        .unwrap_or_else(|e| Verdict::Unverified(format!("git is unavailable: {}", visible(e))))
}
