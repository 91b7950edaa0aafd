//! Issue "Robustness", part 2: a non-finite number is never written as a result. Every case
//! the issue lists runs through the binary; each table must hold only finite numbers, and a
//! value that is not finite is an empty cell with its reason in the `missing` column (or the
//! run is refused with exit 2 and one line giving the cause).

use std::path::Path;
use std::process::{Command, Output};

fn normscope(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

/// Checks a tidy table: every numeric cell parses as a finite number, a row without a value
/// has a reason, and a row with a value has none. Returns the reasons.
pub fn check_tidy(csv: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let numeric = ["value", "stderr", "ci_low", "ci_high"].map(col);
    let (value, missing) = (col("value"), col("missing"));
    let mut reasons = Vec::new();
    for line in lines {
        // The reason is the last column and may hold commas.
        let f: Vec<&str> = line.splitn(header.len(), ',').collect();
        assert_eq!(f.len(), header.len(), "{line}");
        for &i in &numeric {
            if !f[i].is_empty() {
                let x: f64 = f[i].parse().unwrap_or_else(|_| panic!("{line}"));
                assert!(x.is_finite(), "non-finite {}: {line}", header[i]);
            }
        }
        assert_eq!(f[value].is_empty(), !f[missing].is_empty(), "{line}");
        if !f[missing].is_empty() {
            reasons.push(f[missing].to_string());
        }
    }
    reasons
}

#[test]
fn extreme_parameters_write_missing_cells_with_a_reason_never_nan_or_inf() {
    let dir = tempfile::tempdir().unwrap();
    let small = [
        "--depth",
        "4",
        "--width",
        "16",
        "--tokens",
        "4",
        "--samples",
        "4",
    ];
    // (arguments, a reason that must appear, or "" when every value is finite).
    let cases: &[(&[&str], &str)] = &[
        (&["mc", "--alpha", "1e8"], ""),
        (&["mc", "--q0", "1e-300"], "underflowed"),
        (&["mc", "--q0", "1e300"], ""),
        (&["mc", "--preset", "rezero", "--lambda", "1e8"], ""),
        (&["mc", "--eps", "1e300"], "underflowed"),
        (&["mc", "--norm", "identity", "--gain", "1e6"], ""),
        (&["mc", "--gain", "0"], "undefined"),
        (&["mc", "--alpha", "1e300"], ""),
        (&["theory", "--gain", "0"], "branch output is zero"),
        (&["theory", "--beta", "0"], "branch output is zero"),
        (
            &[
                "theory", "--preset", "rezero", "--alpha", "1e-8", "--depth", "300",
            ],
            "underflow: e^",
        ),
        (
            &[
                "theory", "--preset", "rezero", "--lambda", "1", "--norm", "identity", "--depth",
                "2000",
            ],
            "overflow: e^",
        ),
    ];
    for (args, reason) in cases {
        let mut a = args.to_vec();
        if a[0] == "mc" {
            a.extend(small);
        }
        let o = normscope(&a, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        let reasons = check_tidy(&String::from_utf8_lossy(&o.stdout));
        if reason.is_empty() {
            // Not asserted empty: the case must only never print a non-finite number.
            continue;
        }
        assert!(
            reasons.iter().any(|r| r.contains(reason)),
            "{args:?}: no reason containing '{reason}' in {reasons:?}"
        );
        assert!(err.contains("written as missing"), "{args:?}: {err}");
    }
}

#[test]
fn one_presets_overflow_does_not_discard_the_others() {
    // GELU with no norm: Pre-LN's stream grows until the GELU moments need q beyond f64 (the
    // branch is not scale-free), which ReZero (lambda = 0: x_l = x_0) never reaches. Pre's
    // cells are written missing with the overflow, ReZero's computed; Pre alone is refused.
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "theory",
        "--branch",
        "gelu-mlp",
        "--norm",
        "identity",
        "--depth",
        "3000",
        "--layers",
        "last",
        "--metrics",
        "stream_sq",
    ];
    let mut a = base.to_vec();
    a.extend(["--preset", "pre,rezero"]);
    let o = normscope(&a, dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    let reasons = check_tidy(&out);
    assert!(
        reasons.iter().all(|r| r.contains("overflow")),
        "{reasons:?}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("rezero,") && l.contains(",stream_sq,"))
    );
    assert!(err.contains("pre: every value written as missing"), "{err}");
    let mut a = base.to_vec();
    a.extend(["--preset", "pre"]);
    let o = normscope(&a, dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: overflow"));
}

#[test]
fn both_engines_refuse_the_same_token_correlations() {
    // n = 4 tokens with pairwise correlation -0.5 have no covariance matrix (c0 > -1/3).
    let dir = tempfile::tempdir().unwrap();
    for engine in ["theory", "mc"] {
        let o = normscope(
            &[
                engine,
                "--branch",
                "cross-attention",
                "--c0",
                "-0.5",
                "--tokens",
                "4",
            ],
            dir.path(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{engine}: {err}");
        assert!(
            err.contains("--c0") && err.contains("-1/(n-1)"),
            "{engine}: {err}"
        );
    }
}

#[test]
fn expand_writes_values_beyond_f64_from_their_logarithm() {
    let dir = tempfile::tempdir().unwrap();
    // Pre-LN with alpha = 2: C_{L,0} = 2^L, 10^3010.3 at L = 10^4.
    let o = normscope(
        &[
            "expand", "--preset", "pre", "--alpha", "2", "--depth", "10000",
        ],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(!text.contains("inf") && !text.contains("NaN"));
    assert!(
        text.contains("C_{10000,0} = alpha^10000 = 1.9950631169e3010"),
        "{}",
        &text[..400]
    );
    // Post-LN with alpha = 1e300: alpha^2 overflows, the coefficient 1/alpha does not.
    let o = normscope(&["expand", "--alpha", "1e300", "--depth", "3"], dir.path());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("C_{3,3} = (g + alpha^2)^(-1/2) = 1.0000000000000"),
        "{text}"
    );
    let o = normscope(
        &[
            "expand", "--preset", "pre", "--alpha", "2", "--depth", "2000", "--format", "csv",
        ],
        dir.path(),
    );
    let csv = String::from_utf8_lossy(&o.stdout);
    let first = csv.lines().nth(1).unwrap();
    assert!(
        first.ends_with(",,overflow: |value| = 10^602.060 is beyond f64"),
        "{first}"
    );
}

#[test]
fn expand_takes_logarithms_of_huge_rationals_exactly_and_refuses_undefined_values() {
    let dir = tempfile::tempdir().unwrap();
    // Post-LN with g = 10^6 by substitution: C_{L,0} = (1 + g)^(-L/2) (q0 = 1), whose rational
    // has 3301 digits (beyond f64, so it used to print 0). Its decimal exponent and mantissa
    // follow from log10(1000001) alone.
    let o = normscope(
        &[
            "expand",
            "--preset",
            "post",
            "--subs",
            "g=1000000",
            "--depth",
            "1100",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("inf") && !text.contains("NaN"));
    assert!(
        !text.lines().any(|l| l.ends_with("= 0")),
        "a coefficient printed as 0"
    );
    let log10 = -550.0 * 1_000_001f64.log10();
    let want = format!(
        "{:.10}e{}",
        10f64.powf(log10 - log10.floor()),
        log10.floor()
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("C_{1100,0} ="))
        .unwrap();
    assert!(
        line.ends_with(&format!("= {want}")),
        "{want}: ...{}",
        &line[line.len() - 40..]
    );
    // DeepNorm with alpha = 2 by substitution: C_{L,0} has a rational beyond f64 times a
    // polynomial power beyond f64; their logs cancel to a finite coefficient, never inf.
    let o = normscope(
        &[
            "expand", "--preset", "deepnorm", "--subs", "alpha=2", "--depth", "1100",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("inf") && !text.contains("NaN"));
    // Post-LN with alpha = 0 and g = 0 normalizes a zero stream: undefined, exit 2, one line.
    let o = normscope(
        &["expand", "--alpha", "0", "--gain", "0", "--depth", "3"],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("undefined"), "{err}");
    assert!(o.stdout.is_empty());
    // A substituted value that f64 cannot hold is refused by name, not read as 0.
    let tiny = format!("g=1/1{}", "0".repeat(400));
    let o = normscope(&["expand", "--subs", &tiny, "--depth", "3"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--subs"), "{err}");
}

/// A coefficient or branch weight below f64's smallest normal number is a missing cell with
/// its underflow (as `skip_gain`'s is), never a written 0.0: Post-LN's `C_{L,0} = 2^{-L/2}`
/// (Xiong et al. 2020's Post-LN stream with unit branch variance) is `e^-1039.7` at L = 3000,
/// while its newest sources stay in range.
#[test]
fn coefficients_and_weights_below_f64_are_missing_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "theory",
            "--preset",
            "post",
            "--depth",
            "3000",
            "--layers",
            "last",
            "--metrics",
            "coef,branch_weight",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = String::from_utf8(o.stdout).unwrap();
    let reasons = check_tidy(&csv);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (metric, source, value) = (col("metric"), col("source"), col("value"));
    for m in ["coef", "branch_weight"] {
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .skip(1)
            .map(|l| l.splitn(header.len(), ',').collect::<Vec<_>>())
            .filter(|f| f[metric] == m)
            .collect();
        let zero = rows.iter().filter(|f| f[value].parse() == Ok(0.0)).count();
        assert_eq!(zero, 0, "{m}: a written 0.0");
        let first = rows.iter().find(|f| f[source] == "0").expect("source 0");
        assert!(first[value].is_empty(), "{m} at source 0: {first:?}");
        let last = rows.iter().find(|f| f[source] == "3000").expect("source L");
        assert!(!last[value].is_empty(), "{m} at source L: {last:?}");
    }
    assert!(
        reasons.iter().any(|r| r.starts_with("underflow: e^")),
        "{reasons:?}"
    );
    // Each underflow states its own exponent; the note names a few and counts the rest, so
    // standard error stays short (it was a 205 KB line).
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.len() < 2000,
        "{} bytes of notes: {}",
        err.len(),
        &err[..300]
    );
    assert!(
        err.contains("other reason(s), in each row's missing column"),
        "{err}"
    );
}
