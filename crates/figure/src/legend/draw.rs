//! Drawing a line plot's legend: each entry's sample (line, dashes, marker or interval bar)
//! and label, in a framed box in a corner or in rows of a strip below the axes.

use crate::font::FONT;
use crate::layout::{LEGEND_GLYPH, LEGEND_INSET, LEGEND_ROW, MARGIN};
use crate::line_plot::Legend;
use crate::series::{Mark, Series};
use crate::sizes::TICK_PX;
use crate::style::{MC_COLOR, PALETTE, draw_marker};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A legend entry: a labelled series and the marker of its colour's unlabelled points, if
/// any ([`LinePlot::points_marker`](crate::LinePlot::points_marker)).
pub(crate) struct Entry<'a> {
    pub(crate) series: &'a Series,
    pub(crate) marker: Option<usize>,
}

/// The dashes of a legend entry's line sample `(from, to)`, in pixels from its left end: the
/// pattern `(dash, gap)` itself over the sample's width, so the entry shows its gaps.
fn dash_pieces((dash, gap): (u32, u32)) -> Vec<(i32, i32)> {
    const WIDTH: i32 = 36;
    if dash == 0 {
        return vec![(0, WIDTH)];
    }
    let (dash, step) = (dash as i32, (dash + gap) as i32);
    (0..WIDTH)
        .step_by(step as usize)
        .map(|start| (start, (start + dash).min(WIDTH)))
        .collect()
}

/// A legend below the axes: each labelled series' sample (line, dashed line or marker) and
/// label, in rows across the `columns`
/// ([`LinePlot::strip_columns`](crate::LinePlot::strip_columns)).
pub(crate) fn draw_legend_strip<DB: DrawingBackend>(
    strip: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    columns: &[i32],
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, entry) in entries.iter().enumerate() {
        let x = columns[i % columns.len()];
        let y = (MARGIN + (i / columns.len()) as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        draw_legend_entry(strip, (x, y), entry)?;
    }
    Ok(())
}

/// One legend entry centred vertically on `y`: the series' sample from `x`, then its label.
/// The sample is a line series' pattern with the marker of its Monte Carlo points on it, a
/// points series' marker, or, for the grey Monte Carlo entry ([`MC_COLOR`]), which stands for
/// every preset's points, an interval bar with its caps.
fn draw_legend_entry<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    entry: &Entry,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let s = entry.series;
    let c = PALETTE[s.color % PALETTE.len()];
    match s.mark {
        Mark::Points { .. } if s.color == MC_COLOR => {
            let style = c.stroke_width(2);
            area.draw(&PathElement::new(
                vec![(x + 15, y - 14), (x + 15, y + 14)],
                style,
            ))?;
            for end in [y - 14, y + 14] {
                area.draw(&PathElement::new(vec![(x + 9, end), (x + 21, end)], style))?;
            }
        }
        Mark::Points { .. } => draw_marker(area, (x + 18, y), 0, c, s.marker())?,
        _ => {
            for (a, b) in dash_pieces(s.pattern()) {
                area.draw(&PathElement::new(
                    vec![(x + a, y), (x + b, y)],
                    c.stroke_width(3),
                ))?;
            }
            if let Some(m) = entry.marker {
                draw_marker(area, (x + 18, y), 0, c, m)?;
            }
        }
    }
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style =
        TextStyle::from((FONT, TICK_PX).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(
        s.label.clone(),
        (x + LEGEND_GLYPH as i32, y),
        style,
    ))
}

/// A legend in a corner of the plotting `area` (pixel coordinates): a white, framed box of
/// `(w, h)` px, [`LEGEND_INSET`] px from the axes, one entry per row.
pub(crate) fn draw_legend_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    legend: Legend,
    (w, h): (u32, u32),
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (aw, ah) = area.dim_in_pixel();
    let inset = LEGEND_INSET as i32;
    let (right, bottom) = (aw as i32 - w as i32 - inset, ah as i32 - h as i32 - inset);
    let (x0, y0) = match legend {
        Legend::UpperRight => (right, inset),
        Legend::LowerLeft => (inset, bottom),
        Legend::LowerRight => (right, bottom),
        _ => (inset, inset),
    };
    let corners = [(x0, y0), (x0 + w as i32, y0 + h as i32)];
    area.draw(&Rectangle::new(corners, WHITE.mix(0.9).filled()))?;
    area.draw(&Rectangle::new(corners, BLACK.stroke_width(1)))?;
    for (i, entry) in entries.iter().enumerate() {
        let y = y0 + 10 + (i as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        draw_legend_entry(area, (x0 + 10, y), entry)?;
    }
    Ok(())
}
