//! `normscope-bench --shards N`: what sharding costs and what it buys. For a Monte Carlo grid
//! (`finite-width`) and a training grid (`warmup`), in one run on this machine: the
//! single-process time, each of N shards run one after another (as N cluster tasks would run
//! them side by side), the merge, whether the merge equals the single run byte for byte, the
//! overhead per unit `(sum of shards + merge - single) / units`, and the wall time projected
//! for a cluster of `--nodes` nodes: the longest shard of the [`assign`] plan over the units'
//! estimated costs, each cost converted to seconds by the measured rate (sum of shard times /
//! sum of costs), plus the merge and one shard's start-up.

use normscope::analyses::shard::{self, ShardManifest, assign};
use normscope::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The analyses measured: a Monte Carlo grid and a training grid.
pub const ANALYSES: [&str; 2] = ["finite-width", "warmup"];

/// The `normscope` binary beside this one (cargo builds both into the same folder).
fn normscope_exe() -> Result<std::path::PathBuf> {
    let me = std::env::current_exe().map_err(|e| Error::Io {
        path: "current executable".into(),
        source: e,
    })?;
    let exe = me.with_file_name(format!("normscope{}", std::env::consts::EXE_SUFFIX));
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(Error::Unsupported(format!(
            "--shards runs the `normscope` binary, not found at {}: build it first (cargo build --release)",
            exe.display()
        )))
    }
}

fn run(args: &[&str]) -> Result<f64> {
    let exe = normscope_exe()?;
    let t = Instant::now();
    let o = Command::new(exe)
        .args(args)
        .output()
        .map_err(|e| Error::Io {
            path: "normscope".into(),
            source: e,
        })?;
    if !o.status.success() {
        return Err(Error::Undefined(format!(
            "normscope {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(t.elapsed().as_secs_f64())
}

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let (Ok(rel), Ok(b)) = (p.strip_prefix(root), std::fs::read(&p)) {
                out.insert(rel.display().to_string(), b);
            }
        }
    }
    let mut out = BTreeMap::new();
    for sub in ["data", "figures"] {
        walk(root, &root.join(sub), &mut out);
    }
    out
}

/// Measures every analysis of [`ANALYSES`] with `shards` shards and prints one line each.
pub fn bench(
    shards: usize,
    nodes: usize,
    quick: bool,
    config: Option<&Path>,
    only: &[String],
) -> Result<()> {
    for id in only {
        if !ANALYSES.contains(&id.as_str()) {
            return Err(Error::Unknown {
                kind: "sharding bench analysis",
                name: id.clone(),
                valid: ANALYSES.join(", "),
            });
        }
    }
    if shards == 0 || nodes == 0 {
        return Err(Error::invalid(
            "--shards",
            shards,
            "at least 1 (and --nodes at least 1)",
        ));
    }
    let tmp = tempfile::tempdir().map_err(|e| Error::Io {
        path: "temporary folder".into(),
        source: e,
    })?;
    let t = |p: &Path| p.display().to_string();
    outln!(
        "sharding, {shards} shards run one after another on this machine ({} threads), {} configuration{}; projection for {nodes} nodes",
        rayon::current_num_threads(),
        if quick { "quick" } else { "full" },
        config.map_or(String::new(), |c| format!(" with {}", c.display()))
    )?;
    outln!(
        "analysis | units | single s | sum of shards s | merge s | overhead s/unit | identical | projected wall s on {nodes} nodes"
    )?;
    for id in ANALYSES
        .into_iter()
        .filter(|id| only.is_empty() || only.iter().any(|o| o == id))
    {
        let cfg = config.map(|c| c.display().to_string());
        let mut q: Vec<&str> = if quick { vec!["--quick"] } else { vec![] };
        if let Some(c) = &cfg {
            q.extend_from_slice(&["--config", c]);
        }
        let whole = tmp.path().join(format!("{id}-whole"));
        let mut a = vec!["reproduce", "--only", id];
        a.extend_from_slice(&q);
        let w = t(&whole);
        a.extend_from_slice(&["--out-dir", &w]);
        let single = run(&a)?;
        let mut dirs = Vec::new();
        let mut times = Vec::new();
        for i in 0..shards {
            let d = t(&tmp.path().join(format!("{id}-shard-{i}")));
            let spec = format!("{i}/{shards}");
            let mut a = vec!["reproduce", "--only", id];
            a.extend_from_slice(&q);
            a.extend_from_slice(&["--shard", &spec, "--out-dir", &d]);
            times.push(run(&a)?);
            dirs.push(d);
        }
        let merged = t(&tmp.path().join(format!("{id}-merged")));
        let mut a = vec!["merge"];
        a.extend(dirs.iter().map(String::as_str));
        a.extend_from_slice(&["--out-dir", &merged]);
        let merge = run(&a)?;
        let m: ShardManifest = serde_json::from_slice(
            &std::fs::read(Path::new(&dirs[0]).join(shard::MANIFEST)).map_err(|e| Error::Io {
                path: dirs[0].clone(),
                source: e,
            })?,
        )
        .map_err(|e| Error::Undefined(format!("shard manifest: {e}")))?;
        let costs = m.call.map(|c| c.costs).unwrap_or_default();
        let units = costs.len().max(1);
        let sum: f64 = times.iter().sum();
        let identical = files(&whole) == files(Path::new(&merged));
        let total_cost: f64 = costs.iter().sum();
        let startup = times.iter().cloned().fold(f64::INFINITY, f64::min).min(sum);
        let plan = assign(&costs, nodes);
        let mut load = vec![0.0; nodes];
        for (i, s) in plan.iter().enumerate() {
            load[*s] += costs[i];
        }
        let longest = load.iter().cloned().fold(0.0, f64::max);
        let rate = if total_cost > 0.0 {
            sum / total_cost
        } else {
            0.0
        };
        outln!(
            "{id} | {units} | {single:.2} | {sum:.2} | {merge:.2} | {:.4} | {} | {:.1}",
            (sum + merge - single) / units as f64,
            if identical { "yes" } else { "NO" },
            longest * rate + merge + startup,
        )?;
    }
    outln!(
        "sum of shards: the grid's total work at this machine's speed; projected wall: longest shard of the {nodes}-node plan at the measured seconds per cost unit, plus the merge, plus the fastest shard's time as start-up"
    )?;
    Ok(())
}
