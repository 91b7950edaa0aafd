//! Issue "Robustness", done-when: random sizes and parameters through `theory` and `mc` (small
//! sizes, plus sizes that cannot fit) give exit 0 with only finite numbers (or documented
//! missing cells), or exit 2 with one line; never a panic (101) or an abort (134).
//! `NORMSCOPE_SHOW_CASES=1 cargo test --release --test it random_inputs:: -- --nocapture` prints each
//! case with its exit status and first line of stderr.

use proptest::prelude::*;
use std::process::Command;

mod non_finite_check {
    /// The fields of a CSV line; a quoted field (a label such as `"DeepNorm (enc-dec,
    /// encoder)"`, a reason) may hold commas and doubled quotes.
    fn fields(line: &str) -> Vec<String> {
        let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        out.push(cur);
        out
    }

    /// Every numeric cell of a tidy table is finite; an empty value has a reason.
    pub fn check(csv: &str) {
        let mut lines = csv.lines();
        let header: Vec<String> = fields(lines.next().expect("a header"));
        let col = |n: &str| header.iter().position(|h| h == n).expect(n);
        let numeric = ["value", "stderr", "ci_low", "ci_high"].map(col);
        let (value, missing) = (col("value"), col("missing"));
        for line in lines {
            let f = fields(line);
            assert_eq!(f.len(), header.len(), "{line}");
            for &i in &numeric {
                if !f[i].is_empty() {
                    let x: f64 = f[i].parse().unwrap_or_else(|_| panic!("{line}"));
                    assert!(x.is_finite(), "{line}");
                }
            }
            assert_eq!(f[value].is_empty(), !f[missing].is_empty(), "{line}");
        }
    }
}

/// A number: mostly moderate, often over every decade of f64, sometimes negative, zero or
/// one of the special values a hostile user types.
fn wild() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => (-3.0f64..3.0).prop_map(|e| format!("{:e}", 10f64.powf(e))),
        3 => (-320.0f64..308.0).prop_map(|e| format!("{:e}", 10f64.powf(e))),
        1 => (-320.0f64..308.0).prop_map(|e| format!("{:e}", -(10f64.powf(e)))),
        1 => prop_oneof![
            Just("0".to_string()),
            Just("nan".to_string()),
            Just("inf".to_string()),
            Just("-inf".to_string()),
        ],
    ]
}

/// A size: usually small, sometimes so large (>= 2^40) that it cannot fit and must be refused.
fn size(small: u64) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..=small).prop_map(|x| x.to_string()),
        1 => (40u32..64).prop_map(|b| (1u64 << b).to_string()),
        1 => Just(u64::MAX.to_string()),
    ]
}

fn choice(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    (0..options.len()).prop_map(move |i| options[i].to_string())
}

/// `(flag, value)` pairs: a random subset of the model and sampling flags.
fn flags(mc: bool) -> impl Strategy<Value = Vec<(String, String)>> {
    let model = vec![
        ("--depth", size(if mc { 12 } else { 3000 }).boxed()),
        ("--width", size(32).boxed()),
        ("--tokens", size(6).boxed()),
        ("--hidden-ratio", wild().boxed()),
        ("--alpha", wild().boxed()),
        ("--beta", wild().boxed()),
        ("--gain", wild().boxed()),
        ("--lambda", wild().boxed()),
        ("--q0", wild().boxed()),
        ("--c0", (-1.2f64..1.2).prop_map(|c| c.to_string()).boxed()),
        (
            "--branch",
            choice(&[
                "linear",
                "relu-mlp",
                "gelu-mlp",
                "uniform-attention",
                "cross-attention",
            ])
            .boxed(),
        ),
        ("--norm", choice(&["layer", "rms", "identity"]).boxed()),
        (
            "--init",
            choice(&["xavier", "he", "bert", "torch-default"]).boxed(),
        ),
        (
            "--preset",
            choice(&[
                "pre,post,deepnorm",
                "rezero",
                "admin,lns,mixln",
                "sandwich,deepnorm-ed-dec",
            ])
            .boxed(),
        ),
        (
            "--layers",
            choice(&["all", "last", "log:5", "log:18446744073709551615", "0,1"]).boxed(),
        ),
    ];
    let sampling = vec![
        ("--samples", size(4).boxed()),
        ("--eps", wild().boxed()),
        ("--seed", (0u64..100).prop_map(|s| s.to_string()).boxed()),
    ];
    let all: Vec<_> = model
        .into_iter()
        .chain(if mc { sampling } else { Vec::new() })
        .collect();
    let n = all.len();
    let picks: Vec<BoxedStrategy<Option<(String, String)>>> = all
        .into_iter()
        .map(|(flag, value)| {
            proptest::option::weighted(0.3, value.prop_map(move |v| (flag.to_string(), v))).boxed()
        })
        .collect();
    assert!(n > 0);
    picks.prop_map(|v| v.into_iter().flatten().collect())
}

fn run(command: &str, flags: &[(String, String)]) -> Result<(), TestCaseError> {
    // Small defaults (the sampled networks stay cheap), overridden by the drawn flags.
    let defaults: &[(&str, &str)] = if command == "mc" {
        &[
            ("--samples", "2"),
            ("--width", "8"),
            ("--tokens", "2"),
            ("--depth", "3"),
        ]
    } else {
        &[("--depth", "8")]
    };
    let mut args: std::collections::BTreeMap<String, String> = defaults
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    args.extend(flags.iter().cloned());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normscope"));
    cmd.arg(command);
    for (f, v) in &args {
        cmd.arg(format!("{f}={v}"));
    }
    let o = cmd.output().expect("binary runs");
    let err = String::from_utf8_lossy(&o.stderr);
    if std::env::var_os("NORMSCOPE_SHOW_CASES").is_some() {
        eprintln!(
            "{:?} {command} {args:?}: {}",
            o.status.code(),
            err.lines().next().unwrap_or("")
        );
    }
    match o.status.code() {
        Some(0) => non_finite_check::check(&String::from_utf8_lossy(&o.stdout)),
        Some(2) => {
            prop_assert_eq!(err.lines().count(), 1, "{:?}: {}", flags, err);
            prop_assert!(err.starts_with("error:"), "{:?}: {}", flags, err);
        }
        other => prop_assert!(
            false,
            "exit {:?} for {} {:?}: {}",
            other,
            command,
            flags,
            err
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::common::proptest_config(96, 20261123))]

    #[test]
    fn theory_exits_0_with_finite_values_or_2_with_one_line(f in flags(false)) {
        run("theory", &f)?;
    }

    #[test]
    fn mc_exits_0_with_finite_values_or_2_with_one_line(f in flags(true)) {
        run("mc", &f)?;
    }
}
