//! Helpers shared by the integration tests.
#![allow(dead_code)]

use normscope::model::{RawModel, TheoryConfig};
use normscope::{compare, tables};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Closed-form rows keyed by (metric, layer, source).
pub type Table = HashMap<(String, u64, Option<u64>), f64>;

/// Runs the closed form for one preset with every metric at every layer.
pub fn table(preset: &str, raw: &RawModel) -> Table {
    let cfg = TheoryConfig::new(preset, raw, "all", "all").expect("valid config");
    let mut notes = Vec::new();
    tables::theory_rows(&cfg, &mut notes)
        .expect("closed form runs")
        .into_iter()
        .map(|r| ((r.metric.to_string(), r.layer, r.source), r.value))
        .collect()
}

/// A value of the table (panics with the key if absent).
pub fn get(t: &Table, metric: &str, layer: u64, source: Option<u64>) -> f64 {
    *t.get(&(metric.to_string(), layer, source))
        .unwrap_or_else(|| panic!("no row {metric} layer {layer} source {source:?}"))
}

/// Relative-or-absolute closeness: |a - b| <= tol * max(1, |b|).
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// Asserts closeness with a message.
#[track_caller]
pub fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(close(a, b, tol), "{what}: got {a}, expected {b}");
}

/// Depth-L raw model with the seeds' setting (linear branch, Xavier, so g = 1; q0 = 1; c0 = 0).
pub fn seeds_model(depth: usize) -> RawModel {
    RawModel {
        depth,
        ..RawModel::default()
    }
}

/// Runs `normscope compare` for one preset with eps = 0 and returns the rows that disagree,
/// formatted, after checking that every requested metric produced rows.
pub fn disagreements(
    preset: &str,
    raw: &RawModel,
    mc: normscope::monte_carlo::RawMc,
    metrics: &[normscope::metrics::Metric],
    layers: &normscope::layers::LayerSpec,
) -> Vec<String> {
    let cfg = normscope::monte_carlo::McConfig::new(raw, &mc).expect("valid config");
    let rows = compare::compare(
        &normscope::model::parse_presets(preset).expect("a preset"),
        &cfg,
        metrics,
        layers,
        false,
        &mut Vec::new(),
    )
    .expect("compare runs");
    for m in metrics {
        let applies = rows.iter().any(|r| r.mc.metric == *m);
        // merge_error needs l < L, skip/branch gains and weight gradients need l >= 1: with
        // layers chosen below they all have rows.
        assert!(applies, "{preset}: no rows for {}", m.name());
    }
    rows.iter()
        .filter(|r| !r.agree)
        .map(|r| {
            format!(
                "{preset} {} l={} s={:?}: theory {} mc {} [{}, {}] allowance {}",
                r.mc.metric,
                r.mc.layer,
                r.mc.source,
                r.theory,
                r.mc.value,
                r.mc.ci_low.unwrap_or(f64::NAN),
                r.mc.ci_high.unwrap_or(f64::NAN),
                r.allowance
            )
        })
        .collect()
}

/// Every file under `root/data` and `root/figures`, by path relative to `root`: what a run
/// writes, for byte-for-byte comparisons of two runs.
pub fn output_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out.retain(|k, _| k.starts_with("data/") || k.starts_with("figures/"));
    out
}

#[path = "../../support/torch_python.rs"]
mod torch;
pub use torch::torch_or_skip;

/// Runs the `normscope` binary from the crate root with `args`.
pub fn normscope(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("binary runs")
}

/// The standard output of a run that must have succeeded (else its standard error, as the
/// panic message).
pub fn success_stdout(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

/// Held by the tests that must not run beside each other in this process (the integration
/// tests are one binary, its tests on as many threads as there are cores): the slow Monte
/// Carlo cases, the largest of which holds about 17 GB (`mc_slow`).
static EXCLUSIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits for, then holds, [`EXCLUSIVE`] until the guard drops (a test that panicked while
/// holding it does not stop the others).
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A proptest configuration with `cases` cases from the fixed seed `seed`, whose failures are
/// saved beside the test's source (`tests/it/<module>.proptest-regressions`, committed). The
/// default would look for `proptest-regressions/<module>.txt` beside the folder holding
/// `main.rs`, i.e. `tests/proptest-regressions/`.
pub fn proptest_config(cases: u32, seed: u64) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

/// Every file under `dir` (recursively) whose name ends in `.ext`, sorted by path.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_with_ext(&p, ext));
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
    out.sort();
    out
}
