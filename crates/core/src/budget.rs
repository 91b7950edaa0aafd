//! Sizes checked before anything is allocated: an estimate of the peak memory of a run, refused
//! with the estimate, the machine's available memory and the settings to lower when it cannot
//! fit ([`crate::Error::TooLarge`], exit status 2).
//!
//! The estimates are upper bounds of the large buffers (f64 matrices and per-network tables);
//! small bookkeeping is left out.
//!
//! The memory a run may use ([`available`]) is the least of what can be read of
//!
//! | bound | source |
//! |---|---|
//! | [`SOURCE_MEMINFO`] | the machine's `MemAvailable` (`/proc/meminfo`) |
//! | [`SOURCE_RLIMIT_AS`] | `RLIMIT_AS` (`ulimit -v`, `prlimit --as`) less `VmSize` (`/proc/self/status`) and the threads' reservations ([`thread_reservations`]) |
//! | [`SOURCE_CGROUP_V2`] | `memory.max` less `memory.current` of the process's cgroup and its ancestors |
//! | [`SOURCE_CGROUP_V1`] | `memory.limit_in_bytes` less `memory.usage_in_bytes`, likewise |
//!
//! and the refusal names the bound that is exceeded. Every file is read with
//! [`crate::input::read_text`] (bounded, regular files only).
//!
//! The Monte Carlo engine's own estimates are in [`crate::monte_carlo::size`].
//!
//! Work is checked too: a Monte Carlo run (`monte_carlo::size::check_mc_work`), a training request
//! ([`crate::train::config::TrainConfig::check_work`]) or a `normscope-bench --memory-probe` estimated at
//! more than [`MAX_WORK`] floating-point operations (three days at [`WORK_RATE`], 1e11 per
//! second) is refused with its estimate, in operations and days, and the flags that lower it.
//! There is no flag to raise the cap: split the work instead (fewer networks or seeds per
//! run, `reproduce --shard`).

use crate::{Error, Result};

/// Bytes the closed form keeps per layer (about 20 f64 sequences over depth, some in double-
/// double or log-magnitude form; measured ~220 bytes per layer).
pub const CLOSED_FORM_PER_LAYER: u128 = 256;

/// Bytes per kept layer when the closed form keeps few layers (B-tree entries, leaves about
/// half full: about three times [`CLOSED_FORM_PER_LAYER`]).
pub(crate) const SPARSE_PER_KEPT_LAYER: u128 = 3 * CLOSED_FORM_PER_LAYER;

/// One bound on the memory this process may still allocate, and where it comes from.
///
/// # Examples
///
/// A refusal names the tightest bound (on Linux at least `MemAvailable` is known):
///
/// ```rust
/// use normscope_core::budget::{self, Limit, SOURCE_MEMINFO};
/// let all: Vec<Limit> = budget::limits();
/// if cfg!(target_os = "linux") {
///     assert!(all.iter().any(|l| l.source == SOURCE_MEMINFO));
///     let e = budget::check(u128::MAX, "the table", "--depth").unwrap_err().to_string();
///     assert!(e.contains("the table needs about ") && e.ends_with("): lower --depth"));
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Bytes left under this bound.
    pub bytes: u128,
    /// The bound, in words, for error messages (e.g. `the address-space limit RLIMIT_AS ...`).
    pub source: &'static str,
}

/// The machine's free memory: `MemAvailable` of `/proc/meminfo` (what the kernel estimates
/// can be allocated without swapping, page cache included).
pub const SOURCE_MEMINFO: &str = "MemAvailable of /proc/meminfo";

/// The process's address-space limit: `RLIMIT_AS` (`ulimit -v`, `prlimit --as`) minus the
/// virtual memory it already maps (`VmSize` of `/proc/self/status`) and what its worker
/// threads reserve ([`thread_reservations`]). The limit counts virtual memory, reserved or
/// touched, so the space left is the limit less `VmSize`, not less the resident set.
pub const SOURCE_RLIMIT_AS: &str = "the address-space limit RLIMIT_AS (ulimit -v) less this process's VmSize and its threads' stacks and malloc arenas";

/// Bytes of a worker thread's stack: std's default, which rayon's threads keep (the project
/// sets no stack size), unless `RUST_MIN_STACK` names another ([`thread_stack`]).
pub const THREAD_STACK: u128 = 2 << 20;

/// Address space glibc's `malloc` reserves for each thread's own arena at its first
/// allocation: `HEAP_MAX_SIZE`, 64 MiB on 64-bit systems, mapped whole though barely touched,
/// and counted by `RLIMIT_AS` (glibc makes up to eight arenas per core).
pub const ARENA_RESERVE: u128 = 64 << 20;

/// Threads besides rayon's workers that may allocate, each with an arena and a stack: the
/// interrupt handler's and the progress bar's.
pub const EXTRA_THREADS: usize = 2;

/// Address space a run maps beyond its estimated buffers and the threads' reservations
/// (allocator rounding and fragmentation, the GEMM's packing buffers, the tables' builders).
/// Measured (docs/performance.md, "Address space"): `VmPeak` less the `VmSize` at the check
/// and the estimate was 5 to 262 MB over twelve Monte Carlo sizes, within the reservations of
/// four threads (277 MB) every time; 64 MiB more for what the twelve did not meet.
pub const ALLOCATOR_MARGIN: u128 = 64 << 20;

/// [`THREAD_STACK`], or the bytes of `RUST_MIN_STACK` where it is set to a number (as std
/// reads it).
pub fn thread_stack() -> u128 {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(THREAD_STACK)
}

/// Address space `workers` worker threads (and [`EXTRA_THREADS`]) reserve beyond the buffers
/// a run's estimate counts, whether or not they have started: a stack ([`thread_stack`]) and
/// a malloc arena ([`ARENA_RESERVE`]) each, and [`ALLOCATOR_MARGIN`] once.
///
/// # Examples
///
/// ```rust
/// use normscope_core::budget::{self, ALLOCATOR_MARGIN, ARENA_RESERVE};
/// let two = budget::thread_reservations(2);
/// assert_eq!(two, 4 * (budget::thread_stack() + ARENA_RESERVE) + ALLOCATOR_MARGIN);
/// ```
pub fn thread_reservations(workers: usize) -> u128 {
    (workers.saturating_add(EXTRA_THREADS) as u128)
        .saturating_mul(thread_stack().saturating_add(ARENA_RESERVE))
        .saturating_add(ALLOCATOR_MARGIN)
}

/// The process's cgroup v2 limit: `memory.max` less `memory.current` of its cgroup (the
/// `0::PATH` line of `/proc/self/cgroup`) and of every ancestor, under `/sys/fs/cgroup` or,
/// on hybrid hierarchies, `/sys/fs/cgroup/unified`; the tightest of them.
pub const SOURCE_CGROUP_V2: &str = "the cgroup v2 memory.max less memory.current";

/// The process's cgroup v1 limit: `memory.limit_in_bytes` less `memory.usage_in_bytes` of its
/// memory cgroup (the `N:memory:PATH` line of `/proc/self/cgroup`) and of every ancestor, under
/// `/sys/fs/cgroup/memory`; the tightest of them. Limits of [`CGROUP_V1_UNLIMITED`] or more
/// mean none.
pub const SOURCE_CGROUP_V1: &str = "the cgroup v1 memory.limit_in_bytes less memory.usage_in_bytes";

/// cgroup v1 writes "no limit" as the largest page-aligned `i64` (9223372036854771712); any
/// limit from 2^62 bytes up is taken as none.
pub const CGROUP_V1_UNLIMITED: u128 = 1 << 62;

/// The value of a `kB` field of `/proc/meminfo` or `/proc/self/status` (`Name:   123 kB`),
/// in bytes.
pub(crate) fn parse_kb_field(text: &str, field: &str) -> Option<u128> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?.trim();
        let kb: u128 = rest
            .strip_suffix("kB")
            .unwrap_or(rest)
            .trim()
            .parse()
            .ok()?;
        kb.checked_mul(1024)
    })
}

/// A cgroup limit or usage file's value: bytes, or `None` for `max` (no limit) and text that
/// is not a number.
pub(crate) fn parse_cgroup_value(text: &str) -> Option<u128> {
    text.trim().parse().ok()
}

/// The cgroup path of `/proc/self/cgroup` text: the unified (v2) hierarchy's (`0::PATH`) with
/// `v2`, else the memory controller's v1 hierarchy (`N:...memory...:PATH`).
pub(crate) fn parse_cgroup_path(text: &str, v2: bool) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if v2 {
            id == "0" && controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "memory")
        };
        (hit && path.starts_with('/')).then(|| path.to_string())
    })
}

/// The space left under the tightest of the limits `(limit, usage)` read for a cgroup and its
/// ancestors (a missing usage counts as 0; limits of [`CGROUP_V1_UNLIMITED`] and up are none).
pub fn cgroup_room(levels: &[(Option<u128>, Option<u128>)]) -> Option<u128> {
    levels
        .iter()
        .filter_map(|&(limit, usage)| {
            let limit = limit.filter(|&l| l < CGROUP_V1_UNLIMITED)?;
            Some(limit.saturating_sub(usage.unwrap_or(0)))
        })
        .min()
}

/// The space left under an address-space limit `limit` with `vm_size` bytes already mapped
/// (`None`, unknown, counts as nothing mapped).
pub(crate) fn address_space_room(limit: u128, vm_size: Option<u128>) -> u128 {
    limit.saturating_sub(vm_size.unwrap_or(0))
}

/// The text of a /proc or /sys file (bounded, regular files only: [`crate::input::read_text`]).
fn read_sys(path: &str) -> Option<String> {
    crate::input::read_text(std::path::Path::new(path)).ok()
}

/// The soft `RLIMIT_AS` in bytes, or `None` if unlimited (or not known).
fn rlimit_as() -> Option<u128> {
    normscope_numeric::sys::address_space_limit()
}

/// The cgroup `path` and its ancestors, innermost first, as suffixes of the hierarchy's mount
/// point: `/a/b` gives `/a/b`, `/a` and `` (the root).
pub(crate) fn cgroup_ancestors(path: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut dir = path.trim_end_matches('/');
    loop {
        dirs.push(dir.to_string());
        match dir.rfind('/') {
            Some(i) => dir = &dir[..i],
            None => break,
        }
    }
    dirs
}

/// The cgroup room of the hierarchy mounted at `root` for the cgroup `path`: the `limit` and
/// `usage` files of the cgroup and of every ancestor ([`cgroup_room`]).
fn cgroup_levels(root: &str, path: &str, limit: &str, usage: &str) -> Option<u128> {
    let value = |dir: &str, file: &str| {
        read_sys(&format!("{root}{dir}/{file}")).and_then(|t| parse_cgroup_value(&t))
    };
    let levels: Vec<_> = cgroup_ancestors(path)
        .iter()
        .map(|dir| (value(dir, limit), value(dir, usage)))
        .collect();
    cgroup_room(&levels)
}

/// Every bound on the memory this process may still allocate that can be read here (none on
/// systems without `/proc`): [`SOURCE_MEMINFO`], [`SOURCE_RLIMIT_AS`], [`SOURCE_CGROUP_V2`],
/// [`SOURCE_CGROUP_V1`].
pub fn limits() -> Vec<Limit> {
    let mut out = Vec::new();
    let mut push = |bytes: Option<u128>, source| {
        if let Some(bytes) = bytes {
            out.push(Limit { bytes, source });
        }
    };
    push(
        read_sys("/proc/meminfo").and_then(|t| parse_kb_field(&t, "MemAvailable")),
        SOURCE_MEMINFO,
    );
    push(
        rlimit_as().map(|limit| {
            let vm = read_sys("/proc/self/status").and_then(|t| parse_kb_field(&t, "VmSize"));
            let threads = thread_reservations(rayon::current_num_threads());
            address_space_room(limit, vm).saturating_sub(threads)
        }),
        SOURCE_RLIMIT_AS,
    );
    if let Some(cgroups) = read_sys("/proc/self/cgroup") {
        let v2 = parse_cgroup_path(&cgroups, true).and_then(|p| {
            ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .iter()
                .filter_map(|root| cgroup_levels(root, &p, "memory.max", "memory.current"))
                .min()
        });
        push(v2, SOURCE_CGROUP_V2);
        let v1 = parse_cgroup_path(&cgroups, false).and_then(|p| {
            cgroup_levels(
                "/sys/fs/cgroup/memory",
                &p,
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        });
        push(v1, SOURCE_CGROUP_V1);
    }
    out
}

/// The tightest of [`limits`], or `None` where none is known (then nothing is refused).
pub fn tightest() -> Option<Limit> {
    limits().into_iter().min_by_key(|l| l.bytes)
}

/// Bytes this process may still allocate: the least of the machine's `MemAvailable`, the room
/// under its address-space limit and under its cgroup's memory limit ([`limits`]), or `None`
/// where none is known (then nothing is refused).
pub fn available() -> Option<u128> {
    tightest().map(|l| l.bytes)
}

/// `bytes` in words: MB below 1 GB (a run refused under a small limit is not "0.0 GB"), else
/// GB.
fn gb(bytes: u128) -> String {
    if bytes < 1_000_000_000 {
        format!("{:.0} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} GB", bytes as f64 / 1e9)
    }
}

/// Refuses a run whose estimated peak `bytes` exceeds the memory this process may use
/// ([`tightest`]), naming the bound it exceeds.
pub fn check(bytes: u128, what: &str, lower: &str) -> Result<()> {
    match tightest() {
        Some(limit) if bytes > limit.bytes => Err(Error::TooLarge(format!(
            "{what} needs about {} of memory, more than the {} this process may use ({}): lower {lower}",
            gb(bytes),
            gb(limit.bytes),
            limit.source
        ))),
        _ => Ok(()),
    }
}

/// The rate, in floating-point operations per second on the whole machine, at which work
/// estimates are read as time: about the engine's f64 forward and backward passes on the
/// project's 2-core machine (docs/performance.md: 187 GFLOP/s on the reference workload),
/// rounded down. Small matrices run far below it, so the times it gives are optimistic.
pub const WORK_RATE: f64 = 1e11;

/// The longest run accepted: three days at [`WORK_RATE`] ([`MAX_WORK`]). There is no flag to
/// go beyond it: split the work (fewer networks per run and several seeds, or `reproduce
/// --shard`).
pub const MAX_WORK_SECONDS: f64 = 3.0 * 86_400.0;

/// The most work one command may ask for, in floating-point operations (and their
/// equivalents below): [`MAX_WORK_SECONDS`] at [`WORK_RATE`], 2.6e16.
pub const MAX_WORK: f64 = WORK_RATE * MAX_WORK_SECONDS;

/// `seconds` in words: minutes below two hours, hours below two days, else days.
fn duration(seconds: f64) -> String {
    let hours = seconds / 3600.0;
    if hours < 2.0 {
        format!("{:.0} minutes", seconds / 60.0)
    } else if hours < 48.0 {
        format!("{hours:.0} hours")
    } else if hours / 24.0 < 1e6 {
        format!("{:.0} days", hours / 24.0)
    } else {
        format!("{:.1e} days", hours / 24.0)
    }
}

/// Refuses work estimated at more than [`MAX_WORK`] (a NaN estimate too): `what` is the run,
/// `lower` the flags that bring it down.
pub fn check_work(work: f64, what: &str, lower: &str) -> Result<()> {
    if work <= MAX_WORK {
        return Ok(());
    }
    Err(Error::TooLarge(format!(
        "{what} is about {work:.1e} floating-point operations, about {} at {WORK_RATE:.0e} per second, more than the {MAX_WORK:.1e} ({}) a run may take: lower {lower}",
        duration(work / WORK_RATE),
        duration(MAX_WORK_SECONDS)
    )))
}

/// Bytes of the stack `preset` builds at `depth`: a placement file whose scales depend on
/// the block index builds one segment per block (a built-in preset, at most a few). Estimated
/// without building it: the stack at two small depths gives the segments' growth, extended to
/// `depth` (at most one per block); three times the vector, for its growth.
pub(crate) fn stack_bytes(p: &crate::placement::Preset, depth: usize) -> Result<u128> {
    const PROBE: usize = 1024;
    let segments = |l: usize| p.stack(l).map(|s| s.segments.len() as u128);
    let count = if p.file().is_none() || depth <= 2 * PROBE {
        if p.file().is_none() {
            segments(depth.clamp(1, 2 * PROBE))?
        } else {
            segments(depth.max(1))?
        }
    } else {
        let (a, b) = (segments(PROBE)?, segments(2 * PROBE)?);
        let growth = b.saturating_sub(a);
        b.saturating_add(
            growth
                .saturating_mul((depth - 2 * PROBE) as u128)
                .div_ceil(PROBE as u128),
        )
        .min(depth as u128)
    };
    Ok(3 * count.saturating_mul(std::mem::size_of::<crate::spec::Segment>() as u128))
}

/// The largest [`stack_bytes`] of `presets` at `depth`.
pub(crate) fn stacks_bytes(presets: &[&crate::placement::Preset], depth: usize) -> Result<u128> {
    presets
        .iter()
        .map(|p| stack_bytes(p, depth))
        .try_fold(0, |m, b| Ok(b?.max(m)))
}

/// The longest closed-form run accepted without asking for fewer blocks: one hour.
pub(crate) const CLOSED_FORM_MAX_SECONDS: f64 = 3600.0;

/// Refuses a closed form that cannot fit or would run for hours, before anything runs:
/// memory from what `keep` holds per layer plus the kept layers (`kept` of them), time from
/// the blocks streamed at each preset's cost per block (`block_seconds`, one per preset:
/// [`crate::closed_form::cost`]), twice when the backward pass recomputes the forward
/// recursion. A refusal names the largest depth that fits the hour.
pub(crate) fn check_closed_form_plan(
    depth: usize,
    keep: &crate::theory::Keep,
    kept: u128,
    block_seconds: &[f64],
) -> Result<()> {
    let passes = if keep.backward { 2.0 } else { 1.0 };
    let per_block = passes * block_seconds.iter().sum::<f64>();
    let seconds = depth as f64 * per_block;
    if seconds > CLOSED_FORM_MAX_SECONDS {
        let fits = (CLOSED_FORM_MAX_SECONDS / per_block).floor().max(1.0);
        return Err(Error::TooLarge(format!(
            "the closed form at depth {depth} for {} preset(s) takes about {} ({:.1e} s per block{}; the limit is {:.0} hour): lower --depth to at most {fits:.0}, or the presets",
            block_seconds.len(),
            duration(seconds),
            per_block,
            if keep.backward {
                ", the forward recursion twice for the backward pass"
            } else {
                ""
            },
            CLOSED_FORM_MAX_SECONDS / 3600.0
        )));
    }
    check(
        closed_form_plan_bytes(depth, keep, kept),
        &format!("the closed form at depth {depth}"),
        "--depth, or --layers and the metrics (coef, branch_weight, path_len and eff_depth keep every layer)",
    )
}

/// Peak bytes of a closed form of `depth` blocks: what `keep` holds per layer, the `kept`
/// layers, and the square-root checkpoints.
pub(crate) fn closed_form_plan_bytes(depth: usize, keep: &crate::theory::Keep, kept: u128) -> u128 {
    let sqrt = ((depth as f64 + 1.0).sqrt().ceil()) as u128;
    let len = depth as u128 + 1;
    // Kept layers: dense vectors over every layer when they are a quarter or more of them
    // (Keep::dense), else B-tree entries at about three times a slot's bytes each.
    let kept_bytes = if kept.saturating_mul(4) >= len {
        CLOSED_FORM_PER_LAYER * len
    } else {
        SPARSE_PER_KEPT_LAYER * kept
    };
    keep.bytes_per_layer()
        .saturating_mul(len)
        .saturating_add(kept_bytes)
        .saturating_add(CLOSED_FORM_PER_LAYER * sqrt)
}

/// Refuses a closed form of `depth` blocks with every sequence kept that cannot fit.
pub fn check_closed_form(depth: usize) -> Result<()> {
    check(
        CLOSED_FORM_PER_LAYER * (depth as u128 + 1),
        &format!("the closed form at depth {depth}"),
        "--depth",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_fields_of_meminfo_and_status_are_read_in_bytes() {
        let meminfo =
            "MemTotal:       24684096 kB\nMemFree:         1000 kB\nMemAvailable:   22118144 kB\n";
        assert_eq!(
            parse_kb_field(meminfo, "MemAvailable"),
            Some(22118144 * 1024)
        );
        // A prefix of another field's name does not match it.
        assert_eq!(parse_kb_field(meminfo, "Mem"), None);
        let status = "Name:\tnormscope\nVmPeak:\t  200000 kB\nVmSize:\t  123456 kB\n";
        assert_eq!(parse_kb_field(status, "VmSize"), Some(123456 * 1024));
        assert_eq!(parse_kb_field(status, "VmRSS"), None);
        assert_eq!(parse_kb_field("VmSize:\tlots kB\n", "VmSize"), None);
    }

    #[test]
    fn cgroup_paths_limits_and_rooms_are_parsed() {
        let hybrid = "12:pids:/\n4:memory:/jobs/a7\n1:cpu,cpuacct:/\n0::/user.slice/run-1.scope\n";
        assert_eq!(
            parse_cgroup_path(hybrid, true).as_deref(),
            Some("/user.slice/run-1.scope")
        );
        assert_eq!(
            parse_cgroup_path(hybrid, false).as_deref(),
            Some("/jobs/a7")
        );
        let joined = "3:cpu,memory,blkio:/batch\n";
        assert_eq!(parse_cgroup_path(joined, false).as_deref(), Some("/batch"));
        assert_eq!(parse_cgroup_path(joined, true), None);
        assert_eq!(parse_cgroup_path("0::/\n", true).as_deref(), Some("/"));
        assert_eq!(
            cgroup_ancestors("/a/b"),
            vec!["/a/b".to_string(), "/a".into(), "".into()]
        );
        assert_eq!(cgroup_ancestors("/"), vec![String::new()]);
        assert_eq!(parse_cgroup_value("max\n"), None);
        assert_eq!(parse_cgroup_value("8589934592\n"), Some(8 << 30));
        // The tightest level wins; v1's "unlimited" and v2's "max" are no limit.
        let gib = 1u128 << 30;
        let levels = [
            (None, Some(gib)),
            (Some(9223372036854771712), Some(gib)),
            (Some(8 * gib), Some(3 * gib)),
            (Some(6 * gib), None),
        ];
        assert_eq!(cgroup_room(&levels), Some(5 * gib));
        assert_eq!(cgroup_room(&levels[..2]), None);
        // Usage above the limit leaves nothing.
        assert_eq!(cgroup_room(&[(Some(gib), Some(2 * gib))]), Some(0));
        assert_eq!(address_space_room(8 * gib, Some(gib)), 7 * gib);
        assert_eq!(address_space_room(gib, Some(2 * gib)), 0);
        assert_eq!(address_space_room(gib, None), gib);
    }

    #[test]
    fn the_tightest_limit_is_the_one_available_and_named() {
        // Every call reads the machine afresh, and MemAvailable moves while the other tests
        // of this process allocate: compare within one reading, and across readings only to
        // a factor of 2 (the exact comparison failed in CI).
        let all = limits();
        let Some(least) = all.iter().map(|l| l.bytes).min() else {
            assert_eq!(available(), None);
            return;
        };
        let t = tightest().expect("a limit is readable");
        assert!(all.iter().any(|l| l.source == t.source), "{}", t.source);
        let now = available().expect("a limit is readable");
        assert!(
            now / 2 <= least && least <= now.saturating_mul(2),
            "{now} vs {least}"
        );
        let e = check(least.saturating_mul(4) + (1 << 40), "this", "--x")
            .unwrap_err()
            .to_string();
        assert!(
            all.iter().any(|l| e.contains(l.source)) && e.contains("lower --x"),
            "{e}"
        );
        assert!(check(least / 4, "this", "--x").is_ok());
    }

    #[test]
    fn a_stack_with_a_segment_per_block_is_sized_by_its_depth() {
        let builtin = stack_bytes(crate::placement::find("pre").unwrap(), 1_000_000_000).unwrap();
        assert!(builtin < 1000, "{builtin}");
        let decay = crate::placement::load_text(
            "[[placement]]\nname = \"budget-test-decay\"\nlabel = \"x\"\nequation = \"x\"\nsource = \"x\"\nfinal_norm = \"layer\"\n[[placement.segment]]\ninput = \"layer\"\nbranch = \"1/sqrt(l)\"\n",
            "budget-test.toml",
        )
        .unwrap()[0];
        let per_block = stack_bytes(decay, 1_000_000_000).unwrap();
        let segment = std::mem::size_of::<crate::spec::Segment>() as u128;
        assert_eq!(per_block, 3 * segment * 1_000_000_000);
        let small = stack_bytes(decay, 100).unwrap();
        assert_eq!(small, 3 * segment * 100);
    }
}
