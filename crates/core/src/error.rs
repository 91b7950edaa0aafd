//! Typed library errors. The binary prints one as a single line; callers of the library can
//! match on [`enum@Error`] to tell bad input (exit status 2) from failures while running.

use thiserror::Error;

/// Everything the library can fail with. New variants may be added: match with a `_` arm.
///
/// # Examples
///
/// ```rust
/// use normscope_core::Error;
/// let e = Error::invalid("--width", 0, "an integer >= 1");
/// assert_eq!(e.to_string(), "invalid --width = 0: an integer >= 1");
/// assert!(e.is_bad_input());
/// assert!(!e.is_numerical());
/// let io = Error::Io {
///     path: "x.csv".into(),
///     source: std::io::Error::other("disk full"),
/// };
/// assert_eq!(io.to_string(), "x.csv: disk full");
/// assert!(!io.is_bad_input()); // exit status 1
/// assert!(Error::Overflow("q_L".into()).is_numerical());
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration field has a value outside its accepted range.
    #[error("invalid {field} = {}: {accepted}", shown(.value))]
    InvalidParam {
        /// The flag or config key, e.g. `--depth`.
        field: &'static str,
        /// The value as given.
        value: String,
        /// What would have been accepted.
        accepted: String,
    },
    /// A name (preset, metric, branch, ...) that is not in its registry.
    #[error("unknown {kind} '{}'{}; valid: {valid}", shown(.name), suggestion(.name, .valid))]
    Unknown {
        /// What kind of name, e.g. `preset`.
        kind: &'static str,
        /// The name as given.
        name: String,
        /// The valid names, comma separated.
        valid: String,
    },
    /// The requested combination cannot be computed (e.g. a symbolic expansion of a branch whose
    /// gain depends on its input's scale).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A quantity is mathematically undefined for this configuration.
    #[error("undefined: {0}")]
    Undefined(String),
    /// A run that would not fit in this machine's memory, refused before allocating.
    #[error("too large: {0}")]
    TooLarge(String),
    /// A number left the range of f64 even in log space.
    #[error("overflow: {0}")]
    Overflow(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Standard output or standard error could not be written (a closed pipe, a full device).
    /// Exit status 1, a failure of the environment as for help that cannot be written, or 141
    /// for a closed pipe (see [`crate::output::console`]).
    #[error("cannot write to {stream}: {source}")]
    Console {
        /// `standard output` or `standard error`.
        stream: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Another process is writing into the output folder (it holds the folder's lock). Not bad
    /// input: exit status 1, like other failures of the environment.
    #[error(
        "{path}: another normscope run is writing into this folder; wait for it to end or choose another --out-dir"
    )]
    Busy {
        /// The output folder.
        path: String,
    },
    /// A table operation in polars failed.
    #[error("table: {0}")]
    Table(#[from] polars::error::PolarsError),
    /// A configuration file that does not parse or has a bad key or value.
    #[error("config {path}: {}", shown_message(.message))]
    Config {
        /// The file.
        path: String,
        /// What is wrong, naming the key and what is accepted.
        message: String,
    },
    /// The run was asked to stop ([`crate::interrupt::request`]: Ctrl-C in the Python
    /// package); nothing it would have written was written.
    #[error("interrupted")]
    Interrupted,
    /// Drawing or encoding a figure failed (`normscope-figure`).
    #[error("figure {path}: {message}")]
    Figure {
        /// The output file.
        path: String,
        /// What the drawing or encoding reported (in `normscope-figure`).
        message: String,
    },
}

impl Error {
    /// Whether the error is the user's input (exit status 2) rather than a failure while running
    /// (exit status 1: the environment, e.g. I/O). A numerical overflow or undefined value is
    /// caused by the parameters given, so it counts as input.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::InvalidParam { .. }
                | Error::Unknown { .. }
                | Error::Unsupported(_)
                | Error::Undefined(_)
                | Error::Config { .. }
                | Error::TooLarge(_)
                | Error::Overflow(_)
        )
    }

    /// Whether the error is a closed pipe on standard output or error (the reader went away),
    /// which ends a run quietly.
    pub(crate) fn is_closed_pipe(&self) -> bool {
        matches!(self, Error::Console { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// Whether the error is a numerical failure of one stack's computation (an overflow beyond
    /// f64 even in log space, or a quantity undefined for that stack), which a table of many
    /// presets reports for that preset alone.
    pub fn is_numerical(&self) -> bool {
        matches!(self, Error::Overflow(_) | Error::Undefined(_))
    }

    /// Shorthand for [`Error::InvalidParam`].
    pub fn invalid(field: &'static str, value: impl ToString, accepted: impl ToString) -> Self {
        Error::InvalidParam {
            field,
            value: value.to_string(),
            accepted: accepted.to_string(),
        }
    }
}

/// The longest value an error message repeats whole.
pub const SHOWN_VALUE: usize = 80;

/// Least Jaro-Winkler similarity for a "did you mean" (clap suggests from 0.7; a little
/// stricter here, where the valid names are short and share prefixes).
const SUGGEST_FROM: f64 = 0.8;

/// ` (did you mean 'x'?)` for the valid name most similar to `name` (Jaro-Winkler, `strsim`,
/// both lowercased), if one is similar enough; the names are the words of `valid` (aliases
/// included).
fn suggestion(name: &str, valid: &str) -> String {
    let words = valid
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .filter(|w| !w.is_empty() && *w != "also");
    let best = words
        .map(|w| {
            let sim = strsim::jaro_winkler(&name.to_ascii_lowercase(), &w.to_ascii_lowercase());
            (sim, w)
        })
        .filter(|(s, _)| *s >= SUGGEST_FROM)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, w)) => format!(" (did you mean '{w}'?)"),
        None => String::new(),
    }
}

/// A value as an error message shows it: whole up to [`SHOWN_VALUE`] characters, else its
/// start, an ellipsis and its length in bytes (a 10 MB value is not echoed back); control
/// characters escaped, so the message stays one line.
///
/// # Examples
///
/// ```rust
/// use normscope_core::error::shown;
/// assert_eq!(shown("pre"), "pre");
/// assert_eq!(shown("a\nb"), "a\\nb");
/// let long = "k".repeat(15 << 20);
/// assert_eq!(shown(&long), format!("{}... (15728640 bytes)", "k".repeat(80)));
/// ```
pub fn shown(value: &str) -> String {
    // Control characters (a newline in a name) are escaped: an error is one line.
    let escaped: String;
    let value = if value.chars().any(char::is_control) {
        escaped = value
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        &escaped
    } else {
        value
    };
    match value.char_indices().nth(SHOWN_VALUE) {
        Some((cut, _)) => format!("{}... ({} bytes)", &value[..cut], value.len()),
        None => value.to_string(),
    }
}

/// The longest message of a configuration error ([`Error::Config`]) shown whole: the
/// longest list of accepted keys is a few hundred characters.
pub const SHOWN_MESSAGE: usize = 2000;

/// A configuration error's message as shown: every word (between spaces) longer than twice
/// [`SHOWN_VALUE`] shortened by [`shown`] (a value the message already shortened, quoted, is
/// kept), and the whole cut after [`SHOWN_MESSAGE`] characters, so that no value a file gave
/// (a key, a string parsed as the wrong type) is echoed whole.
///
/// # Examples
///
/// ```rust
/// use normscope_core::Error;
/// let message = format!("invalid type: string \"{}\", expected usize", "x".repeat(1000));
/// let e = Error::Config { path: "c.toml".into(), message }.to_string();
/// assert!(e.starts_with("config c.toml: invalid type: string \"xxx"), "{e}");
/// assert!(e.ends_with("... (1003 bytes) expected usize"), "{e}");
/// ```
fn shown_message(message: &str) -> String {
    let words: Vec<String> = message
        .split(' ')
        .map(|w| {
            if w.chars().nth(2 * SHOWN_VALUE).is_some() || w.chars().any(char::is_control) {
                shown(w)
            } else {
                w.to_string()
            }
        })
        .collect();
    let text = words.join(" ");
    match text.char_indices().nth(SHOWN_MESSAGE) {
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], message.len()),
        None => text,
    }
}

/// Library result type.
///
/// # Examples
///
/// ```rust
/// use normscope_core::{Error, Result};
/// fn width(d: usize) -> Result<usize> {
///     if d == 0 {
///         return Err(Error::invalid("--width", d, "an integer >= 1"));
///     }
///     Ok(d)
/// }
/// assert_eq!(width(8)?, 8);
/// assert!(matches!(width(0), Err(Error::InvalidParam { field: "--width", .. })));
/// # Ok::<(), Error>(())
/// ```
pub type Result<T> = std::result::Result<T, Error>;
