//! The pixel layout of a [`LinePlot`]: margins, label areas, the legend's rows and strip, the
//! title's lines, from which the plotting area's size follows.

use crate::font::{FONT, register_font, text_width};
use crate::line_plot::LinePlot;
use crate::sizes::{LABEL_PX, SIZE, TICK_PX, TITLE_PX};
use plotters::prelude::*;

/// Layout of a [`LinePlot`] in pixels: margins, label areas and the caption's height, from
/// which the plotting area's size follows.
pub(crate) const MARGIN: u32 = 15;
/// Top of a title's first line when the title takes several lines (glyphs such as `T` reach
/// above the text box plotters measures).
pub(crate) const TITLE_TOP: u32 = 12;
pub(crate) const MARGIN_RIGHT: u32 = 40;
pub(crate) const X_LABEL_AREA: u32 = 100;
pub(crate) const Y_LABEL_AREA: u32 = 150;

/// Height of one legend entry.
pub(crate) const LEGEND_ROW: u32 = TICK_PX + 10;
/// Width of a legend entry's line or marker sample, and the gap after it.
pub(crate) const LEGEND_GLYPH: u32 = 45;
/// Most columns of a legend strip below the axes.
pub(crate) const STRIP_COLUMNS: usize = 3;
/// Room after a strip entry's label, before the next column.
pub(crate) const STRIP_GAP: u32 = 30;
/// Gap between a corner legend's box and the axes.
pub(crate) const LEGEND_INSET: u32 = 8;

/// The title of a figure `width` px wide in lines that each fit beside the margins: one line
/// if it fits, else broken before its parenthesized setting (`Title (linear branch, g = 1)`)
/// when both parts fit, else at the spaces, as few lines as fit.
pub(crate) fn title_lines(title: &str, width: u32) -> Vec<String> {
    let room = width.saturating_sub(2 * MARGIN);
    let fits = |t: &str| text_width(t, TITLE_PX) <= room;
    if fits(title) {
        return vec![title.to_string()];
    }
    if let Some(i) = title.find(" (") {
        let (a, b) = (&title[..i], &title[i + 1..]);
        if fits(a) && fits(b) {
            return vec![a.to_string(), b.to_string()];
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for word in title.split(' ').flat_map(|w| pieces(w, &fits)) {
        match lines.last_mut() {
            Some(line) if fits(&format!("{line} {word}")) => {
                line.push(' ');
                line.push_str(&word);
            }
            _ => lines.push(word),
        }
    }
    lines
}

/// `word` whole if it `fits`, else cut into pieces that do (as many characters each as fit,
/// at least one), so that no title line is wider than the figure.
fn pieces(word: &str, fits: &impl Fn(&str) -> bool) -> Vec<String> {
    if fits(word) {
        return vec![word.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut piece = String::new();
    for c in word.chars() {
        piece.push(c);
        if piece.chars().count() > 1 && !fits(&piece) {
            piece.pop();
            out.push(std::mem::replace(&mut piece, c.to_string()));
        }
    }
    out.push(piece);
    out
}

impl LinePlot {
    /// The first axis label wider than its axis, which [`LinePlot::paint`] refuses to draw
    /// (it would be clipped): the axis (0 for x, 1 for y) and why, in words. The x label is
    /// taken as drawn, with what the drawing adds to it.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_figure::LinePlot;
    /// assert_eq!(LinePlot::new("t", "layer", "value").label_misfit(), None);
    /// let wide = LinePlot::new("t", "layer", &"W".repeat(60));
    /// assert_eq!(wide.label_misfit().map(|m| m.0), Some(1));
    /// ```
    pub fn label_misfit(&self) -> Option<(usize, String)> {
        self.merged().drawn_label_misfit()
    }

    /// [`LinePlot::label_misfit`] of a plot as drawn ([`LinePlot::merged`]).
    pub(crate) fn drawn_label_misfit(&self) -> Option<(usize, String)> {
        let ((x0, x1), (y0, _)) = self.ranges();
        let (pw, ph) = self.plot_area();
        let x_desc = self.x_desc((x0, x1), y0);
        [(&x_desc, pw), (&self.y_label, ph)]
            .into_iter()
            .enumerate()
            .find_map(|(axis, (label, room))| {
                let w = text_width(label, LABEL_PX);
                (f64::from(w) > room).then(|| {
                    (
                        axis,
                        format!(
                            "axis label '{label}' is wider than its axis ({w} > {room:.0} px): shorten it"
                        ),
                    )
                })
            })
    }

    /// The plotting area's size in pixels: the figure (without a legend strip) minus the
    /// caption, margins and label areas of [`LinePlot::draw`].
    pub(crate) fn plot_area(&self) -> (f64, f64) {
        let (w, h) = SIZE;
        let (_, _, title_h) = self.title_block(w);
        (
            (w - MARGIN - MARGIN_RIGHT - Y_LABEL_AREA) as f64,
            h.saturating_sub(MARGIN + X_LABEL_AREA + title_h) as f64,
        )
    }

    /// The title's lines in a figure `width` px wide ([`title_lines`]), the height of one
    /// line, and the height the title takes above the chart: [`TITLE_TOP`], the lines, and
    /// half a tick label, so that the top tick label (centred on its tick at the axes' top
    /// edge) stays clear of the title.
    pub(crate) fn title_block(&self, width: u32) -> (Vec<String>, u32, u32) {
        register_font();
        let lines = title_lines(&self.title, width);
        let line_h = (FONT, TITLE_PX)
            .into_font()
            .box_size(&self.title)
            .map_or(TITLE_PX + 10, |b| b.1);
        let height = TITLE_TOP + lines.len() as u32 * line_h + TICK_PX / 2;
        (lines, line_h, height)
    }
}
