//! The operating-system calls of the workspace, the only `unsafe` outside the GEMM kernels:
//! the address-space limit the memory preflight respects ([`address_space_limit`]), glibc's
//! `malloc` set to keep freed memory for the training commands ([`keep_freed_memory`]), the
//! longest file name a folder takes, which `--out`'s preflight checks ([`name_max`]); and one
//! the tests make: [`mkfifo`].
//!
//! **Keeping freed memory** (`train`, `normscope-bench --train`).
//!
//! A training update allocates and frees the same few hundred matrices every step (up to
//! 1 MB each at the bench's size). With glibc's defaults the ones of 128 KiB or more are fresh
//! `mmap`s, returned on `free`, so every step pays page faults and zeroing again; freed memory
//! at the top of the heap is returned as well. Results do not change (allocation never changes
//! arithmetic). Setting `M_TRIM_THRESHOLD` alone is worse than the defaults: it also switches
//! off glibc's dynamic mmap threshold. The Monte Carlo commands keep the defaults: there it
//! saved 1.5%, and the bench's peak-memory measurement is of the default allocator (measurements in
//! `docs/performance.md`).

/// The largest allocation glibc serves from its heap rather than a fresh `mmap`: 32 MiB, the
/// upper limit `mallopt(3)` documents for 64-bit systems (`M_MMAP_THRESHOLD`). glibc 2.36 (this
/// project's machine) accepts larger values; glibc versions that enforce `HEAP_MAX_SIZE / 2`
/// refuse them, so a larger value would silently do nothing there.
pub const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;

/// Free memory at the top of the heap glibc keeps rather than returning it: 1 GiB.
pub const TRIM_THRESHOLD_BYTES: i32 = 1 << 30;

/// Applies [`MMAP_THRESHOLD_BYTES`] and [`TRIM_THRESHOLD_BYTES`] (`mallopt`) on Linux with
/// glibc and returns whether glibc accepted both; elsewhere does nothing and returns `false`.
/// A refused setting costs speed only, so the callers go on either way.
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes two tuning parameters of the allocator; it is
        // called before the training threads allocate.
        let (mmap, trim) = unsafe {
            (
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
            )
        };
        mmap == 1 && trim == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// The soft `RLIMIT_AS` (`getrlimit(2)`) in bytes, or `None` if unlimited (or not known: not
/// Unix).
pub fn address_space_limit() -> Option<u128> {
    #[cfg(unix)]
    {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one `rlimit` through a valid pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0
            || r.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        Some(r.rlim_cur as u128)
    }
    #[cfg(not(unix))]
    None
}

/// The longest file name, in bytes, that the file system of folder `dir` takes
/// (`pathconf(dir, _PC_NAME_MAX)`), or `None` if it states no limit or cannot be asked (not
/// Unix, a path with a NUL byte, an error).
pub fn name_max(dir: &std::path::Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: a valid NUL-terminated path; pathconf only reads it.
        let n = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) };
        u64::try_from(n).ok().filter(|&n| n > 0)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Makes a FIFO at `path` (`mkfifo(3)`, mode 0600): the tests' stand-in for an input that
/// would block a reader.
#[cfg(unix)]
pub fn mkfifo(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_accepts_both_settings() {
        // glibc returns 0 for a value it refuses; both constants are within its documented
        // limits.
        assert!(keep_freed_memory());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_folder_states_its_longest_file_name() {
        let n = name_max(&std::env::temp_dir()).unwrap();
        assert!((14..=4096).contains(&n), "{n}");
        assert_eq!(name_max(std::path::Path::new("/no/such/folder/here")), None);
    }
}
