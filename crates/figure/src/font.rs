//! The one font: DejaVu Sans, embedded (the `dejavu` crate) and registered for plotters'
//! `ab_glyph` text, so no system font or package is needed; and the width of a text in it.

use plotters::prelude::*;
use std::sync::OnceLock;

/// The family name the embedded font is registered under.
pub const FONT: &str = "sans-serif";

/// Registers DejaVu Sans once per process (every figure function does it first).
pub fn register_font() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("embedded DejaVu Sans is a valid font"));
    });
}

/// Width in pixels of `text` at `px` in [`FONT`], as plotters lays it out.
pub(crate) fn text_width(text: &str, px: u32) -> u32 {
    register_font();
    (FONT, px)
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * px, |b| b.0)
}
