//! `normscope._normscope`: the Rust side of the Python package. Every command goes through the
//! command line's own parser and checks ([`normscope::app`]), so a keyword argument means what
//! its flag means; the work runs on a thread of its own, with the GIL released, while the
//! calling thread watches for Ctrl-C ([`drive`]) and draws the progress bar. The Python side
//! (`python/normscope/__init__.py`) turns keyword arguments into flags and prints the notes.
//!
//! Tables cross the boundary as Parquet bytes in memory ([`parquet`], [`csv`]): Python reads
//! them with `polars.read_parquet`, which keeps every column's type. No polars-Python bridge
//! crate is linked: pyo3-polars turned on polars' `python` feature, so `pip install ./python`
//! compiled polars a second time beside the workspace's build (docs/architecture.md); without it the
//! wheel reuses the workspace's compiled polars.

#![deny(unsafe_code)]

use normscope::app::cli::Command;
use normscope::app::{self, Outcome, Produced};
use normscope::output::table::Format;
use normscope::output::{exit, progress};
use normscope::{Error, interrupt};
use polars::prelude::{DataFrame, ParquetReader, SerReader};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// One run at a time per process: the interrupt flag and the published progress are
/// process-wide.
static RUN: Mutex<()> = Mutex::new(());

/// How often the calling thread checks for Ctrl-C and redraws the progress bar.
const POLL: Duration = Duration::from_millis(100);

/// A normscope error as the Python exception a user expects: bad input is `ValueError` with
/// the command line's one-line message, a stopped run `KeyboardInterrupt`, a file that cannot
/// be read or written `OSError`, anything else `RuntimeError`.
fn py_err(e: Error) -> PyErr {
    let line = exit::error_line(&e);
    match e {
        Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted: nothing was written"),
        e if e.is_bad_input() => PyValueError::new_err(line),
        Error::Io { .. } | Error::Busy { .. } => PyOSError::new_err(line),
        _ => PyRuntimeError::new_err(line),
    }
}

/// The settings of `normscope <command> <argv...>`, parsed as the binary parses them; a
/// parse error is `ValueError` with clap's message on one line (`error: ` left out).
fn parse(command: &str, argv: Vec<String>) -> PyResult<Command> {
    let args = ["normscope".to_string(), command.to_string()]
        .into_iter()
        .chain(argv);
    let cli = app::parse(args).map_err(|e| {
        let line = exit::parse_error_line(&e);
        PyValueError::new_err(line.strip_prefix("error: ").unwrap_or(&line).to_string())
    })?;
    cli.command
        .ok_or_else(|| PyValueError::new_err(format!("unknown command {command}")))
}

/// Runs `job` on a thread of its own while this thread, holding the GIL only between waits,
/// checks for signals every [`POLL`] and calls `progress(unit, position, length)` when the
/// published bar moves. On Ctrl-C (or an exception from `progress`) the job is asked to stop
/// ([`interrupt::request`]), waited for, and the exception is raised: a job stopped before it
/// began writing writes nothing, and a file already begun is finished whole.
fn drive<T: Send + 'static>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    job: impl FnOnce() -> normscope::Result<T> + Send + 'static,
) -> PyResult<T> {
    let _one = loop {
        match RUN.try_lock() {
            Ok(g) => break g,
            // A panic in an earlier run poisoned it; the lock itself guards no data.
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                py.detach(|| std::thread::sleep(POLL / 4));
                py.check_signals()?;
            }
        }
    };
    interrupt::clear();
    let (tx, mut rx) = channel();
    let worker = std::thread::Builder::new()
        .name("normscope".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = tx.send(r);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the run's thread: {e}")))?;
    let mut shown: Option<(String, u64, u64)> = None;
    let outcome = loop {
        // The receiver is Send but not Sync: it goes into the wait and comes back.
        let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        match got {
            Ok(r) => break Ok(r),
            Err(RecvTimeoutError::Disconnected) => {
                break Err(PyRuntimeError::new_err(
                    "the run's thread ended without a result",
                ));
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let watched = py.check_signals().and_then(|()| {
            let now = progress::current();
            match progress {
                Some(cb) if now.is_some() && now != shown => {
                    shown = now.clone();
                    cb.call1(now.unwrap_or_default()).map(drop)
                }
                _ => Ok(()),
            }
        });
        if let Err(e) = watched {
            interrupt::request();
            let _ = py.detach(move || rx.recv());
            break Err(e);
        }
    };
    let _ = py.detach(|| worker.join());
    interrupt::clear();
    // A finished run's bar ends full (its last ticks may fall between two polls).
    if let (Ok(Ok(Ok(_))), Some(cb), Some((unit, _, len))) = (&outcome, progress, shown) {
        cb.call1((unit, len, len))?;
    }
    match outcome? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(py_err(e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(PyRuntimeError::new_err(format!("internal error: {what}")))
        }
    }
}

/// A command's result in Python: a table (Parquet bytes, [`parquet`]), text, or None.
enum Value {
    Frame(Vec<u8>),
    Text(String),
    Nothing,
}

/// Writes `outcome` to its `--out` as the command line does (atomically, with provenance),
/// when it has one; standard output is left alone (the caller gets the value instead).
fn write_out(outcome: Outcome) -> normscope::Result<Value> {
    let out = outcome.out.clone();
    let (value, copy) = match outcome.produced {
        Produced::Table { frame, format, .. } => {
            // The command line's check of `--format` without `--out` (Parquet needs a file);
            // with one, `app::write` makes it.
            if out.is_none() {
                Format::chosen(format, None)?;
            }
            (
                Value::Frame(parquet(frame.clone())?),
                Produced::Table {
                    frame,
                    format,
                    after: None,
                },
            )
        }
        Produced::Bytes(b) => (
            Value::Text(String::from_utf8_lossy(&b).into_owned()),
            Produced::Bytes(b),
        ),
        Produced::Done => return Ok(Value::Nothing),
    };
    if out.is_some() {
        app::write(
            Outcome {
                produced: copy,
                out,
                provenance: outcome.provenance,
            },
            &mut Vec::new(),
        )?;
    }
    Ok(value)
}

/// `frame` as the Parquet bytes Python reads into a polars DataFrame (`__init__.py`'s
/// `_frame`): typed columns, the command line's Parquet writer (finite values only). Called
/// on the run's thread, so the encoding does not hold the GIL.
fn parquet(mut frame: DataFrame) -> normscope::Result<Vec<u8>> {
    Format::Parquet.encode(&mut frame)
}

/// `normscope <command>` with `argv` (flags as the command line takes them): returns
/// `(value, notes)`, value a table as Parquet bytes ([`parquet`]; table commands), a str
/// (text) or None (commands that write their own files).
#[pyfunction]
#[pyo3(signature = (command, argv, progress=None))]
fn run(
    py: Python<'_>,
    command: &str,
    argv: Vec<String>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<PyAny>, Vec<String>)> {
    let cmd = parse(command, argv)?;
    let (value, notes) = drive(py, progress, move || {
        let mut notes = Vec::new();
        let value = match cmd {
            Command::Presets(a) => {
                normscope::placement::load_all(&a.placements)?;
                Value::Frame(parquet(normscope::placement::frame()?)?)
            }
            cmd => write_out(app::run(cmd, &mut notes)?)?,
        };
        Ok((value, notes))
    })?;
    let value = match value {
        Value::Frame(b) => PyBytes::new(py, &b).into_any().unbind(),
        Value::Text(t) => t.into_pyobject(py)?.into_any().unbind(),
        Value::Nothing => py.None(),
    };
    Ok((value, notes))
}

/// `normscope expand` with `argv`: `(coefficients as Parquet bytes, latex, notes)`; with
/// `--out` the file is written as the command line writes it (in `--format`).
#[pyfunction]
fn expand<'py>(
    py: Python<'py>,
    argv: Vec<String>,
) -> PyResult<(Bound<'py, PyBytes>, String, Vec<String>)> {
    let Command::Expand(a) = parse("expand", argv)? else {
        return Err(PyRuntimeError::new_err("expand: not parsed as expand"));
    };
    let (frame, latex, notes) = drive(py, None, move || {
        let mut notes = Vec::new();
        let (frame, latex, outcome) = app::expand_both(&a, &mut notes)?;
        if let Some(outcome) = outcome {
            write_out(outcome)?;
        }
        Ok((parquet(frame)?, latex, notes))
    })?;
    Ok((PyBytes::new(py, &frame), latex, notes))
}

/// Loads a placement file (`is_path`) or its TOML text; returns the names of its presets.
#[pyfunction]
fn load_placements(source: &str, is_path: bool) -> PyResult<Vec<String>> {
    let presets = if is_path {
        normscope::placement::load(std::path::Path::new(source))
    } else {
        normscope::placement::load_text(source, "<string>")
    }
    .map_err(py_err)?;
    Ok(presets.iter().map(|p| p.name.to_string()).collect())
}

/// A table given as Parquet bytes (Python's `DataFrame.write_parquet`) in CSV, through the
/// command line's writer.
#[pyfunction]
fn csv(table: &[u8]) -> PyResult<String> {
    let mut df = ParquetReader::new(std::io::Cursor::new(table))
        .finish()
        .map_err(|e| PyValueError::new_err(format!("not a table polars can read: {e}")))?;
    let bytes =
        normscope::analyses::runner::sidecar::encode_table(Format::Csv, &mut df).map_err(py_err)?;
    String::from_utf8(bytes).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The keyword arguments of `command`'s function: `(name, flag, kind, default as a Python
/// literal, help)`.
#[pyfunction]
fn params(command: &str) -> Vec<(String, String, &'static str, String, String)> {
    app::python::params(command)
        .into_iter()
        .map(|p| {
            let default = app::python::python_default(&p);
            (p.name, p.flag, p.kind.name(), default, p.help)
        })
        .collect()
}

/// The docstring of function `name`.
#[pyfunction]
fn docstring(name: &str) -> PyResult<String> {
    app::python::docstring(name).ok_or_else(|| PyValueError::new_err(format!("no function {name}")))
}

/// The functions of the package, in order: `(name, command or None, takes progress=)`.
#[pyfunction]
fn functions() -> Vec<(&'static str, Option<&'static str>, bool)> {
    app::python::FUNCTIONS
        .iter()
        .map(|f| (f.name, f.command, f.progress))
        .collect()
}

/// The extension module.
#[pymodule]
fn _normscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Python draws its own bar when asked (`progress=True`); none draws itself unasked.
    progress::draw_on_terminal(false);
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("version_long", normscope::analyses::manifest::VERSION)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(load_placements, m)?)?;
    m.add_function(wrap_pyfunction!(csv, m)?)?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    m.add_function(wrap_pyfunction!(docstring, m)?)?;
    m.add_function(wrap_pyfunction!(functions, m)?)?;
    Ok(())
}
