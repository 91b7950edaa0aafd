//! Every public type of the three library crates shows its use in a doc-test (an example that
//! `cargo test` compiles and runs), except the types listed in [`WITHOUT_EXAMPLE`]; a listed
//! type that gains one must leave the list, so the list only shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Public types without a doc-test yet, as `path:Name`.
const WITHOUT_EXAMPLE: &[&str] = &[
    "crates/analyses/src/commands/slurm.rs:Scripts",
    "crates/analyses/src/common.rs:AsRow",
    "crates/analyses/src/lr_search.rs:SeedSearch",
    "crates/analyses/src/runner/manifest.rs:Manifest",
    "crates/analyses/src/runner/shard.rs:Loaded",
    "crates/analyses/src/runner/shard.rs:ShardSpec",
    "crates/analyses/src/training.rs:GroupTable",
    "crates/analyses/src/tuned.rs:TunePlan",
    "crates/analyses/src/tuned.rs:Tuned",
    "crates/analyses/src/tuned.rs:TunedCell",
    "crates/analyses/src/warmup.rs:PrecisionCheck",
    "crates/analyses/src/warmup.rs:TierCells",
    "crates/core/src/branch/attention.rs:AttentionCache",
    "crates/core/src/branch/cross_attention.rs:CrossAttention",
    "crates/core/src/branch/cross_attention.rs:CrossCache",
    "crates/core/src/branch/cross_attention.rs:Kernel",
    "crates/core/src/branch/linear.rs:Kernel",
    "crates/core/src/branch/linear.rs:LinearCache",
    "crates/core/src/branch/mlp.rs:Kernel",
    "crates/core/src/branch/mlp.rs:MlpCache",
    "crates/core/src/branch/mod.rs:BranchConfig",
    "crates/core/src/budget.rs:Limit",
    "crates/core/src/metrics/sampled.rs:Decomposed",
    "crates/core/src/metrics/sampled.rs:PathLaw",
    "crates/core/src/monte_carlo/measure.rs:Blocks",
    "crates/core/src/monte_carlo/network.rs:BlockPass",
    "crates/core/src/monte_carlo/norm.rs:NormCache",
    "crates/core/src/monte_carlo/precision.rs:Precision",
    "crates/core/src/monte_carlo/sampler.rs:MatrixDraw",
    "crates/core/src/output/figure.rs:Rendered",
    "crates/core/src/placement/mod.rs:Builder",
    "crates/core/src/spec.rs:InputScale",
    "crates/core/src/stats/censored.rs:Fit",
    "crates/core/src/stats/verdict.rs:FamilyError",
    "crates/core/src/theory/finite_width.rs:Correction",
    "crates/core/src/theory/layered.rs:Layered",
    "crates/core/src/theory/logsum.rs:PrefixSum",
    "crates/core/src/train/config.rs:Arch",
    "crates/core/src/train/config.rs:RawTrain",
    "crates/core/src/train/config.rs:TrainConfig",
    "crates/core/src/train/layer_norm.rs:NormLayer",
    "crates/core/src/train/model.rs:Multiplier",
    "crates/core/src/train/optim/adam.rs:Adam",
    "crates/core/src/train/optim/adam.rs:AdamFlags",
    "crates/core/src/train/optim/adam.rs:AdamState",
    "crates/core/src/train/optim/adamw.rs:AdamW",
    "crates/core/src/train/optim/adamw.rs:AdamWFlags",
    "crates/core/src/train/optim/mod.rs:Algorithm",
    "crates/core/src/train/optim/mod.rs:Hyperparameters",
    "crates/core/src/train/optim/mod.rs:Optimizer",
    "crates/core/src/train/optim/mod.rs:SecondMoment",
    "crates/core/src/train/optim/sgd.rs:Sgd",
    "crates/core/src/train/optim/sgd.rs:SgdFlags",
    "crates/core/src/train/optim/sgd.rs:SgdState",
    "crates/core/src/train/pass.rs:BlockCache",
    "crates/core/src/train/seq2seq/mod.rs:Part",
    "crates/core/src/train/seq2seq/mod.rs:Stack",
    "crates/core/src/train/seq2seq/pass.rs:EncDecPass",
    "crates/core/src/train/seq2seq/pass.rs:StackPass",
    "crates/core/src/train/task/mod.rs:VectorBatch",
    "crates/core/src/train/trainable.rs:Probe",
];

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `(file:Name, has a doc-test)` for every `pub struct|enum|trait|type` outside test modules
/// and macro definitions. A doc-test is a fenced block in the item's `///` lines that is not
/// marked `text` (or `ignore`).
fn public_types() -> Vec<(String, bool)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for krate in ["numeric", "core", "analyses"] {
        let src = root.join("crates").join(krate).join("src");
        for f in sources(&src) {
            let text = std::fs::read_to_string(&f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            let mut in_macro = false;
            for (i, line) in lines.iter().enumerate() {
                if line.starts_with("#[cfg(test)]") {
                    break;
                }
                if line.contains("macro_rules!") {
                    in_macro = true;
                }
                if in_macro && line.starts_with('}') {
                    in_macro = false;
                    continue;
                }
                let t = line.trim_start();
                let name = ["pub struct ", "pub enum ", "pub trait ", "pub type "]
                    .iter()
                    .find_map(|k| t.strip_prefix(k));
                let Some(name) = name else { continue };
                if in_macro {
                    continue;
                }
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let mut doc = Vec::new();
                for l in lines[..i].iter().rev() {
                    let l = l.trim_start();
                    if l.starts_with("///") || l.starts_with("#[") {
                        doc.push(l);
                    } else {
                        break;
                    }
                }
                let has = doc.iter().any(|l| {
                    l.strip_prefix("///").is_some_and(|d| {
                        let d = d.trim();
                        d.starts_with("```") && !d.contains("text") && !d.contains("ignore")
                    })
                });
                out.push((format!("{rel}:{name}"), has));
            }
        }
    }
    out
}

#[test]
fn every_public_type_has_a_doc_test() {
    let listed: BTreeSet<&str> = WITHOUT_EXAMPLE.iter().copied().collect();
    let types = public_types();
    assert!(types.len() > 100, "the scan found {} types", types.len());
    let missing: Vec<&str> = types
        .iter()
        .filter(|(t, has)| !has && !listed.contains(t.as_str()))
        .map(|(t, _)| t.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "public types without a doc-test: {missing:#?}"
    );
    let gained: Vec<&str> = types
        .iter()
        .filter(|(t, has)| *has && listed.contains(t.as_str()))
        .map(|(t, _)| t.as_str())
        .collect();
    assert!(
        gained.is_empty(),
        "listed but now with a doc-test (remove them): {gained:?}"
    );
    let known: BTreeSet<&str> = types.iter().map(|(t, _)| t.as_str()).collect();
    let stale: Vec<&&str> = listed.iter().filter(|t| !known.contains(**t)).collect();
    assert!(stale.is_empty(), "listed but not public types: {stale:?}");
}
