//! A standalone `--out` and its provenance sidecar `FILE.manifest.json` land together or not
//! at all (`normscope_core::output::pair`), for `theory`, `mc` and `plot`: a sidecar path that
//! is a folder or a symlink, or whose name is too long, is refused before anything is written,
//! and the old file and its old sidecar stay as they were; a run that succeeds leaves a sidecar
//! whose sha256 is its file's.

use std::path::Path;
use std::process::{Command, Output};

/// The three commands, each as its arguments with `--out` last: `theory`, `mc` and `plot`,
/// with the file name each writes (a plot's ends in `.svg`).
fn commands() -> [(Vec<String>, &'static str); 3] {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/stream-and-gradients/theory.csv");
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    [
        (
            args(&[
                "theory",
                "--preset",
                "pre,post",
                "--depth",
                "16",
                "--layers",
                "all",
                "--metrics",
                "stream_sq",
                "--out",
            ]),
            "t.csv",
        ),
        (
            args(&[
                "mc",
                "--preset",
                "pre",
                "--depth",
                "2",
                "--samples",
                "4",
                "--layers",
                "last",
                "--metrics",
                "stream_sq",
                "--out",
            ]),
            "t.csv",
        ),
        (
            args(&[
                "plot",
                table.to_str().unwrap(),
                "--x",
                "layer",
                "--y",
                "value",
                "--by",
                "preset",
                "--facet",
                "metric",
                "--where",
                "depth=256",
                "--out",
            ]),
            "t.svg",
        ),
    ]
}

/// Runs `args` followed by `out`, from `dir`.
fn run(args: &[String], out: &str, dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .arg(out)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

/// Asserts a refusal of `--out` before anything ran: exit status 2 and one line on standard
/// error, naming `--out` and `named`.
#[track_caller]
fn refused_out(o: &Output, named: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let line = err.lines().next().unwrap_or_default();
    assert!(line.starts_with("error: invalid --out = "), "{err}");
    assert!(line.contains(named), "{named} not named: {err}");
}

/// Writes an old `out` and its old sidecar into `dir`; returns the sidecar's name.
fn old_pair(dir: &Path, out: &str) -> String {
    let side = format!("{out}.manifest.json");
    std::fs::write(dir.join(out), "old bytes").unwrap();
    std::fs::write(dir.join(&side), "old sidecar").unwrap();
    side
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_folder_at_the_sidecar_path_is_refused_and_the_old_file_stays() {
    for (args, out) in commands() {
        let dir = tempfile::tempdir().unwrap();
        let side = format!("{out}.manifest.json");
        std::fs::write(dir.path().join(out), "old bytes").unwrap();
        std::fs::create_dir(dir.path().join(&side)).unwrap();
        let o = run(&args, out, dir.path());
        refused_out(&o, &side);
        assert!(String::from_utf8_lossy(&o.stderr).contains("a folder"));
        assert_eq!(
            std::fs::read(dir.path().join(out)).unwrap(),
            b"old bytes",
            "{}",
            args[0]
        );
        assert!(dir.path().join(&side).is_dir());
        assert_eq!(names(dir.path()), [out.to_string(), side]);
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_at_the_sidecar_path_is_refused_and_its_target_untouched() {
    for (args, out) in commands() {
        let dir = tempfile::tempdir().unwrap();
        let side = format!("{out}.manifest.json");
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, "someone else's").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(&side)).unwrap();
        let o = run(&args, out, dir.path());
        refused_out(&o, &side);
        assert!(String::from_utf8_lossy(&o.stderr).contains("a symlink"));
        assert_eq!(std::fs::read(&target).unwrap(), b"someone else's");
        let link = std::fs::symlink_metadata(dir.path().join(&side)).unwrap();
        assert!(link.file_type().is_symlink(), "{}", args[0]);
        assert_eq!(names(dir.path()), ["elsewhere.json".to_string(), side]);
    }
}

#[test]
fn an_out_name_whose_sidecar_name_is_too_long_is_refused_writing_nothing() {
    for (args, out) in commands() {
        let dir = tempfile::tempdir().unwrap();
        // 249 bytes: the file's own name fits NAME_MAX (255), its sidecar's (263) does not.
        let ext = Path::new(out).extension().unwrap().to_str().unwrap();
        let long = format!("{}.{ext}", "a".repeat(248 - ext.len()));
        assert_eq!(long.len(), 249);
        let o = run(&args, &long, dir.path());
        refused_out(&o, "--out");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("(this one has 249)"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(names(dir.path()).is_empty(), "{}", args[0]);
    }
}

/// How a sidecar was made unreplaceable, and the undoing.
#[cfg(unix)]
type Unreplaceable<'a> = (&'static str, Box<dyn FnOnce() + 'a>);

/// Makes `dir`'s old sidecar `side` impossible to replace: immutable (`chattr +i`, where this
/// user may set it: the rename over it fails), else a read-only folder (the temporary files
/// cannot be made). Returns how, or `None` if neither bites here, and the undoing.
#[cfg(unix)]
fn unreplaceable<'a>(dir: &'a Path, side: &'a Path) -> Option<Unreplaceable<'a>> {
    use std::os::unix::fs::PermissionsExt;
    let chattr = move |flag: &str| {
        Command::new("chattr")
            .arg(flag)
            .arg(side)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mode = move |m: u32| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(m));
    if chattr("+i") {
        let undo = move || assert!(chattr("-i"));
        return Some(("immutable sidecar", Box::new(undo)));
    }
    mode(0o555).unwrap();
    if std::fs::write(dir.join("probe"), "").is_ok() {
        mode(0o755).unwrap();
        return None;
    }
    let undo = move || mode(0o755).unwrap();
    Some(("read-only folder", Box::new(undo)))
}

#[cfg(unix)]
#[test]
fn a_sidecar_that_cannot_be_replaced_leaves_the_old_pair() {
    for (args, out) in commands() {
        let dir = tempfile::tempdir().unwrap();
        let side = old_pair(dir.path(), out);
        let side_path = dir.path().join(&side);
        let Some((how, undo)) = unreplaceable(dir.path(), &side_path) else {
            eprintln!("skipped: neither chattr +i nor a read-only folder stops this user");
            return;
        };
        let o = run(&args, out, dir.path());
        undo();
        let err = String::from_utf8_lossy(&o.stderr);
        let case = format!("{} with a {how}: {err}", args[0]);
        assert_eq!(o.status.code(), Some(1), "{case}");
        assert!(err.contains(&side), "{case}");
        assert_eq!(
            std::fs::read(dir.path().join(out)).unwrap(),
            b"old bytes",
            "{case}"
        );
        assert_eq!(
            std::fs::read(dir.path().join(&side)).unwrap(),
            b"old sidecar",
            "{case}"
        );
        assert_eq!(names(dir.path()), [out.to_string(), side], "{case}");
    }
}

#[test]
fn a_replaced_pair_has_the_new_files_sha256_and_no_temporary_file() {
    for (args, out) in commands() {
        let dir = tempfile::tempdir().unwrap();
        let side = old_pair(dir.path(), out);
        let o = run(&args, out, dir.path());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let file = std::fs::read(dir.path().join(out)).unwrap();
        assert_ne!(file, b"old bytes");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(&side)).unwrap()).unwrap();
        assert_eq!(json["output"], out);
        assert_eq!(
            json["sha256"],
            normscope::analyses::manifest::sha256(&file),
            "{}",
            args[0]
        );
        assert_eq!(names(dir.path()), [out.to_string(), side]);
    }
}
