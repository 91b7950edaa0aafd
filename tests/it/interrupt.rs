//! Outputs are complete and consistent, or untouched. Fault injection on
//! `normscope reproduce`: stopped at every staging step, killed with SIGKILL after several
//! delays, interrupted with SIGINT, a second writer on a locked folder, and a full disk. After
//! each, every manifest present must describe its folders exactly; after a following complete
//! run no staging folder or temporary file may remain.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use normscope::output::{lock, staging};

/// Two fast analyses with figures (with [`config`]).
const ONLY: &str = "output-change,effective-depth";

/// Every analysis but `claims` (which needs the others' default tables), fast with [`config`]:
/// about a second in all.
const MOST: &str = "expansion,branch-weights,effective-depth,stream-and-gradients,adjacent-layers,output-change,deepnorm-alpha,rank-collapse,branch-gain";

/// The analyses of [`MOST`] with Monte Carlo settings.
const MC: [&str; 8] = [
    "branch-weights",
    "effective-depth",
    "stream-and-gradients",
    "adjacent-layers",
    "output-change",
    "deepnorm-alpha",
    "rank-collapse",
    "branch-gain",
];

/// One of two configurations with different outputs: `b` changes every Monte Carlo seed and
/// drops one of `effective-depth`'s path depths (so a different set of files). Alternating
/// them makes a mix of two runs in one folder detectable. Both make `effective-depth` fast.
fn config(dir: &Path, b: bool) -> PathBuf {
    let path = dir.join(if b { "b.toml" } else { "a.toml" });
    let depths = if b { "16" } else { "16, 64" };
    let mut text = format!(
        "[effective-depth]\npath_depths = [{depths}]\nmc_path_depth = 16\nmax_depth = 1000\nmc_depths = [4, 16]\n"
    );
    for id in MC {
        text.push_str(&format!("[{id}.mc]\nseed = {}\n", u8::from(b)));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn reproduce(out: &Path, only: &str, config: Option<&Path>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normscope"));
    cmd.args(["reproduce", "--quick", "--only", only, "--out-dir"])
        .arg(out);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

fn succeed(cmd: Command) {
    let o = run(cmd);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every file under `root`, relative path -> bytes (the lock file excluded).
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.file_name().unwrap() != lock::FILE {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn is_temp(name: &str) -> bool {
    name.starts_with(staging::TEMP_PREFIX) || name.contains(".tmp.")
}

/// Checks every `data/<id>/manifest.json` under `root` against its folders: each listed file
/// exists with that sha256, and `data/<id>/` and `figures/<id>/` hold nothing else but the
/// manifest. Also that no temporary file is in any output folder (staging folders in `root`
/// itself are allowed: a killed run leaves them). Returns the ids with a manifest.
fn check_manifests(root: &Path, when: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for kind in ["data", "figures"] {
        for id in names(&root.join(kind)) {
            for name in names(&root.join(kind).join(&id)) {
                assert!(!is_temp(&name), "{when}: {kind}/{id}/{name} left behind");
            }
        }
    }
    for id in names(&root.join("data")) {
        let Ok(bytes) = std::fs::read(root.join("data").join(&id).join("manifest.json")) else {
            continue;
        };
        let m: serde_json::Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{when}: data/{id}/manifest.json: {e}"));
        let listed: BTreeMap<String, String> = m["outputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        for (rel, hash) in &listed {
            let bytes = std::fs::read(root.join(rel))
                .unwrap_or_else(|_| panic!("{when}: data/{id}/manifest.json lists {rel}, absent"));
            assert_eq!(&sha(&bytes), hash, "{when}: sha256 of {rel}");
        }
        for kind in ["data", "figures"] {
            for name in names(&root.join(kind).join(&id)) {
                let rel = format!("{kind}/{id}/{name}");
                assert!(
                    rel == format!("data/{id}/manifest.json") || listed.contains_key(&rel),
                    "{when}: {rel} is not in data/{id}/manifest.json"
                );
            }
        }
        ids.insert(id);
    }
    ids
}

/// After a complete run: manifests consistent, every output folder has its manifest, nothing
/// temporary anywhere under `root`, and the folder is not left locked.
fn check_complete(root: &Path, ids: &[&str]) {
    let with_manifest = check_manifests(root, "after a complete run");
    let expected: BTreeSet<String> = ids.iter().map(|s| s.to_string()).collect();
    assert_eq!(with_manifest, expected);
    for kind in ["data", "figures"] {
        for id in names(&root.join(kind)) {
            assert!(expected.contains(&id), "{kind}/{id} without its manifest");
        }
    }
    for rel in snapshot(root).keys() {
        let name = Path::new(rel).file_name().unwrap().to_string_lossy();
        assert!(
            !is_temp(&name) && !rel.starts_with(staging::STAGE_PREFIX),
            "{rel} left behind"
        );
    }
    for name in names(root) {
        assert!(
            !name.starts_with(staging::STAGE_PREFIX),
            "{name} left behind"
        );
    }
    let f = std::fs::File::open(root.join(lock::FILE)).unwrap();
    f.try_lock().expect("the folder is unlocked after a run");
}

fn stages(root: &Path) -> Vec<String> {
    names(root)
        .into_iter()
        .filter(|n| n.starts_with(staging::STAGE_PREFIX))
        .collect()
}

/// Polls until a staging folder of analysis `id` exists in `root` (the run has the lock and
/// has started that analysis), or the child has exited (then panics with its stderr).
fn wait_for_stage(child: &mut Child, root: &Path, id: &str) {
    let prefix = format!("{}{id}-", staging::STAGE_PREFIX);
    loop {
        if stages(root).iter().any(|s| s.starts_with(&prefix)) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("ended ({status}) before staging {id}: {err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Stops a run at each of its staging steps in turn (creating a stage, each staged write, each
/// rename that moves outputs into place), each time over the complete outputs of the other
/// configuration: every manifest present describes its folders, and the stopped run leaves
/// nothing the next complete run does not remove.
#[test]
fn stopped_at_every_staging_step_the_manifests_match_their_folders() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before");
    succeed(reproduce(&before, ONLY, Some(&config(dir.path(), false))));
    let narrow = config(dir.path(), true);
    let mut steps = 0;
    for n in 1.. {
        let out = dir.path().join(format!("at{n}"));
        copy_dir(&before, &out);
        let mut cmd = reproduce(&out, ONLY, Some(&narrow));
        cmd.env(staging::FAULT_ENV, n.to_string());
        let o = run(cmd);
        let when = format!("stopped before step {n}");
        check_manifests(&out, &when);
        if o.status.success() {
            check_complete(&out, &["effective-depth", "output-change"]);
            break;
        }
        assert_eq!(
            o.status.code(),
            Some(staging::FAULT_EXIT),
            "{when}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        succeed(reproduce(&out, ONLY, Some(&narrow)));
        check_complete(&out, &["effective-depth", "output-change"]);
        std::fs::remove_dir_all(&out).unwrap();
        steps = n;
    }
    // Two stage creations, at least two writes each, the manifests, and renames.
    assert!(steps >= 10, "only {steps} staging steps");
}

/// Kills (SIGKILL) runs after several delays, alternating the two configurations over the same
/// folder, and checks every manifest after each; a final complete run leaves no staging folder
/// or temporary file.
#[test]
fn killed_runs_leave_every_manifest_matching_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (i, ms) in [30u64, 60, 100, 150, 200, 300, 400, 500, 600, 800, 1100]
        .into_iter()
        .enumerate()
    {
        let mut child = reproduce(&out, MOST, Some(&config(dir.path(), i % 2 == 1)))
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        signal(&child, "-KILL");
        child.wait().unwrap();
        check_manifests(&out, &format!("killed after {ms} ms"));
    }
    succeed(reproduce(&out, MOST, Some(&config(dir.path(), false))));
    let ids: Vec<&str> = MOST.split(',').collect();
    check_complete(&out, &ids);
}

/// SIGINT while an analysis computes (`effective-depth` with its quick defaults: seconds):
/// exit status 130, its staging folder removed, the analysis before it in place and complete,
/// its own folders not created.
#[test]
fn sigint_removes_the_staging_folder_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = reproduce(&out, "expansion,effective-depth", None)
        .spawn()
        .unwrap();
    wait_for_stage(&mut child, &out, "effective-depth");
    signal(&child, "-INT");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(stages(&out), Vec::<String>::new());
    assert_eq!(
        check_manifests(&out, "after SIGINT"),
        BTreeSet::from(["expansion".to_string()])
    );
    assert!(!out.join("data/effective-depth").exists());
    assert!(!out.join("figures/effective-depth").exists());
}

/// A second writer into a folder whose lock is held is refused with one line naming the folder,
/// exit status 1, and writes nothing; once the lock is free the same command runs.
#[test]
fn a_second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let held = std::fs::File::create(out.join(lock::FILE)).unwrap();
    held.try_lock().unwrap();
    let o = run(reproduce(&out, "expansion", None));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // Its first line (said before the folder is touched), then one line of error.
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.lines().nth(1).unwrap().starts_with("error: "), "{err}");
    assert!(
        err.contains(&out.display().to_string())
            && err.contains("another normscope run is writing into this folder"),
        "{err}"
    );
    assert_eq!(names(&out), BTreeSet::from([lock::FILE.to_string()]));
    drop(held);
    succeed(reproduce(&out, "expansion", None));
    check_complete(&out, &["expansion"]);

    // Two real runs: the second starts while the first is writing.
    let mut first = reproduce(&out, "expansion,effective-depth", None)
        .spawn()
        .unwrap();
    wait_for_stage(&mut first, &out, "effective-depth");
    let o = run(reproduce(&out, "expansion", None));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("another normscope run"), "{err}");
    let o = first.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_complete(&out, &["effective-depth", "expansion"]);
}

/// A write that fails for lack of space (simulated with a file size limit of 32 KiB: EFBIG,
/// "File too large") names the file by its final path and exits 1; the analysis that failed
/// keeps its earlier outputs, every manifest matches its folders, and no staging folder is
/// left.
#[test]
fn a_full_disk_names_the_file_and_leaves_the_outputs_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    succeed(reproduce(&out, ONLY, Some(&config(dir.path(), false))));
    let before = snapshot(&out);
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -f 64; trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_normscope"))
        .args(["reproduce", "--quick", "--only", ONLY, "--out-dir"])
        .arg(&out)
        .arg("--config")
        .arg(config(dir.path(), true));
    let o = run(cmd);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let line = err.lines().last().unwrap();
    let prefix = format!("error: {}/", out.display());
    assert!(
        line.starts_with(&prefix) && line.contains("File too large"),
        "{line}"
    );
    let named = line[prefix.len()..].split(':').next().unwrap();
    let failed = match named.split('/').collect::<Vec<_>>()[..] {
        ["data" | "figures", id, _file] => id,
        _ => panic!("not an output file: {line}"),
    };
    assert_eq!(stages(&out), Vec::<String>::new());
    assert_eq!(check_manifests(&out, "after a full disk").len(), 2);
    let after = snapshot(&out);
    let of_failed = |s: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        s.iter()
            .filter(|(rel, _)| rel.split('/').nth(1) == Some(failed))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert!(!of_failed(&before).is_empty());
    assert!(of_failed(&before) == of_failed(&after), "{failed} changed");
}
