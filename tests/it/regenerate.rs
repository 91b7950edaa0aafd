//! Regenerating at HEAD changes no committed byte. The analyses whose full run takes seconds
//! are rerun, full size, into a copy of their committed `data/<id>/` and `figures/<id>/`;
//! every file must come out identical, `manifest.json` included (a manifest names the commit
//! that last changed its outputs: `normscope::analyses::manifest::keep`). A code change that
//! changes these outputs fails here until the data are regenerated and committed with it.

use crate::common::{normscope, output_files, success_stdout};
use std::path::{Path, PathBuf};

/// Analyses whose full run is short (seconds on a 2-core machine): the exact expansion and
/// two closed-form-and-Monte-Carlo sweeps.
const QUICK_IN_FULL: [&str; 3] = ["expansion", "branch-weights", "deepnorm-alpha"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Why the committed bytes cannot be expected here, if they cannot: a manifest records the
/// toolchain (a different rustc or target rewrites it), and the Monte Carlo tables' f64 bits are
/// matrixmultiply's `dgemm` with its FMA kernel, which the committed data were made with.
fn why_not_comparable() -> Option<String> {
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo().join("data/expansion/manifest.json")).unwrap(),
    )
    .unwrap();
    let here = normscope::analyses::manifest::Build::current();
    if m["build"]["rustc"] != here.rustc || m["build"]["target"] != here.target {
        return Some(format!(
            "the committed data were built with {} ({}), this test with {} ({})",
            m["build"]["rustc"], m["build"]["target"], here.rustc, here.target
        ));
    }
    #[cfg(target_arch = "x86_64")]
    if !(std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("fma")) {
        return Some("this CPU lacks AVX and FMA, so dgemm's last bits differ".into());
    }
    #[cfg(not(target_arch = "x86_64"))]
    return Some("not x86-64: dgemm's kernel, and so its last bits, differ".into());
    None
}

#[test]
fn regenerating_at_head_changes_no_committed_byte() {
    if let Some(why) = why_not_comparable() {
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for id in QUICK_IN_FULL {
        for kind in ["data", "figures"] {
            let committed = repo().join(kind).join(id);
            if committed.is_dir() {
                copy_dir(&committed, &tmp.path().join(kind).join(id));
            }
        }
    }
    let before = output_files(tmp.path());
    assert!(
        before.keys().any(|k| k.ends_with("manifest.json")),
        "no committed manifests copied"
    );
    let out = tmp.path().to_str().unwrap();
    success_stdout(&normscope(&[
        "reproduce",
        "--only",
        &QUICK_IN_FULL.join(","),
        "--out-dir",
        out,
    ]));
    let after = output_files(tmp.path());
    for (rel, bytes) in &before {
        let now = after
            .get(rel)
            .unwrap_or_else(|| panic!("{rel}: committed, not written at HEAD"));
        assert!(
            now == bytes,
            "{rel}: regenerating at HEAD changed it; regenerate the data and commit them \
             with the code (cargo run --release -- reproduce)"
        );
    }
    for rel in after.keys() {
        let listed = QUICK_IN_FULL.iter().any(|id| {
            rel.starts_with(&format!("data/{id}/")) || rel.starts_with(&format!("figures/{id}/"))
        });
        assert!(
            !listed || before.contains_key(rel),
            "{rel}: written at HEAD, not committed"
        );
    }
}
