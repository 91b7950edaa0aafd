//! glibc's `malloc` set to keep freed memory for the training commands (`train`, `bench
//! --train`).
//!
//! A training update allocates and frees the same few hundred matrices every step (up to
//! 1 MB each at the bench's size). With glibc's defaults the larger ones are fresh `mmap`s,
//! returned on `free`, so every step pays page faults and zeroing again. Measured on `bench
//! --train --no-torch` (2 threads, quiet machine) with the equivalent environment variables
//! (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` set to the constants below): f64
//! 43.0 to 46.9 updates/s, f32 77.3 to 80.1. Results do not change (allocation never
//! changes arithmetic). The Monte Carlo commands keep the defaults: there it saved 1.5%, and
//! the bench's peak-memory measurement is of the default allocator.

/// The largest allocation glibc serves from its heap rather than a fresh `mmap`: 256 MiB.
pub const MMAP_THRESHOLD_BYTES: i32 = 256 << 20;

/// Free memory at the top of the heap glibc keeps rather than returning it: 1 GiB.
pub const TRIM_THRESHOLD_BYTES: i32 = 1 << 30;

/// Applies [`MMAP_THRESHOLD_BYTES`] and [`TRIM_THRESHOLD_BYTES`] (`mallopt`) on Linux with
/// glibc; elsewhere does nothing.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes two tuning parameters of the allocator; it is called
    // before the training threads allocate.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}
