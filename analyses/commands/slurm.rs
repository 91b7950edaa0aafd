//! `normscope slurm`: batch scripts that run one analysis's shards ([`super::shard`]) as a Slurm
//! job array and merge them in a job that depends on it. normscope does not schedule: Slurm
//! schedules, retries and accounts; these scripts only call `reproduce --shard` and `merge`.
//!
//! It writes, in the work folder `DIR`:
//!
//! - `array.sbatch`: `#SBATCH --array=0-(N-1)`; task `i` runs
//!   `normscope reproduce --only ID --shard i/N --out-dir DIR/shard-i` (rerunning a task
//!   rewrites the same bytes, so a failed task is resubmitted alone with
//!   `sbatch --array=i DIR/array.sbatch`);
//! - `merge.sbatch`: `normscope merge DIR/shard-{0..N-1} --out-dir OUT`;
//! - `submit.sh`: `sbatch --parsable array.sbatch`, then
//!   `sbatch --kill-on-invalid-dep=yes --dependency=afterok:<array job> merge.sbatch` (so a
//!   failed task cancels the merge instead of leaving it queued), printing both job ids.
//!
//! Tasks run with `RAYON_NUM_THREADS` set to the CPUs Slurm gives them (`--cpus-per-task`, 1 by
//! default); logs go to `DIR/logs/shard-<job>_<task>.out` and `DIR/logs/merge-<job>.out`.
//! Slurm's default `MaxArraySize` is 1001, so more than 1000 shards needs the cluster's limit
//! raised (or fewer shards with more CPUs each).

use normscope_core::{Error, Result};
use std::path::{Path, PathBuf};

/// What `normscope slurm` was asked for.
///
/// # Examples
///
/// The scripts of a 4-shard `mc-grid` array:
///
/// ```rust
/// use normscope_analyses::slurm::{scripts, SlurmRequest};
/// let r = SlurmRequest {
///     only: "mc-grid".into(),
///     shards: 4,
///     quick: true,
///     dir: "/tmp/normscope-work".into(),
///     out_dir: "/tmp/normscope-out".into(),
///     binary: Some("/usr/local/bin/normscope".into()),
///     ..SlurmRequest::default()
/// };
/// let s = scripts(&r)?; // the text only: nothing is written or submitted
/// assert!(s.array.contains("#SBATCH --array=0-3"));
/// assert!(s.array.contains(
///     "exec '/usr/local/bin/normscope' reproduce --only mc-grid --quick --shard \"$i/4\""
/// ));
/// assert!(s.merge.contains("merge '/tmp/normscope-work'/shard-{0..3}"));
/// assert!(s.submit.contains("sbatch --parsable"));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct SlurmRequest {
    /// The analysis id.
    pub only: String,
    /// Number of shards (array tasks).
    pub shards: usize,
    /// `--quick` defaults.
    pub quick: bool,
    /// `--config` file, passed on to every shard.
    pub config: Option<PathBuf>,
    /// `--seed`, passed on to every shard.
    pub seed: Option<u64>,
    /// `#SBATCH --partition`.
    pub partition: Option<String>,
    /// `#SBATCH --time`.
    pub time: Option<String>,
    /// `#SBATCH --cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `#SBATCH --mem`.
    pub mem: Option<String>,
    /// `#SBATCH --account`.
    pub account: Option<String>,
    /// The work folder: scripts, shard folders, logs.
    pub dir: PathBuf,
    /// Where the merge writes `data/` and `figures/`.
    pub out_dir: PathBuf,
    /// The normscope binary the jobs run (this one if `None`).
    pub binary: Option<PathBuf>,
}

/// The three files, by name.
///
/// # Examples
///
/// The scripts of a 3-shard `finite-width --quick` array on partition `cpu`: the array's
/// lines, the merge of every shard, and the submission that chains them.
///
/// ```rust
/// use normscope_analyses::slurm::{scripts, Scripts, SlurmRequest};
/// let r = SlurmRequest {
///     only: "finite-width".into(),
///     shards: 3,
///     quick: true,
///     partition: Some("cpu".into()),
///     dir: "/scratch/w".into(),
///     out_dir: "/scratch/o".into(),
///     binary: Some("/opt/normscope".into()),
///     ..SlurmRequest::default()
/// };
/// let s: Scripts = scripts(&r)?;
/// assert!(s.array.contains("\n#SBATCH --array=0-2\n"));
/// for script in [&s.array, &s.merge] {
///     assert!(script.contains("\n#SBATCH --partition=cpu\n"));
/// }
/// assert!(s.merge.contains("merge '/scratch/w'/shard-{0..2} --out-dir '/scratch/o'\n"));
/// assert!(s.submit.contains("--dependency=afterok:$array '/scratch/w'/merge.sbatch"));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Scripts {
    /// `array.sbatch`.
    pub array: String,
    /// `merge.sbatch`.
    pub merge: String,
    /// `submit.sh`.
    pub submit: String,
}

/// Whether an `#SBATCH` line holding `s` would start a component of a heterogeneous job:
/// sbatch looks for `packjob` (older releases) or `hetjob` anywhere in the line, in any case.
fn splits_job(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    s.contains("packjob") || s.contains("hetjob")
}

/// A value for an `#SBATCH` line: letters, digits and `_.:,=+-` only (nothing a shell or
/// Slurm's parser would read differently), not naming `packjob` or `hetjob`, else bad input
/// naming `field`.
fn option(field: &'static str, v: &Option<String>) -> Result<Option<String>> {
    match v {
        Some(s)
            if s.is_empty()
                || splits_job(s)
                || !s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:,=+-".contains(c)) =>
        {
            Err(Error::invalid(
                field,
                s,
                "a Slurm value of letters, digits and _.:,=+-, not naming packjob or hetjob (e.g. --time 02:00:00, --mem 8G)",
            ))
        }
        _ => Ok(v.clone()),
    }
}

/// A path in single quotes for bash: `'` becomes `'\''`, and nothing else inside single quotes
/// is special (`$`, backticks, `;` and `"` are literal).
pub fn quoted(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::Io {
        path: p.display().to_string(),
        source: e,
    })
}

/// `p` made absolute and quoted for bash ([`quoted`]), for the script's commands and comments. A
/// path holding a control character (a newline would end a comment and start a command; Slurm
/// stops reading `#SBATCH` lines at the first command) or that is not UTF-8 is refused, naming
/// `field`.
fn script_path(field: &'static str, p: &Path) -> Result<(PathBuf, String)> {
    let abs = absolute(p)?;
    match abs.to_str() {
        Some(s) if !s.contains(char::is_control) => {
            let q = quoted(&abs);
            Ok((abs, q))
        }
        _ => Err(Error::invalid(
            field,
            p.display(),
            "a UTF-8 path without newlines or other control characters (it is written into a shell script)",
        )),
    }
}

/// The scripts for `r` (paths made absolute, since Slurm runs them elsewhere).
pub fn scripts(r: &SlurmRequest) -> Result<Scripts> {
    super::check_shardable(&r.only, r.config.as_deref(), r.quick, r.seed)?;
    // Slurm reads `#SBATCH --output=PATH` up to the first blank and expands `%` in it.
    let plain = |p: &Path| {
        !p.display()
            .to_string()
            .contains(|c: char| c.is_whitespace() || "%'\"\\#".contains(c))
            && !splits_job(&p.display().to_string())
    };
    if !plain(&absolute(&r.dir)?) {
        return Err(Error::invalid(
            "--dir",
            r.dir.display(),
            "a folder path without blanks, quotes, backslashes, # or % and not naming packjob or hetjob (Slurm reads the log paths in its #SBATCH lines)",
        ));
    }
    folder_path("--dir", &r.dir, &r.dir.join("logs"))?;
    folder_path("--out-dir", &r.out_dir, &r.out_dir)?;
    for name in ["array.sbatch", "merge.sbatch", "submit.sh"] {
        let p = r.dir.join(name);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.file_type().is_file()) {
            return Err(Error::invalid(
                "--dir",
                r.dir.display(),
                format!(
                    "a folder whose {name} is a regular file or absent ({} is a folder, symlink, FIFO or device, never replaced)",
                    p.display()
                ),
            ));
        }
    }
    if r.shards == 0 || r.shards > super::shard::MAX_SHARDS {
        return Err(Error::invalid(
            "--shards",
            r.shards,
            format!("1 to {}", super::shard::MAX_SHARDS),
        ));
    }
    if r.cpus_per_task == Some(0) {
        return Err(Error::invalid("--cpus-per-task", 0, "at least 1"));
    }
    let mut head = Vec::new();
    for (field, flag, v) in [
        ("--partition", "partition", &r.partition),
        ("--time", "time", &r.time),
        ("--mem", "mem", &r.mem),
        ("--account", "account", &r.account),
    ] {
        if let Some(v) = option(field, v)? {
            head.push(format!("#SBATCH --{flag}={v}"));
        }
    }
    if let Some(c) = r.cpus_per_task {
        head.push(format!("#SBATCH --cpus-per-task={c}"));
    }
    let (_, b) = match &r.binary {
        Some(b) => script_path("--binary", b)?,
        None => script_path(
            "--binary",
            &std::env::current_exe().map_err(|e| Error::Io {
                path: "normscope".into(),
                source: e,
            })?,
        )?,
    };
    let (dir, d) = script_path("--dir", &r.dir)?;
    let (_, o) = script_path("--out-dir", &r.out_dir)?;
    // `only` is a registered analysis id (checked above): letters, digits and '-'.
    let mut flags = format!("--only {}", r.only);
    if r.quick {
        flags.push_str(" --quick");
    }
    if let Some(c) = &r.config {
        flags.push_str(&format!(" --config {}", script_path("--config", c)?.1));
    }
    if let Some(s) = r.seed {
        flags.push_str(&format!(" --seed {s}"));
    }
    let (n, id) = (r.shards, &r.only);
    let head = head.join("\n");
    let array = format!(
        "#!/bin/bash
# normscope {id}: {n} shards as one job array. Resubmit failed tasks alone with
#   sbatch --array=I,J {d}/array.sbatch
# (a shard rewrites the same bytes), then the merge with
#   sbatch --dependency=afterok:<that job> {d}/merge.sbatch
# (the first merge job was cancelled when its dependency failed: --kill-on-invalid-dep).
#SBATCH --job-name=normscope-{id}
#SBATCH --array=0-{last}
#SBATCH --output={dir}/logs/shard-%A_%a.out
{head}
set -euo pipefail
i=${{SLURM_ARRAY_TASK_ID:?run me with sbatch}}
# As many threads as CPUs given to the task (the output does not depend on it).
export RAYON_NUM_THREADS=${{SLURM_CPUS_PER_TASK:-1}}
exec {b} reproduce {flags} --shard \"$i/{n}\" --out-dir {d}/shard-\"$i\"
",
        last = n - 1,
        dir = dir.display(),
    );
    let merge = format!(
        "#!/bin/bash
# normscope {id}: merges the {n} shards into {o}/data and {o}/figures.
#SBATCH --job-name=normscope-{id}-merge
#SBATCH --output={dir}/logs/merge-%j.out
{head}
set -euo pipefail
export RAYON_NUM_THREADS=${{SLURM_CPUS_PER_TASK:-1}}
exec {b} merge {d}/shard-{{0..{last}}} --out-dir {o}
",
        last = n - 1,
        dir = dir.display(),
    );
    let submit = format!(
        "#!/bin/bash
# Submits the array and the merge that waits for it; prints both job ids.
set -euo pipefail
mkdir -p {d}/logs
array=$(sbatch --parsable {d}/array.sbatch)
array=${{array%%;*}}
merge=$(sbatch --parsable --kill-on-invalid-dep=yes --dependency=afterok:$array {d}/merge.sbatch)
merge=${{merge%%;*}}
echo \"array job $array ({n} tasks), merge job $merge (runs after every task succeeds)\"
"
    );
    Ok(Scripts {
        array,
        merge,
        submit,
    })
}

/// Checks that `path` (`field`) is or can be made a folder, down to `inner` (a path inside it,
/// or itself): every part of `inner` that exists is a folder or a symlink to one (a file, a
/// dangling symlink or a FIFO on the way is refused naming `field`).
fn folder_path(field: &'static str, path: &Path, inner: &Path) -> Result<()> {
    for part in inner.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        if std::fs::symlink_metadata(part).is_err() {
            continue;
        }
        if !std::fs::metadata(part).is_ok_and(|m| m.is_dir()) {
            return Err(Error::invalid(
                field,
                path.display(),
                format!(
                    "a folder (created if missing); {} is not one (a file, a dangling symlink or a device)",
                    part.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Writes the scripts `s` ([`scripts`] of `r`, checked before anything is said or created) into
/// `r.dir` (and its `logs/`), each atomically; returns their paths.
pub fn write(r: &SlurmRequest, s: &Scripts) -> Result<[PathBuf; 3]> {
    let logs = r.dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Error::Io {
        path: logs.display().to_string(),
        source: e,
    })?;
    let paths = [
        r.dir.join("array.sbatch"),
        r.dir.join("merge.sbatch"),
        r.dir.join("submit.sh"),
    ];
    for (p, text) in paths.iter().zip([&s.array, &s.merge, &s.submit]) {
        normscope_core::output::atomic::write_bytes(p, text.as_bytes())?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&paths[2], std::fs::Permissions::from_mode(0o755));
    }
    Ok(paths)
}

/// Runs `sbatch --parsable ARGS` and returns the job id.
fn sbatch(args: &[&str]) -> Result<String> {
    let o = std::process::Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .output()
        .map_err(|e| Error::Io {
            path: "sbatch".into(),
            source: e,
        })?;
    let text = String::from_utf8_lossy(&o.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if !o.status.success() || id.is_empty() {
        return Err(Error::Io {
            path: "sbatch".into(),
            source: std::io::Error::other(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        });
    }
    Ok(id)
}

/// Submits the array, then the merge with `--dependency=afterok:<array>`; returns both ids.
pub fn submit(paths: &[PathBuf; 3]) -> Result<(String, String)> {
    let array = sbatch(&[&paths[0].display().to_string()])?;
    let merge = sbatch(&[
        "--kill-on-invalid-dep=yes",
        &format!("--dependency=afterok:{array}"),
        &paths[1].display().to_string(),
    ])?;
    Ok((array, merge))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> SlurmRequest {
        SlurmRequest {
            only: "finite-width".into(),
            shards: 7,
            quick: true,
            dir: "/tmp/w".into(),
            out_dir: "/tmp/o".into(),
            binary: Some("/opt/normscope".into()),
            time: Some("01:00:00".into()),
            ..SlurmRequest::default()
        }
    }

    #[test]
    fn the_array_covers_every_shard_and_the_merge_reads_them_all() {
        let s = scripts(&req()).unwrap();
        assert!(s.array.contains("#SBATCH --array=0-6"));
        assert!(s.array.contains("#SBATCH --time=01:00:00"));
        assert!(s.array.contains(
            "'/opt/normscope' reproduce --only finite-width --quick --shard \"$i/7\" --out-dir '/tmp/w'/shard-\"$i\""
        ));
        assert!(
            s.merge
                .contains("merge '/tmp/w'/shard-{0..6} --out-dir '/tmp/o'")
        );
        assert!(s.submit.contains("--dependency=afterok:$array"));
    }

    #[test]
    fn bad_values_are_named() {
        let mut r = req();
        r.mem = Some("8G; rm -rf /".into());
        assert!(scripts(&r).unwrap_err().to_string().contains("--mem"));
        let mut r = req();
        r.shards = 0;
        assert!(scripts(&r).unwrap_err().to_string().contains("--shards"));
        let mut r = req();
        r.only = "nope".into();
        assert!(scripts(&r).unwrap_err().to_string().contains("analysis"));
        // Slurm would split a log path at the blank.
        let mut r = req();
        r.dir = "/tmp/a b".into();
        assert!(scripts(&r).unwrap_err().to_string().contains("--dir"));
        // A configuration the shards would refuse is refused before any script is written.
        let mut r = req();
        r.config = Some("/nonexistent/grid.toml".into());
        assert!(scripts(&r).unwrap_err().to_string().contains("grid.toml"));
    }
}
