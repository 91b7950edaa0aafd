//! The manifest values `cite` prints or acts on, each checked before use: a file could have
//! been edited by anyone, and what `cite` prints is pasted into shells and bibliographies. A
//! value that is not as `reproduce` writes it is refused (exit status 2), naming its field
//! and the manifest.

use super::invocation::arguments;
use crate::commands::visible::{hidden, visible};
use normscope_core::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// What a manifest records about one of its outputs, checked.
pub(super) struct Recorded {
    /// `source.git_commit`: 40 hexadecimal digits, or `None` where the run had no git.
    pub commit: Option<String>,
    /// `source.dirty`: whether the code had uncommitted changes (`None`: not recorded).
    pub dirty: Option<bool>,
    /// `quick`: whether the run used the reduced defaults.
    pub quick: bool,
    /// `crate_version`: a semantic version.
    pub version: String,
    /// `invocation`: the arguments after `normscope`, none with a [`hidden`] character.
    pub args: Vec<String>,
    /// `outputs[<file>]`: the sha256 of the file, 64 hexadecimal digits.
    pub sha256: String,
}

/// Whether `text` is `n` hexadecimal digits.
fn hex(text: &str, n: usize) -> bool {
    text.len() == n && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `v` is a semantic version (`MAJOR.MINOR.PATCH`, then optionally `-PRERELEASE` and
/// `+BUILD`, dot-separated identifiers of ASCII letters, digits and `-`).
fn semver(v: &str) -> bool {
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let number = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let (rest, build) = v.split_once('+').unwrap_or((v, ""));
    let (core, pre) = rest.split_once('-').unwrap_or((rest, ""));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && (!rest.contains('-') || pre.split('.').all(ident))
        && (!v.contains('+') || build.split('.').all(ident))
}

/// The JSON value as an error message shows it: a string as it is, anything else as JSON.
fn shown(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

impl Recorded {
    /// The values of `manifest` (read from `path`) for its output `rel`, which it lists.
    pub(super) fn read(manifest: &Value, path: &Path, rel: &str) -> Result<Self> {
        let within = |accepted: &str| format!("{accepted}, in {}", visible(path.display()));
        let commit = match &manifest["source"]["git_commit"] {
            Value::Null => None,
            Value::String(c) if hex(c, 40) => Some(c.to_ascii_lowercase()),
            v => {
                return Err(Error::invalid(
                    "git_commit",
                    shown(v),
                    within("a git commit (exactly 40 hexadecimal digits), or null"),
                ));
            }
        };
        let dirty = match &manifest["source"]["dirty"] {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            v => {
                return Err(Error::invalid(
                    "dirty",
                    shown(v),
                    within("true or false (or null where the run had no git)"),
                ));
            }
        };
        let quick = match &manifest["quick"] {
            Value::Bool(b) => *b,
            v => return Err(Error::invalid("quick", shown(v), within("true or false"))),
        };
        let version = match &manifest["crate_version"] {
            Value::String(v) if semver(v) => v.clone(),
            v => {
                return Err(Error::invalid(
                    "crate_version",
                    shown(v),
                    within("a semantic version such as 0.1.0"),
                ));
            }
        };
        let v = &manifest["invocation"];
        let args = v
            .as_str()
            .and_then(arguments)
            .filter(|args| !args.iter().any(|a| a.chars().any(hidden)))
            .ok_or_else(|| {
                Error::invalid(
                    "invocation",
                    shown(v),
                    within(
                        "a normscope command line as reproduce records it, without control \
                         characters",
                    ),
                )
            })?;
        let sha256 = match &manifest["outputs"][rel] {
            Value::String(h) if hex(h, 64) => h.to_ascii_lowercase(),
            Value::Null => {
                return Err(Error::invalid(
                    "PATH",
                    visible(rel),
                    within("a file its analysis's manifest lists among its outputs"),
                ));
            }
            v => {
                return Err(Error::invalid(
                    "outputs",
                    shown(v),
                    within(&format!(
                        "the sha256 of {} (64 hexadecimal digits)",
                        visible(rel)
                    )),
                ));
            }
        };
        Ok(Recorded {
            commit,
            dirty,
            quick,
            version,
            args,
            sha256,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_versions() {
        for v in [
            "0.1.0",
            "1.22.333",
            "1.0.0-rc.1",
            "1.0.0+build.5",
            "1.0.0-a-b+c",
        ] {
            assert!(semver(v), "{v}");
        }
        for v in [
            "",
            "0.1",
            "0.1.0.0",
            "01.1.0",
            "0.1.0-",
            "0.1.0+",
            "0.1.0},\ntitle = {PWNED",
            "0.1.0-a..b",
            "v0.1.0",
        ] {
            assert!(!semver(v), "{v:?}");
        }
    }

    #[test]
    fn forged_values_are_refused_naming_their_field() {
        let good = serde_json::json!({
            "source": {"git_commit": "a".repeat(40), "dirty": false},
            "quick": true,
            "crate_version": "0.1.0",
            "invocation": "normscope reproduce --quick",
            "outputs": {"data/x/t.csv": "b".repeat(64)},
        });
        let path = Path::new("data/x/manifest.json");
        let r = Recorded::read(&good, path, "data/x/t.csv").unwrap();
        assert_eq!((r.dirty, r.quick, r.args.len()), (Some(false), true, 2));
        for (pointer, value, field) in [
            (
                "/source/git_commit",
                "abc\nfile: forged".into(),
                "git_commit",
            ),
            (
                "/source/git_commit",
                Value::from("g".repeat(40)),
                "git_commit",
            ),
            ("/source/dirty", "no".into(), "dirty"),
            ("/quick", Value::Null, "quick"),
            (
                "/crate_version",
                "0.1.0},\n  title = {PWNED".into(),
                "crate_version",
            ),
            (
                "/invocation",
                "normscope reproduce\nrm -rf x".into(),
                "invocation",
            ),
            ("/invocation", "sh -c id".into(), "invocation"),
            ("/outputs/data~1x~1t.csv", "x".into(), "outputs"),
        ] {
            let mut bad = good.clone();
            *bad.pointer_mut(pointer).unwrap() = value;
            let err = Recorded::read(&bad, path, "data/x/t.csv").err().unwrap();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("invalid {field} = "))
                    && text.ends_with(path.to_str().unwrap()),
                "{text}"
            );
            assert_eq!(text.lines().count(), 1, "{text}");
        }
    }
}
