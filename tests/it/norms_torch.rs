//! normscope's norm kernels (`normscope::norms`) against PyTorch's modules in float64:
//! `nn.BatchNorm1d` in training mode (output, input gradient, running statistics after the
//! step), `nn.InstanceNorm1d`, `nn.GroupNorm` and DyT (`weight * tanh(alpha x) + bias`, with
//! the gradient of alpha), through `benches/torch_norms_reference.py`, on inputs laid out as
//! PyTorch's `(N, C, L)`.
//!
//! Needs a Python with PyTorch (`NORMSCOPE_TORCH_PYTHON`, else `python3`); without one the
//! test prints `skipped: no PyTorch: ...` and passes (CI has no PyTorch).

use crate::common::torch_or_skip;
use nalgebra::DMatrix;
use normscope::norms::dyt;
use normscope::norms::grouped::{Grouping, forward, jacobian};
use normscope::norms::running::{EPS, MOMENTUM, Running};
use serde_json::{Value, json};

/// Largest difference allowed, relative to the largest entry compared. Both sides compute in
/// float64 with the same formulas; only summation order differs (ATen's vectorized
/// reductions, its `rsqrt`), worth a few units of 1e-16 per sum of 24 terms: measured with
/// PyTorch 2.15.0, at most 9e-16. A modelling difference is far larger: an eps of 1e-6 instead
/// of PyTorch's 1e-5 moves BatchNorm's output by 9.4e-6 and fails.
const REL_TOL: f64 = 1e-13;

const D: usize = 6;
const SEQUENCES: usize = 3;
const SEQ: usize = 4;
const GROUPS: usize = 2;

/// A deterministic d x n matrix of moderately sized, unequal entries.
fn matrix(phase: f64) -> DMatrix<f64> {
    DMatrix::from_fn(D, SEQUENCES * SEQ, |i, j| {
        ((i * 7 + j * 3) as f64 * 0.61 + phase).sin() * (1.0 + 0.3 * i as f64) + 0.2 * j as f64
    })
}

fn rows(m: &DMatrix<f64>) -> Value {
    json!(
        (0..m.nrows())
            .map(|i| m.row(i).iter().copied().collect::<Vec<_>>())
            .collect::<Vec<_>>()
    )
}

fn read(v: &Value) -> DMatrix<f64> {
    let r: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    DMatrix::from_fn(r.len(), r[0].len(), |i, j| r[i][j])
}

fn check(what: &str, ours: &DMatrix<f64>, theirs: &DMatrix<f64>) {
    let diff = (ours - theirs).amax();
    let scale = theirs.amax().max(1e-300);
    eprintln!("{what}: max |difference| {diff:.1e} (scale {scale:.2})");
    assert!(
        diff <= REL_TOL * scale,
        "{what}: {diff:e} > {REL_TOL:e} * {scale:e}"
    );
}

#[test]
fn norm_kernels_match_pytorch() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    let (z, g) = (matrix(0.3), matrix(1.7));
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("norms.json");
    let inp = json!({"d": D, "sequences": SEQUENCES, "seq": SEQ, "groups": GROUPS,
        "alpha": dyt::ALPHA0, "z": rows(&z), "g": rows(&g)});
    std::fs::write(&input, inp.to_string()).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/torch_norms_reference.py"
    );
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("PyTorch {}", t["torch"]);

    for (name, grouping) in [
        ("batch", Grouping::batch(SEQUENCES * SEQ)),
        ("instance", Grouping::instance(SEQ)),
        ("group", Grouping::group(GROUPS, D, SEQ).unwrap()),
    ] {
        let c = forward(grouping, EPS, &z);
        check(&format!("{name} y"), &c.y, &read(&t[name]["y"]));
        check(
            &format!("{name} dz"),
            &jacobian(&c, &g),
            &read(&t[name]["dz"]),
        );
    }
    let mut r = Running::new(D);
    r.update(&z, MOMENTUM);
    let col = |v: &[f64]| DMatrix::from_column_slice(v.len(), 1, v);
    let theirs = |k: &str| col(&serde_json::from_value::<Vec<f64>>(t["batch"][k].clone()).unwrap());
    check("batch running_mean", &col(&r.mean), &theirs("running_mean"));
    check("batch running_var", &col(&r.var), &theirs("running_var"));

    let c = dyt::forward(dyt::ALPHA0, &z);
    check("dyt y", &c.y, &read(&t["dyt"]["y"]));
    check("dyt dz", &dyt::jacobian(&c, &g), &read(&t["dyt"]["dz"]));
    let ours = dyt::alpha_grad(&c, &z, &g);
    let theirs = t["dyt"]["alpha_grad"].as_f64().unwrap();
    eprintln!("dyt alpha_grad: {ours} vs {theirs}");
    assert!((ours - theirs).abs() <= REL_TOL * theirs.abs());
}
