//! A request to stop a long run early, from another thread: the Python package's Ctrl-C
//! (`KeyboardInterrupt`). The binary does not use it; its signal handler ends the process
//! ([`crate::output::staging::abandon`]).
//!
//! Once [`request`]ed: Monte Carlo stops between batches of networks and training between
//! updates, both returning [`Error::Interrupted`] (a training run cut short is never returned as
//! a result: every caller of `train::run::train` checks); `reproduce` starts no further analysis
//! and commits no staged one; the application writes no `--out` (`app::write` checks before the
//! first byte; a file already being written is completed, table and sidecar, never left half
//! written). The closed form and the symbolic expansion have no such checks: they finish first.
//! [`clear`] readies the next run.
//!
//! # Examples
//!
//! ```rust,standalone_crate
//! use normscope_core::interrupt;
//!
//! assert!(interrupt::check().is_ok());
//! interrupt::request();
//! assert_eq!(interrupt::check().unwrap_err().to_string(), "interrupted");
//! interrupt::clear();
//! assert!(interrupt::check().is_ok());
//! ```

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks the run in flight to stop at its next check.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Withdraws a request (before the next run starts).
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// [`Error::Interrupted`] if a stop was requested.
pub fn check() -> Result<()> {
    if requested() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}
