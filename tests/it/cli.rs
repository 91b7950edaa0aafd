//! Runs the `normscope` binary on good and bad arguments: exit codes, one-line errors naming
//! the field, byte-identical output, and no output file created or truncated on failure.

use std::path::Path;
use std::process::{Command, Output};

fn normscope(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn theory_writes_the_tidy_schema_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "theory",
        "--preset",
        "pre,post,deepnorm",
        "--depth",
        "5",
        "--out",
        "a.csv",
    ];
    let o = normscope(&args, dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let a = std::fs::read(dir.path().join("a.csv")).unwrap();
    let header = String::from_utf8_lossy(&a)
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        header,
        "preset,label,engine,branch,init,g,norm,width,tokens,samples,seed,hidden_ratio,heads,alpha,beta,lambda,final_norm,q0,c0,eps,path_max,depth,layer,source,metric,value,stderr,ci_low,ci_high,n,missing"
    );
    assert_eq!(header, normscope::output::table::COLUMNS.join(","));
    // The closed form's settings: branch, init, g, norm, q0 and c0; no width, tokens, samples,
    // seed, hidden ratio, heads, eps or path cut-off under Xavier init and a linear branch, and
    // no overrides.
    let row = String::from_utf8_lossy(&a)
        .lines()
        .find(|l| l.starts_with("post,"))
        .unwrap()
        .to_string();
    assert!(
        row.starts_with("post,Post-LN,theory,linear,xavier,1.0,layer,,,,,,,,,,,1.0,0.0,,,5,"),
        "{row}"
    );
    let o = normscope(
        &[
            "theory",
            "--preset",
            "pre,post,deepnorm",
            "--depth",
            "5",
            "--out",
            "b.csv",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let b = std::fs::read(dir.path().join("b.csv")).unwrap();
    assert_eq!(a, b, "same inputs, same bytes");
    // The same rows go to stdout without --out.
    let o = normscope(
        &["theory", "--preset", "pre,post,deepnorm", "--depth", "5"],
        dir.path(),
    );
    assert_eq!(o.stdout, a);
}

#[test]
fn bad_input_exits_2_with_the_field_named_and_leaves_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("keep.csv");
    std::fs::write(&keep, "precious").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["theory", "--preset", "nope"], "preset"),
        (&["theory", "--depth", "0"], "--depth"),
        (&["theory", "--depth", "-3"], "--depth"),
        (&["theory", "--width", "-5"], "--width"),
        (&["theory", "--alpha", "NaN"], "--alpha"),
        (&["theory", "--alpha", "-1"], "--alpha"),
        (&["theory", "--beta", "inf"], "--beta"),
        (&["theory", "--gain", "-0.5"], "--gain"),
        (&["theory", "--q0", "0"], "--q0"),
        (&["theory", "--c0", "1.5"], "--c0"),
        (&["theory", "--metrics", "stream,corr"], "metric"),
        (&["theory", "--layers", "log:0"], "--layers"),
        (&["theory", "--depth", "4", "--layers", "1,9"], "--layers"),
        (&["theory", "--branch", "conv"], "branch"),
        (&["theory", "--init", "lecun"], "init"),
        (&["theory", "--tokens", "0"], "--tokens"),
        (&["expand", "--format", "pdf"], "format"),
        (&["expand", "--depth", "10001"], "--depth"),
        (&["expand", "--subs", "g=x"], "--subs"),
        (
            &["expand", "--branch", "uniform-attention"],
            "uniform-attention",
        ),
        (&["reproduce", "--only", "nope"], "analysis"),
        (&["mc", "--width", "0"], "--width"),
        (&["mc", "--tokens", "0"], "--tokens"),
        (
            &[
                "mc",
                "--branch",
                "attention",
                "--width",
                "30",
                "--heads",
                "4",
            ],
            "--heads",
        ),
        (&["mc", "--samples", "1"], "--samples"),
        (&["mc", "--branch", "conv"], "branch"),
        (&["mc", "--norm", "weight"], "norm"),
        (&["mc", "--eps", "-1"], "--eps"),
        (&["mc", "--alpha", "NaN"], "--alpha"),
        (&["mc", "--c0", "-0.5", "--tokens", "8"], "--c0"),
        (&["compare", "--branch", "attention"], "softmax attention"),
    ];
    for (args, field) in cases {
        for out in ["keep.csv", "new.csv"] {
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["--out", out]);
            if args[0] == "reproduce" {
                a.truncate(args.len());
            }
            let o = normscope(&a, dir.path());
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            let first = err.lines().next().unwrap_or("");
            assert!(
                first.starts_with("error:") && first.contains(field),
                "{args:?}: {first}"
            );
            assert_eq!(
                std::fs::read_to_string(&keep).unwrap(),
                "precious",
                "{args:?}"
            );
            assert!(
                !dir.path().join("new.csv").exists(),
                "{args:?} created a file"
            );
        }
    }
}

#[test]
fn expand_prints_the_seed_formula_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "expand", "--preset", "post", "--depth", "3", "--subs", "g=1,q0=1",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("C_{3,0} = 2^(-3/2) = 0.35355339059327"),
        "{text}"
    );
    assert!(text.contains("C_{3,3} = 2^(-1/2)"), "{text}");
    let o = normscope(
        &[
            "expand", "--preset", "deepnorm", "--depth", "2", "--branch", "relu-mlp", "--format",
            "latex",
        ],
        dir.path(),
    );
    let tex = String::from_utf8(o.stdout).unwrap();
    assert!(
        tex.contains("\\begin{align*}") && tex.contains("\\alpha^{2} + \\beta^{4} g"),
        "{tex}"
    );
    let o = normscope(
        &[
            "expand", "--preset", "pre", "--depth", "2", "--format", "csv",
        ],
        dir.path(),
    );
    let csv = String::from_utf8(o.stdout).unwrap();
    assert!(
        csv.starts_with("preset,depth,layer,source,expression,latex,value,missing\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 4);
}

#[test]
fn presets_lists_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(&["presets"], dir.path());
    let text = String::from_utf8(o.stdout).unwrap();
    for p in normscope::placement::REGISTRY {
        assert!(
            text.contains(p.name) && text.contains(p.source),
            "{}",
            p.name
        );
    }
}

#[test]
fn mc_runs_every_branch_and_fills_the_interval_columns() {
    let dir = tempfile::tempdir().unwrap();
    for b in normscope::branch::BranchKind::ALL.map(|k| k.name()) {
        let o = normscope(
            &[
                "mc",
                "--preset",
                "pre,post",
                "--depth",
                "4",
                "--branch",
                b,
                "--width",
                "32",
                "--tokens",
                "4",
                "--samples",
                "3",
                "--norm",
                "rms",
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{b}: {}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let row = text.lines().find(|l| l.contains(",grad_sq,")).unwrap();
        let f: Vec<&str> = row.split(',').collect();
        let at = |name: &str| f[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(f.len(), header.len(), "{row}");
        assert_eq!(at("missing"), "", "no missing reason: {row}");
        assert_eq!(at("engine"), "mc");
        assert_eq!(at("n"), "3", "n = samples: {row}");
        // Every setting a Monte Carlo run has is in the row.
        assert_eq!(
            [
                at("branch"),
                at("norm"),
                at("width"),
                at("tokens"),
                at("samples"),
                at("seed")
            ],
            [b, "rms", "32", "4", "3", "0"],
            "{row}"
        );
        let has_gain = normscope::branch::BranchKind::parse(b)
            .unwrap()
            .info()
            .closed_form;
        assert_eq!(
            at("g").is_empty(),
            !has_gain,
            "g only where it is defined: {row}"
        );
        let (v, lo, hi): (f64, f64, f64) = (
            at("value").parse().unwrap(),
            at("ci_low").parse().unwrap(),
            at("ci_high").parse().unwrap(),
        );
        assert!(lo <= v && v <= hi, "{row}");
    }
}

#[test]
fn help_lists_every_registered_metric_branch_and_preset() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["theory", "mc"] {
        let o = normscope(&[cmd, "--help"], dir.path());
        assert!(o.status.success());
        let help = String::from_utf8_lossy(&o.stdout);
        for m in normscope::metrics::Metric::ALL {
            assert!(help.contains(m.name()), "{cmd} --help lacks {}", m.name());
        }
        for k in normscope::branch::BranchKind::ALL {
            assert!(help.contains(k.name()), "{cmd} --help lacks {}", k.name());
        }
        for p in normscope::placement::REGISTRY {
            assert!(help.contains(p.name), "{cmd} --help lacks {}", p.name);
        }
        assert!(!help.contains("(soon)"), "{cmd} --help still says (soon)");
    }
}

#[test]
fn value_enums_take_their_aliases_and_refuse_others_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "theory",
        "--depth",
        "2",
        "--metrics",
        "stream_sq",
        "--layers",
        "last",
    ];
    let run = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        normscope(&a, dir.path())
    };
    let reference = run(&["--norm", "layer"]).stdout;
    for alias in ["ln", "layernorm"] {
        let o = run(&["--norm", alias]);
        assert!(o.status.success(), "{alias}: {}", stderr(&o));
        assert_eq!(o.stdout, reference, "--norm {alias} is --norm layer");
    }
    for (flag, bad) in [("--norm", "weight"), ("--final-norm", "maybe")] {
        let o = run(&[flag, bad]);
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(flag) && err.contains("possible values"),
            "{err}"
        );
    }
    let o = normscope(&["expand", "--depth", "1", "--format", "tex"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\\begin{align*}"));
    let o = normscope(&["expand", "--format", "pdf"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// Sizes that cannot fit in memory (issue "Robustness", part 1): each estimate is at least
/// 1e11 bytes (100 GB), so on the project's 24 GiB machines they are refused at once, before
/// anything is allocated (the whole test takes milliseconds; it would fail only on a machine
/// with over 100 GB free).
#[test]
fn sizes_that_cannot_fit_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[&[&str]] = &[
        &["mc", "--depth", "2", "--width", "100000", "--samples", "2"],
        &["mc", "--depth", "2", "--width", "8", "--tokens", "100000"],
        &[
            "mc",
            "--depth",
            "2",
            "--branch",
            "relu-mlp",
            "--hidden-ratio",
            "1000000",
        ],
        &["mc", "--depth", "1000000000000"],
        &[
            "mc",
            "--depth",
            "64",
            "--width",
            "8",
            "--samples",
            "1000000000",
        ],
        &["compare", "--depth", "2", "--width", "100000"],
        &["theory", "--depth", "1000000000000"],
    ];
    for args in cases {
        let mut a = args.to_vec();
        a.extend(["--out", "out.csv"]);
        let o = normscope(&a, dir.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("too large")
                && (err.contains("GB") || err.contains("hours") || err.contains("days"))
                && err.contains("lower"),
            "{args:?}: {err}"
        );
        assert!(
            !dir.path().join("out.csv").exists(),
            "{args:?} wrote a file"
        );
    }
    // A huge log:K selects every layer instead of overflowing.
    let o = normscope(
        &[
            "theory",
            "--depth",
            "8",
            "--metrics",
            "stream_sq",
            "--layers",
            "log:18446744073709551615",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        1 + 3 * 8
    );
    // The same sizes in a --config file are refused before any analysis writes.
    std::fs::write(
        dir.path().join("big.toml"),
        "[effective-depth.mc]\nwidth = 100000\n",
    )
    .unwrap();
    let o = normscope(
        &[
            "reproduce",
            "--only",
            "effective-depth",
            "--config",
            "big.toml",
            "--out-dir",
            "run",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("too large"), "{}", stderr(&o));
    assert!(
        !dir.path().join("run").exists(),
        "reproduce wrote before refusing"
    );
}

/// Issue "Robustness", part 4: every bad input exits 2 with one line naming the field, before
/// anything is written.
#[test]
fn bad_paths_values_and_flag_combinations_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    std::fs::write(dir.path().join("afile"), "x").unwrap();
    std::fs::write(dir.path().join("bin.toml"), [0xff, 0xfe, 0x00, 0x9c]).unwrap();
    std::fs::write(dir.path().join("claims.toml"), "[claims]\nx = 1\n").unwrap();
    std::fs::write(
        dir.path().join("neg.toml"),
        "[effective-depth.mc]\nsamples = -3\n",
    )
    .unwrap();
    let long = format!(
        "[effective-depth]\npresets = [\"{}\"]\n",
        "x".repeat(1_000_000)
    );
    std::fs::write(dir.path().join("long.toml"), long).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["theory", "--depth", "2", "--out", "adir"], "--out"),
        (
            &["theory", "--depth", "2", "--out", "missing/x.csv"],
            "--out",
        ),
        (
            &["reproduce", "--config", "nope.toml", "--out-dir", "r"],
            "nope.toml",
        ),
        (
            &["reproduce", "--config", "bin.toml", "--out-dir", "r"],
            "bin.toml",
        ),
        (
            &["reproduce", "--out-dir", "afile", "--only", "expansion"],
            "--out-dir",
        ),
        (&["theory", "--beta", "-inf"], "--beta"),
        (&["mc", "--eps", "-1e-5"], "--eps"),
        (&["mc", "--seed", "-1"], "--seed"),
        (&["theory", "--metrics", "all,foo"], "'foo'"),
        (&["expand", "--subs", "g=1,g=2"], "--subs"),
        (&["mc", "--uniform", "--branch", "linear"], "--uniform"),
        (
            &["reproduce", "--config", "claims.toml", "--out-dir", "r"],
            "accepted: none",
        ),
        (
            &["reproduce", "--config", "neg.toml", "--out-dir", "r"],
            "[effective-depth.mc] samples",
        ),
    ];
    for (args, field) in cases {
        let o = normscope(args, dir.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error:") && err.contains(field),
            "{args:?}: {err}"
        );
        assert!(!dir.path().join("r").exists() && !dir.path().join("missing").exists());
    }
    let o = normscope(
        &["reproduce", "--config", "long.toml", "--out-dir", "r"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).len() < 2_000, "a long value is echoed whole");
    // `-` is standard output.
    let o = normscope(
        &[
            "theory",
            "--depth",
            "2",
            "--metrics",
            "stream_sq",
            "--layers",
            "last",
            "--out",
            "-",
        ],
        dir.path(),
    );
    assert!(o.status.success() && o.stdout.starts_with(b"preset,"));
}

/// Every example in the `--help` of `theory`, `expand`, `mc` and `compare` runs as printed
/// (exit 0), so the help cannot drift from the flags.
#[test]
fn every_help_example_runs() {
    let dir = tempfile::tempdir().unwrap();
    // The `--placements` examples name the crate's example files, relative to its root.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/placements");
    let copy = dir.path().join("examples/placements");
    std::fs::create_dir_all(&copy).unwrap();
    for f in std::fs::read_dir(&examples).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
    }
    let mut ran = 0;
    for cmd in ["theory", "expand", "mc", "compare"] {
        let help = Command::new(env!("CARGO_BIN_EXE_normscope"))
            .args([cmd, "--help"])
            .output()
            .unwrap();
        let text = String::from_utf8(help.stdout).unwrap();
        let examples: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("  normscope "))
            .collect();
        assert!(!examples.is_empty(), "{cmd} --help has no examples");
        for ex in examples {
            let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
                .args(ex.split_whitespace())
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{ex}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 10, "{ran}");
}

#[test]
fn names_ignore_case_and_mc_only_branches_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_normscope"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let a = run(&[
        "theory", "--preset", "Pre,POST", "--init", "He", "--branch", "ReLU-MLP", "--depth", "4",
    ]);
    let b = run(&[
        "theory", "--preset", "pre,post", "--init", "he", "--branch", "relu-mlp", "--depth", "4",
    ]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let o = run(&["theory", "--branch", "transformer"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("Monte Carlo only") && err.contains("normscope mc"),
        "{err}"
    );
}

/// `compare` at a small width: the allowance of Pre-LN's gradient at the input exceeds half its
/// value, so the row is `uninformative`, not `agree`; the summary counts every status and the
/// Monte Carlo intervals that miss inside the allowance; `--finite-width` marks the corrected
/// Post-LN rows and leaves Pre-LN's uncorrected with a note.
#[test]
fn compare_says_when_agreement_is_uninformative() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "compare",
            "--preset",
            "pre,post",
            "--depth",
            "64",
            "--width",
            "64",
            "--tokens",
            "8",
            "--samples",
            "16",
            "--metrics",
            "grad_sq",
            "--layers",
            "0,64",
            "--finite-width",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = String::from_utf8(o.stdout.clone()).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (preset, layer, status, rel, corrected, covers) = (
        col("preset"),
        col("layer"),
        col("status"),
        col("relative_allowance"),
        col("theory_corrected"),
        col("ci_covers_theory"),
    );
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let pre0 = rows
        .iter()
        .find(|r| r[preset] == "pre" && r[layer] == "0")
        .unwrap();
    assert!(pre0[rel].parse::<f64>().unwrap() > 0.5);
    assert_eq!(pre0[status], "uninformative");
    assert_eq!(pre0[corrected], "false");
    assert!(["true", "false"].contains(&pre0[covers]));
    let post0 = rows
        .iter()
        .find(|r| r[preset] == "post" && r[layer] == "0")
        .unwrap();
    assert_eq!(post0[corrected], "true");
    let err = stderr(&o);
    assert!(err.contains("agree,") || err.contains(" agree, "), "{err}");
    assert!(
        err.contains("uninformative (allowance > 0.5 of |theory|)"),
        "{err}"
    );
    assert!(err.contains("pre is compared uncorrected"), "{err}");
}

/// `theory --finite-width` refuses widths the first-order correction cannot describe.
#[test]
fn finite_width_below_eight_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &["theory", "--finite-width", "4", "--out", "x.csv"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--finite-width"));
    assert!(!dir.path().join("x.csv").exists());
}

#[test]
fn bare_normscope_prints_help_and_writes_nothing() {
    // Bare `normscope` used to start the full regeneration in the current folder.
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(&[], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Usage: normscope") && out.contains("normscope reproduce"),
        "{out}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn layers_accept_last_in_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "theory",
            "--preset",
            "pre",
            "--depth",
            "5",
            "--layers",
            "0,last",
            "--metrics",
            "stream_sq",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let layers: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(22).unwrap())
        .collect();
    assert_eq!(layers, ["0", "5"], "{out}");
}

#[test]
fn misspelt_names_get_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    for (args, hint) in [
        (
            &["theory", "--preset", "deepnrom"][..],
            "(did you mean 'deepnorm'?)",
        ),
        (
            &["theory", "--metrics", "grad_sqq"][..],
            "(did you mean 'grad_sq'?)",
        ),
        (
            &["mc", "--branch", "relu-mlpp"][..],
            "a similar value exists: 'relu-mlp'",
        ),
        (&["thoery"][..], "a similar subcommand exists: 'theory'"),
        (
            &["compare", "--finite-width", "64", "--width", "32"][..],
            "invalid --finite-width = 64",
        ),
    ] {
        let o = normscope(args, dir.path());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(hint), "{args:?}: {}", stderr(&o));
    }
    // Nothing similar: no guess.
    let o = normscope(&["theory", "--metrics", "wibble"], dir.path());
    assert!(!stderr(&o).contains("did you mean"), "{}", stderr(&o));
}

#[test]
fn every_out_file_gets_its_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "theory",
            "--preset",
            "pre",
            "--depth",
            "3",
            "--metrics",
            "stream_sq",
            "--out",
            "t.csv",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = std::fs::read(dir.path().join("t.csv")).unwrap();
    let side: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("t.csv.manifest.json")).unwrap())
            .unwrap();
    assert_eq!(side["output"], "t.csv");
    assert_eq!(
        side["sha256"],
        normscope::analyses::manifest::sha256(&table)
    );
    assert_eq!(side["crate_version"], env!("CARGO_PKG_VERSION"));
    assert!(side["invocation"].as_str().unwrap().contains("--depth 3"));
    let build = side["build_commit"].as_str().unwrap();
    assert!(
        build == "unknown" || build.chars().all(|c| c.is_ascii_hexdigit()),
        "{build}"
    );
    // A refused run writes neither.
    let o = normscope(
        &["theory", "--preset", "nope", "--out", "u.csv"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("u.csv").exists() && !dir.path().join("u.csv.manifest.json").exists());
}

/// Rows name a placement file's preset only by its name, so the sidecar records each file's
/// hash: two files defining `my-mixln` differently give sidecars that differ there.
#[test]
fn the_sidecar_records_each_placement_files_hash() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/placements/mixln.toml"),
    )
    .unwrap();
    let changed = text.replace("until = 0.25", "until = 0.5");
    assert_ne!(text, changed);
    let mut hashes = Vec::new();
    for (i, t) in [&text, &changed].into_iter().enumerate() {
        let file = dir.path().join(format!("p{i}.toml"));
        std::fs::write(&file, t).unwrap();
        let out = format!("t{i}.csv");
        let args = [
            "theory",
            "--placements",
            file.to_str().unwrap(),
            "--preset",
            "my-mixln",
        ];
        let o = normscope(
            &[
                &args[..],
                &["--depth", "8", "--metrics", "stream_sq", "--out", &out],
            ]
            .concat(),
            dir.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let side: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(format!("{out}.manifest.json"))).unwrap(),
        )
        .unwrap();
        let p = &side["placements"][0];
        assert_eq!(p["path"], file.to_str().unwrap());
        assert_eq!(
            p["sha256"],
            normscope::analyses::manifest::sha256(t.as_bytes())
        );
        hashes.push(p["sha256"].clone());
    }
    assert_ne!(hashes[0], hashes[1]);
}

#[test]
fn format_table_aligns_columns_for_reading() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "theory",
            "--preset",
            "pre,post",
            "--depth",
            "4",
            "--metrics",
            "grad_sq",
            "--layers",
            "0,last",
            "--format",
            "table",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    // Every row's metric starts where the header's does: the columns are aligned.
    let at = lines[0].find("metric").unwrap();
    assert!(
        lines[1..].iter().all(|l| l[at..].starts_with("grad_sq")),
        "{out}"
    );
    // Parquet is binary: not on standard output.
    let o = normscope(
        &["theory", "--depth", "2", "--format", "parquet"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid --format"), "{}", stderr(&o));
}

/// `compare --finite-width` without a value is followed by other flags, which it must not take
/// as its value; a negative value is refused naming the flag.
#[test]
fn compare_finite_width_without_a_value_leaves_the_next_flag_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fw.csv");
    let o = normscope(
        &[
            "compare",
            "--preset",
            "post",
            "--depth",
            "8",
            "--width",
            "32",
            "--samples",
            "8",
            "--metrics",
            "grad_sq",
            "--layers",
            "0",
            "--finite-width",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.lines().next().unwrap().contains("theory_corrected"));
    let o = normscope(&["compare", "--finite-width", "-5"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--finite-width"), "{}", stderr(&o));
}
