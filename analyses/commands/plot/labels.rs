//! The texts a `normscope plot` draws that come from the user (the title, the column names on
//! the axes and in legends and panel titles, the `--by` and `--facet` values of the table),
//! checked before anything is drawn: at most so many characters, no control characters, axis
//! labels no wider than their axis. A refusal names the flag the text comes from.

use super::request::Request;
use normscope_core::{Error, Result};
use normscope_figure::LinePlot;

/// Most characters of `--title` (a panel's title adds its `--facet` value after it).
pub const MAX_TITLE_CHARS: usize = 100;

/// Most characters of a column name (`--x`, `--y`, `--by`, `--facet`) and of a `--by` or
/// `--facet` value drawn in a legend or a panel's title.
pub const MAX_NAME_CHARS: usize = 40;

/// Refuses `text` (the value of `field`) if it has more than `most` characters or a control
/// character; `what` says what it is (`a title`, `a column name`).
fn check(field: &'static str, text: &str, most: usize, what: &str) -> Result<()> {
    let n = text.chars().count();
    if n <= most && !text.chars().any(char::is_control) {
        return Ok(());
    }
    Err(Error::invalid(
        field,
        text,
        format!("{what} of at most {most} characters, no control characters (it has {n})"),
    ))
}

/// Refuses a `--title` or column name that cannot be drawn ([`MAX_TITLE_CHARS`],
/// [`MAX_NAME_CHARS`], control characters), before the table is read.
pub(super) fn check_request(req: &Request) -> Result<()> {
    if let Some(t) = &req.title {
        check("--title", t, MAX_TITLE_CHARS, "a title")?;
    }
    for (flag, name) in req.columns() {
        check(flag, name, MAX_NAME_CHARS, "a column name")?;
    }
    Ok(())
}

/// Refuses a `--by` or `--facet` value (`field`) of the table at row `row` (0-based) that
/// cannot be drawn in a legend or title.
pub(super) fn check_value(
    field: &'static str,
    text: &str,
    row: usize,
    req: &Request,
) -> Result<()> {
    let what = format!("values (in row {} of {}) each", row + 1, req.path.display());
    check(field, text, MAX_NAME_CHARS, &what)
}

/// Refuses a panel whose axis label is wider than its axis ([`LinePlot::label_misfit`]),
/// naming `--x` or `--y`.
pub(super) fn check_axes(plot: &LinePlot) -> Result<()> {
    match plot.label_misfit() {
        None => Ok(()),
        Some((axis, why)) => {
            let (flag, name) = if axis == 0 {
                ("--x", &plot.x_label)
            } else {
                ("--y", &plot.y_label)
            };
            Err(Error::invalid(
                flag,
                name,
                format!("a column whose name fits beside its axis ({why})"),
            ))
        }
    }
}
