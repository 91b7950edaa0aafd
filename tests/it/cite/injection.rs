//! The `regenerate:` line is shell code a reader pastes: every argument it takes from a
//! manifest reaches the shell as one word, as recorded, and nothing in it runs.

use super::{THEORY, edit_manifest, effective_depth_copy, normscope, refused};
use normscope::analyses::commands::cite::shell_quote;
use normscope::analyses::manifest::invocation_of;
use std::path::Path;
use std::process::Command;

/// Arguments a hostile file name or manifest could hold.
const HOSTILE: [&str; 12] = [
    "c;touch${IFS}PWNED;#.toml",
    "$(touch PWNED)",
    "`touch PWNED`",
    "it's",
    "a \"quoted\" word",
    "back\\slash",
    "'$(touch PWNED)'",
    "",
    "*",
    "~",
    "line\nbreak; touch PWNED",
    "-n",
];

/// The words `sh` makes of `words` (shell text), read back NUL-separated, run in `dir`.
fn sh_words(dir: &Path, script: &str) -> Vec<String> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut words: Vec<String> = out.split('\0').map(str::to_string).collect();
    assert_eq!(words.pop().as_deref(), Some(""), "{out:?}");
    words
}

/// The arguments the shell gives `cargo` when it runs `line` (`git` and `cargo` stubbed out)
/// in an empty folder, which must stay empty.
fn cargo_argv(line: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let stubs = "git() { :; }\ncargo() { printf '%s\\0' \"$@\"; }\n";
    let words = sh_words(dir.path(), &format!("{stubs}{line}"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{line}: the line created {left:?}");
    words
}

/// The `regenerate:` line of a `cite` report.
fn regenerate_line(out: &str) -> &str {
    out.lines()
        .find_map(|l| l.strip_prefix("regenerate: "))
        .unwrap_or_else(|| panic!("{out}"))
}

#[test]
fn quoted_words_read_back_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    for arg in HOSTILE {
        let words = sh_words(
            dir.path(),
            &format!("printf '%s\\0' {}", shell_quote::quote(arg)),
        );
        assert_eq!(words, [arg], "{}", shell_quote::quote(arg));
    }
    let all = sh_words(
        dir.path(),
        &format!("printf '%s\\0' {}", shell_quote::join(&HOSTILE)),
    );
    assert_eq!(all, HOSTILE);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_hostile_config_name_does_not_run_from_the_regenerate_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = "c;touch${IFS}PWNED;#.toml";
    std::fs::write(dir.path().join(config), "").unwrap();
    let args = [
        "reproduce",
        "--quick",
        "--only",
        "expansion",
        "--config",
        config,
        "--out-dir",
        "out",
    ];
    let o = normscope(&args, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = normscope(
        &[
            "cite",
            "out/data/expansion/expansion.csv",
            "--where",
            "preset=pre",
            "--where",
            "source=0",
            "--where",
            "depth=4",
            "--where",
            "branch=linear",
        ],
        dir.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = regenerate_line(&out);
    assert!(
        line.contains("--config 'c;touch${IFS}PWNED;#.toml'"),
        "{line}"
    );
    let mut expected = vec!["run", "--release", "--"];
    expected.extend(&args[..7]);
    expected.push("DIR");
    assert_eq!(cargo_argv(line), expected);
}

#[test]
fn recorded_arguments_reach_the_shell_as_one_word_each() {
    let dir = effective_depth_copy();
    let printable: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .filter(|a| !a.contains('\n'))
        .collect();
    let mut args = vec!["reproduce".to_string(), "--config".into()];
    args.extend(printable.iter().map(|a| a.to_string()));
    let line = invocation_of(args.clone());
    edit_manifest(dir.path(), |m| m["invocation"] = line.into());
    let o = normscope(&THEORY, dir.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut expected = vec!["run".to_string(), "--release".into(), "--".into()];
    expected.extend(args);
    assert_eq!(cargo_argv(regenerate_line(&out)), expected);
    // A control character would break the report's one line per value: refused.
    for line in [
        invocation_of(["reproduce".to_string(), "a\nb".into()]),
        "normscope reproduce\ntouch PWNED".to_string(),
        "sh -c 'touch PWNED'".to_string(),
    ] {
        edit_manifest(dir.path(), |m| m["invocation"] = line.clone().into());
        let err = refused(&normscope(&THEORY, dir.path()), 2);
        assert!(err.contains("invalid invocation = "), "{err}");
        assert!(err.contains("manifest.json"), "{err}");
    }
}
