//! Placement files. The shipped examples reproduce `pre`, `post` and
//! `mixln` exactly (the stack at every depth, and the `theory` and `mc` outputs byte for byte
//! apart from the preset column); bad files are refused with exit status 2 and one line naming
//! the key, writing nothing; `expand` refuses a skip scale that varies between blocks.

use normscope::placement::{self, Overrides};
use normscope::spec::StackSpec;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/placements/{name}.toml"))
}

fn normscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// `(file preset, built-in preset)` pairs of the shipped examples.
const PAIRS: [(&str, &str, &str); 3] = [
    ("pre", "my-pre", "pre"),
    ("post", "my-post", "post"),
    ("mixln", "my-mixln", "mixln"),
];

fn load_examples() {
    for (file, _, _) in PAIRS {
        placement::load(&example(file)).unwrap();
    }
}

fn without_name(s: StackSpec) -> StackSpec {
    StackSpec {
        preset: String::new(),
        label: String::new(),
        file: None,
        seed_as: None,
        ..s
    }
}

#[test]
fn example_stacks_equal_the_builtins_at_every_depth() {
    load_examples();
    let depths = (1..=300).chain([1000, 4096, 65_537, 1_000_000, 1 << 30]);
    let overrides = [
        Overrides::default(),
        Overrides {
            alpha: Some(0.5),
            lambda: Some(2.0),
            beta: Some(0.25),
            final_norm: Some(false),
        },
    ];
    for d in depths {
        for ov in &overrides {
            for (_, mine, builtin) in PAIRS {
                let a = placement::build(mine, d, ov).unwrap();
                let b = placement::build(builtin, d, ov).unwrap();
                assert_eq!(a.preset, mine);
                // Seeded as the preset the file names in `reproduces`, also where its stack is
                // another built-in's too (mixln's is pre's below L = 4).
                assert_eq!(a.seed_name(), builtin, "{mine} at L = {d}");
                assert_eq!(
                    without_name(a),
                    without_name(b),
                    "{mine} at L = {d}, {ov:?}"
                );
            }
        }
    }
}

/// A CSV without its first two columns (the preset and its label, which name the file's
/// placement); every other column, the settings included, must match.
fn without_preset(csv: &[u8]) -> String {
    String::from_utf8_lossy(csv)
        .lines()
        .map(|l| l.splitn(3, ',').nth(2).unwrap_or(l).to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn same_output(cmd: &[&str], file: &str, mine: &str, builtin: &str) {
    let path = example(file);
    let path = path.to_str().unwrap();
    let run = |preset: &str| {
        let mut args = cmd.to_vec();
        args.extend(["--placements", path, "--preset", preset]);
        let o = normscope(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let (a, b) = (run(mine), run(builtin));
    assert!(!a.is_empty());
    assert!(String::from_utf8_lossy(&a).contains(&format!("\n{mine},")));
    assert_eq!(
        without_preset(&a),
        without_preset(&b),
        "{cmd:?} {mine} vs {builtin}"
    );
}

#[test]
fn theory_output_is_byte_identical() {
    for (file, mine, builtin) in PAIRS {
        for depth in ["3", "16", "37"] {
            same_output(
                &[
                    "theory",
                    "--depth",
                    depth,
                    "--metrics",
                    "all",
                    "--layers",
                    "all",
                ],
                file,
                mine,
                builtin,
            );
        }
        same_output(
            &[
                "theory", "--depth", "24", "--branch", "relu-mlp", "--init", "he", "--layers",
                "log:5",
            ],
            file,
            mine,
            builtin,
        );
    }
}

#[test]
fn mc_output_is_byte_identical() {
    // L = 2: mixln's stack is pre's there, and the file's `reproduces` picks mixln's draws.
    for ((file, mine, builtin), depth) in PAIRS.iter().flat_map(|p| [(*p, "2"), (*p, "8")]) {
        same_output(
            &[
                "mc",
                "--depth",
                depth,
                "--samples",
                "4",
                "--width",
                "16",
                "--tokens",
                "4",
                "--layers",
                "all",
            ],
            file,
            mine,
            builtin,
        );
    }
}

/// Runs `theory` on a placement file with `text` and preset `preset`; returns (status,
/// stderr, whether the --out file exists).
fn theory_on(text: &str, preset: &str) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out.csv");
    let o = normscope(&[
        "theory",
        "--placements",
        file.to_str().unwrap(),
        "--preset",
        preset,
        "--depth",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        out.exists(),
    )
}

#[test]
fn bad_files_exit_2_naming_the_key() {
    let seg = "[[placement.segment]]\ninput = \"layer\"\n";
    let cases: &[(&str, String, &[&str])] = &[
        (
            "unknown key",
            format!("[[placement]]\nname = \"x\"\nfina_norm = \"layer\"\n{seg}"),
            &["fina_norm", "final_norm"],
        ),
        (
            "missing name",
            format!("[[placement]]\nlabel = \"x\"\n{seg}"),
            &["name"],
        ),
        (
            "bad slot value",
            "[[placement]]\nname = \"x\"\n[[placement.segment]]\ninput = \"lyer\"\n".into(),
            &["`input`", "lyer", "layer, rms, batch, instance, group, dyt, identity"],
        ),
        (
            "mixed norm kinds",
            "[[placement]]\nname = \"x\"\n[[placement.segment]]\ninput = \"layer\"\nafter_sum = \"rms\"\n".into(),
            &["`after_sum`", "one norm kind"],
        ),
        (
            "bad expression",
            format!("[[placement]]\nname = \"x\"\n{seg}skip = \"sqrt(l\"\n"),
            &["`skip`", "sqrt(l"],
        ),
        (
            "unknown variable",
            format!("[[placement]]\nname = \"x\"\n{seg}branch = \"1/sqrt(n)\"\n"),
            &["`branch`", "`n`"],
        ),
        (
            "l in beta",
            format!("[[placement]]\nname = \"x\"\nbeta = \"l\"\n{seg}"),
            &["`beta`", "`l`"],
        ),
        (
            "non-finite at some block",
            format!("[[placement]]\nname = \"x\"\n{seg}skip = \"1/(l-1)\"\n"),
            &["`skip`", "block l = 1 of L = 8", "inf"],
        ),
        (
            "negative",
            format!("[[placement]]\nname = \"x\"\n{seg}branch = \"4-l\"\n"),
            &["`branch`", "block l = 5"],
        ),
        (
            "name clash",
            format!("[[placement]]\nname = \"Post-LN\"\n{seg}"),
            &["`name`", "post"],
        ),
        (
            "until on the last segment",
            format!("[[placement]]\nname = \"x\"\n{seg}until = 0.5\n"),
            &["`until`"],
        ),
        ("not TOML", "[[placement]\n".into(), &["line 1"]),
        (
            "wrong type names its key",
            "[[placement]]\nname = \"x\"\n[[placement.segment]]\nuntil = \"0.5\"\nafter_sum = \"layer\"\n[[placement.segment]]\n".into(),
            &["`until`", "line 4"],
        ),
        (
            "unary minus before a power",
            format!("[[placement]]\nname = \"x\"\n{seg}skip = \"-2^2 + 5\"\n"),
            &["`skip`", "`-2^2`", "-(2^2)", "(-2)^2"],
        ),
        (
            "unary minus before a power of l",
            format!("[[placement]]\nname = \"x\"\n{seg}skip = \"3*l - 2*-l^2\"\n"),
            &["`skip`", "`-l^2`"],
        ),
        (
            "reproduces a preset that is not built in",
            format!("[[placement]]\nname = \"x\"\nreproduces = \"prex\"\n{seg}"),
            &["`reproduces`", "prex", "mixln"],
        ),
    ];
    for (what, text, needles) in cases {
        let (code, err, written) = theory_on(text, "x");
        assert_eq!(code, Some(2), "{what}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: one line: {err}");
        for n in *needles {
            assert!(err.contains(n), "{what}: {err:?} lacks {n:?}");
        }
        assert!(!written, "{what}: wrote an output");
    }
}

#[test]
fn expand_refuses_a_skip_that_varies_with_l() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[placement]]\nname = \"grow\"\n[[placement.segment]]\nafter_sum = \"layer\"\nskip = \"sqrt(l)\"\n\
         [[placement]]\nname = \"fixed\"\n[[placement.segment]]\nafter_sum = \"layer\"\nskip = \"L^(1/4)\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let o = normscope(&[
        "expand",
        "--placements",
        f,
        "--preset",
        "grow",
        "--depth",
        "4",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("differs between blocks"), "{err}");
    // One value for every block: the symbol alpha with that value.
    let o = normscope(&[
        "expand",
        "--placements",
        f,
        "--preset",
        "fixed",
        "--depth",
        "4",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("alpha"));
    // The closed form takes per-block values: Post-Norm with alpha_l = sqrt(l) is Admin's
    // omega_l at g = 1.
    placement::load(&file).unwrap();
    let s = placement::build("grow", 5, &Overrides::default()).unwrap();
    assert_eq!(s.segments.len(), 5);
    let o = normscope(&[
        "theory",
        "--placements",
        f,
        "--preset",
        "grow,admin",
        "--depth",
        "40",
        "--metrics",
        "eff_depth",
        "--layers",
        "last",
        "--branch",
        "linear",
        "--init",
        "xavier",
    ]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let value = text
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "value")
        .unwrap();
    let values: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(value).unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.len(), 2, "{text}");
    assert!((values[0] - values[1]).abs() <= 1e-12 * values[1], "{text}");
}

#[test]
fn norm_flag_that_contradicts_the_file_is_refused() {
    let pre = example("pre");
    let o = normscope(&[
        "theory",
        "--placements",
        pre.to_str().unwrap(),
        "--preset",
        "my-pre",
        "--norm",
        "rms",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--norm"));
}

#[test]
fn presets_lists_the_file_and_reproduce_config_accepts_it() {
    let mup = example("depth-mup");
    let o = normscope(&["presets", "--placements", mup.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("\ndepth-mup\t"));

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(example("post"), dir.path().join("post.toml")).unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "placements = \"post.toml\"\n[effective-depth]\npresets = [\"my-post\", \"pre\"]\nmc_presets = [\"my-post\"]\n",
    )
    .unwrap();
    let o = normscope(&[
        "reproduce",
        "--only",
        "effective-depth",
        "--print-config",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("my-post"));
    std::fs::write(&cfg, "placements = \"missing.toml\"\n").unwrap();
    let o = normscope(&[
        "reproduce",
        "--print-config",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.toml"));
}

#[test]
fn until_is_the_decimal_written_and_powers_keep_their_sign() {
    use normscope::placement::file::until_block;
    // 0.29 * 100.0 is 28.999999999999996 in f64; the file means floor(29) = 29.
    assert_eq!(until_block(0.29, 100), 29);
    assert_eq!(until_block(0.25, 7), 1);
    for d in 1..=2000usize {
        assert_eq!(
            until_block(0.25, d),
            (0.25 * d as f64).floor() as usize,
            "L = {d}"
        );
        for k in 1..100usize {
            assert_eq!(
                until_block(k as f64 / 100.0, d),
                k * d / 100,
                "{k}/100 at L = {d}"
            );
        }
    }
    // A minus that is not unary, and a negative exponent, are plain arithmetic.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[placement]]\nname = \"signs\"\n[[placement.segment]]\nafter_sum = \"layer\"\nskip = \"l - 2^2 + 4 + (-1)^2 - 1 + 2^-1 - 0.5\"\n",
    )
    .unwrap();
    placement::load(&file).unwrap();
    let s = placement::build("signs", 3, &Overrides::default()).unwrap();
    let skips: Vec<_> = (1..=3).map(|l| s.block(l).skip).collect();
    assert_eq!(
        skips,
        [1.0, 2.0, 3.0]
            .map(normscope::spec::SkipScale::Alpha)
            .to_vec()
    );
}

/// `depth-mup`, the preset the `placement-file` analysis ships (its embedded
/// `examples/placements/depth-mup.toml`), resolves in any analysis's `--config` table whichever
/// analyses are selected and in whatever order (every analysis's setup runs before any
/// configuration resolves); naming the same file in `placements` too is accepted.
#[test]
fn a_shipped_preset_resolves_whatever_the_selection_and_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let table = "[effective-depth]\npresets = [\"depth-mup\", \"pre\"]\nmc_presets = [\"pre\"]\n";
    std::fs::write(&cfg, table).unwrap();
    let with_file = dir.path().join("d.toml");
    std::fs::write(
        &with_file,
        format!(
            "placements = \"{}\"\n{table}",
            example("depth-mup").display()
        ),
    )
    .unwrap();
    for (only, file) in [
        ("effective-depth", &cfg),
        ("effective-depth,placement-file", &cfg),
        ("placement-file,effective-depth", &cfg),
        ("effective-depth", &with_file),
    ] {
        let o = normscope(&[
            "reproduce",
            "--only",
            only,
            "--print-config",
            "--config",
            file.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "--only {only}: {err}");
        let toml = String::from_utf8_lossy(&o.stdout);
        assert!(toml.contains("\"depth-mup\""), "--only {only}: {toml}");
    }
}
