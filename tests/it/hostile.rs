//! A hostile user's inputs: names that try to reach a shell, input files
//! that are FIFOs or devices, output to closed pipes and full devices, seeds beyond i64,
//! negative numbers, scientific notation. Each case either does what was asked or is refused
//! with exit status 2 and one line naming the flag, and leaves nothing behind.

use crate::common;
use crate::common::normscope;
use std::path::Path;
use std::process::{Command, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_normscope"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Asserts a refusal: exit status 2 and one line on stderr containing `field`.
#[track_caller]
fn refused(o: &std::process::Output, field: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    // One error line (a `reproduce` may have said its first progress line before).
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line expected: {err:?}");
    assert!(
        err.ends_with('\n') && err.lines().last() == Some(lines[0]),
        "{err:?}"
    );
    assert!(lines[0].contains(field), "{field} not named: {err}");
    err
}

/// The write end of a pipe whose reader has gone: every write to it fails with EPIPE.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[cfg(unix)]
fn mkfifo(p: &Path) {
    normscope::numeric::sys::mkfifo(p).unwrap();
}

/// A stand-in for the normscope binary that records its arguments, one per line, in `log`.
fn recorder(dir: &Path, log: &Path) -> std::path::PathBuf {
    let p = dir.join("fake-normscope");
    std::fs::write(
        &p,
        format!(
            "#!/bin/bash\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p
}

#[test]
fn slurm_scripts_pass_hostile_names_as_data_and_refuse_newlines() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let log = root.join("args.log");
    let fake = recorder(root, &log);
    // Shell syntax in every path the scripts carry: none of it may run.
    let dir = root.join("w$(touch${IFS}PWNED1)`touch${IFS}PWNED2`;touch${IFS}PWNED3");
    let out = root.join("o $(touch PWNED4) `touch PWNED5` 'q' \"d\" ; touch PWNED6 #");
    let o = normscope(&[
        "slurm",
        "--only",
        "finite-width",
        "--quick",
        "--shards",
        "2",
        "--dir",
        dir.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
        "--binary",
        fake.to_str().unwrap(),
    ]);
    common::success_stdout(&o);
    for (script, task) in [("array.sbatch", Some("1")), ("merge.sbatch", None)] {
        let mut c = Command::new("bash");
        c.arg(dir.join(script)).current_dir(root);
        if let Some(i) = task {
            c.env("SLURM_ARRAY_TASK_ID", i);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let pwned: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("PWNED"))
        .collect();
    assert!(pwned.is_empty(), "the scripts ran {pwned:?}");
    let args = std::fs::read_to_string(&log).unwrap();
    let args: Vec<&str> = args.lines().collect();
    // The array task and the merge got the paths as single arguments, byte for byte.
    let shard1 = format!("{}/shard-1", dir.display());
    assert!(args.contains(&shard1.as_str()), "{args:?}");
    assert!(args.contains(&out.to_str().unwrap()), "{args:?}");
    // The #SBATCH lines all come before the first command (sbatch stops reading there).
    let merge = std::fs::read_to_string(dir.join("merge.sbatch")).unwrap();
    let lines: Vec<&str> = merge.lines().collect();
    let first_command = lines
        .iter()
        .position(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap();
    let last_sbatch = lines
        .iter()
        .rposition(|l| l.starts_with("#SBATCH"))
        .unwrap();
    assert!(last_sbatch < first_command, "{merge}");

    // A newline would end a comment and start a command: refused, nothing written.
    for (flag, value) in [
        ("--out-dir", "o\ntouch PWNED #"),
        ("--binary", "/x\ntouch PWNED"),
        ("--config", "c\n.toml"),
    ] {
        let d2 = root.join(format!("d{}", flag.trim_start_matches('-')));
        let mut args = vec![
            "slurm",
            "--only",
            "finite-width",
            "--quick",
            "--shards",
            "3",
            "--dir",
            d2.to_str().unwrap(),
        ];
        args.extend([flag, value]);
        let o = normscope(&args);
        if flag == "--config" {
            // The configuration is read (and refused) before any script is written.
            assert_eq!(o.status.code(), Some(2));
        } else {
            refused(&o, flag);
        }
        assert!(!d2.exists(), "{flag}: {} was written", d2.display());
    }
}

#[cfg(unix)]
#[test]
fn input_files_that_are_fifos_devices_or_too_large_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo.toml");
    mkfifo(&fifo);
    let big = t.path().join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(normscope::input::TEXT_CAP + 1).unwrap();
    for file in [fifo.as_path(), Path::new("/dev/zero"), big.as_path()] {
        let f = file.to_str().unwrap();
        let o = normscope(&["presets", "--placements", f]);
        refused(&o, f);
        let o = normscope(&["reproduce", "--quick", "--print-config", "--config", f]);
        refused(&o, f);
    }
}

#[cfg(unix)]
#[test]
fn a_lock_file_that_is_a_fifo_is_refused_not_waited_on() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    std::fs::create_dir(&out).unwrap();
    mkfifo(&out.join(".normscope.lock"));
    let o = normscope(&[
        "reproduce",
        "--quick",
        "--only",
        "expansion",
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    refused(&o, ".normscope.lock");
    assert!(!out.join("data").exists());
}

#[cfg(unix)]
#[test]
fn a_shard_file_replaced_by_a_fifo_or_device_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for i in 0..2 {
        let d = t.path().join(format!("s{i}"));
        let o = normscope(&[
            "reproduce",
            "--quick",
            "--only",
            "finite-width",
            "--shard",
            &format!("{i}/2"),
            "--out-dir",
            d.to_str().unwrap(),
        ]);
        common::success_stdout(&o);
        dirs.push(d);
    }
    let m = dirs[0].join("shard.json");
    let saved = std::fs::read(&m).unwrap();
    std::fs::remove_file(&m).unwrap();
    mkfifo(&m);
    let out = t.path().join("merged");
    let args = |out: &Path| {
        vec![
            "merge".to_string(),
            dirs[0].display().to_string(),
            dirs[1].display().to_string(),
            "--out-dir".into(),
            out.display().to_string(),
        ]
    };
    let run = |a: Vec<String>| bin().args(a).output().unwrap();
    refused(&run(args(&out)), "shard.json");
    // A units file replaced by a device.
    std::fs::remove_file(&m).unwrap();
    std::fs::write(&m, saved).unwrap();
    let units = std::fs::read_dir(&dirs[1])
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "bin"))
        .expect("a units file");
    std::fs::remove_file(&units).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &units).unwrap();
    refused(&run(args(&out)), "SHARD_DIRS");
    assert!(!out.join("data").exists());
}

#[test]
fn a_closed_pipe_ends_quietly_and_a_full_device_is_exit_1() {
    // `reproduce --list | head -1`: the reader goes away after one line.
    let o = bin()
        .args(["reproduce", "--list"])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.is_empty(), "{err}");
    assert_eq!(o.status.code(), Some(141), "{err}");
    if Path::new("/dev/full").exists() {
        let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
        for args in [
            &["reproduce", "--list"][..],
            &["reproduce", "--quick", "--print-config"],
        ] {
            // The environment failed, not the input: exit 1 with one line, as `--help`.
            let o = bin().args(args).stdout(full().unwrap()).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert!(
                err.lines().count() == 1
                    && err.starts_with("error: cannot write to standard output"),
                "{args:?}: {err}"
            );
        }
        // An error that cannot be written is still exit 2, without a panic.
        let o = bin()
            .args(["theory", "--depth", "0"])
            .stderr(full().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        // A run whose messages cannot be written leaves no output folder.
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("o");
        let o = bin()
            .args(["reproduce", "--quick", "--only", "expansion", "--out-dir"])
            .arg(&out)
            .stderr(full().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(!out.exists(), "{} was left behind", out.display());
    }
}

#[test]
fn seeds_take_the_whole_u64_range() {
    let o = normscope(&[
        "reproduce",
        "--quick",
        "--seed",
        "18446744073709551615",
        "--print-config",
    ]);
    let text = common::success_stdout(&o);
    assert!(text.contains("18446744073709551615"), "{text}");
    // A user's seed does not reach keys the user never set, whatever its value.
    let o = normscope(&["reproduce", "--quick", "--seed", "1", "--list"]);
    common::success_stdout(&o);
    let o = normscope(&[
        "slurm",
        "--only",
        "finite-width",
        "--quick",
        "--shards",
        "2",
        "--seed",
        "9223372036854775808",
        "--dir",
        tempfile::tempdir()
            .unwrap()
            .path()
            .join("w")
            .to_str()
            .unwrap(),
    ]);
    common::success_stdout(&o);
}

#[test]
fn negative_numbers_are_values_that_get_a_message_about_their_flag() {
    for (args, field) in [
        (&["theory", "--layers", "-1"][..], "--layers"),
        (&["train", "--seeds", "-1"], "--seeds"),
        (&["theory", "--depth", "-3"], "--depth"),
    ] {
        let o = normscope(args);
        let err = refused(&o, field);
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}

#[test]
fn huge_parameters_are_refused_naming_their_flag() {
    for (flag, value) in [("--beta", "1e300"), ("--beta", "1.35e154")] {
        let o = normscope(&["theory", "--preset", "deepnorm", flag, value]);
        refused(&o, flag);
    }
    // The largest accepted value computes.
    let o = normscope(&["theory", "--preset", "deepnorm", "--beta", "1.34e154"]);
    common::success_stdout(&o);
}

#[test]
fn an_out_path_in_a_missing_folder_names_out() {
    let o = normscope(&["theory", "--out", "no-such-folder-here/"]);
    refused(&o, "--out");
}

#[cfg(unix)]
#[test]
fn a_replaced_output_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("t.csv");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = normscope(&["theory", "--depth", "4", "--out", out.to_str().unwrap()]);
    common::success_stdout(&o);
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_ne!(std::fs::read(&out).unwrap(), b"old");
}

#[test]
fn mc_says_why_a_metric_has_no_rows() {
    let o = normscope(&[
        "mc",
        "--tokens",
        "1",
        "--metrics",
        "corr",
        "--depth",
        "2",
        "--samples",
        "4",
    ]);
    let err = refused(&o, "--tokens");
    assert!(err.contains("corr"), "{err}");
}

#[test]
fn placement_expressions_take_scientific_notation() {
    let t = tempfile::tempdir().unwrap();
    let file = |file: &str, branch: &str| {
        let p = t.path().join(format!("{file}.toml"));
        std::fs::write(
            &p,
            format!(
                "[[placement]]\nname = \"sci\"\n[[placement.segment]]\ninput = \"layer\"\nbranch = \"{branch}\"\n"
            ),
        )
        .unwrap();
        p
    };
    // The same scale written two ways gives the same bytes.
    for (sci, plain) in [
        ("1e-3", "0.001"),
        ("2.5e1", "25"),
        ("1E3", "1000"),
        ("2.5e+1*l", "25*l"),
        ("1e-3^2", "0.000001"),
    ] {
        let a = file("a", sci);
        let b = file("b", plain);
        let run = |p: &Path| {
            let o = normscope(&[
                "theory",
                "--placements",
                p.to_str().unwrap(),
                "--preset",
                "sci",
                "--depth",
                "6",
                "--metrics",
                "eff_depth,grad_sq",
            ]);
            common::success_stdout(&o)
        };
        assert_eq!(run(&a), run(&b), "{sci} against {plain}");
    }
}

#[cfg(unix)]
#[test]
fn an_interrupted_out_never_lands_and_leaves_no_temporary_file() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("t.csv");
    // Large enough that the temporary file is being written for a while (367 MB).
    let mut child = bin()
        .args([
            "theory",
            "--preset",
            "pre",
            "--depth",
            "2000000",
            "--layers",
            "all",
            "--metrics",
            "stream_sq,grad_sq",
            "--out",
        ])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let temps = || {
        std::fs::read_dir(t.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".normscope-"))
            .count()
    };
    // Wait for the temporary file (the rows are computed first), then interrupt.
    let started = std::time::Instant::now();
    while temps() == 0 && child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed().as_secs() < 600,
            "no temporary file appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        // The write finished before the signal: the file landed whole, nothing else is left.
        eprintln!("the write finished before the signal");
        assert_eq!(temps(), 0);
        return;
    }
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.exists(), "an interrupted --out landed");
    assert_eq!(temps(), 0, "the temporary file was left behind");
}

#[test]
fn second_review_cases_are_refused_naming_their_flag() {
    for (args, field) in [
        (&["theory", "--layers", "-1,-2"][..], "--layers"),
        (&["train", "--seeds", "-2..=5"], "--seeds"),
        (&["theory", "--lambda", "1e-400"], "--lambda"),
        (&["theory", "--gain", "1e400"], "--gain"),
        (
            &[
                "slurm",
                "--only",
                "expansion",
                "--shards",
                "2",
                "--dir",
                "d#x",
            ],
            "--dir",
        ),
        (
            &[
                "slurm",
                "--only",
                "expansion",
                "--shards",
                "2",
                "--partition",
                "HetJob",
            ],
            "--partition",
        ),
    ] {
        refused(&normscope(args), field);
    }
    // A range that ends at u64::MAX (its end + 1 overflows).
    let o = normscope(&[
        "train",
        "--preset",
        "pre",
        "--seeds",
        "18446744073709551614..=18446744073709551615",
        "--steps",
        "1",
    ]);
    let text = common::success_stdout(&o);
    assert!(text.contains("18446744073709551615"), "{text}");
}

#[test]
fn help_and_notes_that_cannot_be_written_fail_and_write_nothing() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full on this system");
        return;
    }
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    // Help and version that cannot be written: one line naming standard output, exit 1
    // (the environment failed, not the input). The analysis binaries end through the same
    // `exit::parse_error`.
    for args in [&["--help"][..], &["--version"], &["theory", "--help"]] {
        let o = bin().args(args).stdout(full()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: cannot write to standard output: "),
            "{args:?}: {err}"
        );
    }
    let o = bin()
        .args(["theory", "--help"])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(141));
    // A table with notes (values beyond f64) whose notes cannot be said lands no file (exit
    // 1: the environment failed, the input was good).
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("zz.csv");
    let o = bin()
        .args([
            "theory", "--preset", "pre", "--gain", "1e308", "--depth", "64", "--out",
        ])
        .arg(&out)
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !out.exists(),
        "the table landed although its notes were lost"
    );
    // Nor does a slurm folder.
    let dir = t.path().join("sf");
    let o = bin()
        .args([
            "slurm",
            "--only",
            "expansion",
            "--quick",
            "--shards",
            "2",
            "--dir",
        ])
        .arg(&dir)
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!dir.exists());
}

/// A configuration file's bad values are named, not echoed whole: a 15 MiB unknown key is
/// shown by its first 80 characters and its length, and a seed that is not one says what a
/// seed is and what it got (serde's "did not match any variant of untagged enum" before).
#[test]
fn config_values_are_named_shortened_and_explained() {
    let t = tempfile::tempdir().unwrap();
    let big = t.path().join("big.toml");
    std::fs::write(&big, format!("[expansion]\n{} = 1\n", "k".repeat(15 << 20))).unwrap();
    let seed = t.path().join("seed.toml");
    std::fs::write(&seed, "[finetune]\nrewire_seed = -1\n").unwrap();
    let run = |config: &Path, only: &str| {
        bin()
            .args(["reproduce", "--quick", "--only", only, "--config"])
            .arg(config)
            .arg("--out-dir")
            .arg(t.path().join("out"))
            .output()
            .unwrap()
    };
    let err = refused(&run(&big, "expansion"), "unknown key");
    assert!(err.len() < 400, "{} bytes: {}", err.len(), &err[..400]);
    assert!(
        err.contains(&format!(
            "`{}... (15728640 bytes)` in [expansion]",
            "k".repeat(80)
        )),
        "{err}"
    );
    let err = refused(
        &run(&seed, "finetune"),
        "[finetune] rewire_seed: expected a non-negative integer < 2^64",
    );
    assert!(err.trim_end().ends_with("got -1"), "{err}");
    assert!(!err.contains("untagged"), "{err}");
    assert!(!t.path().join("out").exists());
}
