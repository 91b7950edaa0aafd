//! How series look apart: the colour-blind-safe palette, dash patterns and marker shapes, so
//! that series stay apart in greyscale and without colour.

use plotters::prelude::*;

/// Okabe-Ito colours (colour-blind safe), then grey for the Monte Carlo legend entry
/// ([`MC_COLOR`]).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(110, 110, 110),
];

/// Palette index of the grey "Monte Carlo, 95% CI" legend entry.
pub const MC_COLOR: usize = 7;

/// Dash patterns `(dash, gap)` in pixels by palette index (`(0, 0)`: solid), so that lines
/// stay apart in greyscale and for colour-blind readers: solid, long dash, short dash, dots,
/// close dash, sparse dots, sparse dash, fine dash.
pub const DASHES: [(u32, u32); 8] = [
    (0, 0),
    (16, 8),
    (7, 6),
    (2, 6),
    (12, 3),
    (2, 13),
    (8, 14),
    (4, 3),
];

/// Marker shapes of points series, by palette index
/// ([`Series::marker`](crate::Series::marker)): filled circle, square, triangle and diamond,
/// then the same four hollow; so points stay apart without colour.
pub const MARKERS: usize = 8;

/// Draws marker `kind` ([`MARKERS`]) centred `dx` pixels right of `at`, in colour `c`.
pub(crate) fn draw_marker<DB: DrawingBackend, X: CoordTranslate>(
    area: &DrawingArea<DB, X>,
    at: X::From,
    dx: i32,
    c: RGBColor,
    kind: usize,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X::From: Clone,
{
    let shift = |v: &[(i32, i32)]| v.iter().map(|&(x, y)| (x + dx, y)).collect::<Vec<_>>();
    let triangle = shift(&[(0, -7), (7, 5), (-7, 5), (0, -7)]);
    let diamond = shift(&[(0, -8), (7, 0), (0, 8), (-7, 0), (0, -8)]);
    let square = [(dx - 5, -5), (dx + 5, 5)];
    let hollow = c.stroke_width(2);
    let e = EmptyElement::at(at);
    match kind % MARKERS {
        0 => area.draw(&(e + Circle::new((dx, 0), 6, c.filled()))),
        1 => area.draw(&(e + Rectangle::new(square, c.filled()))),
        2 => area.draw(&(e + Polygon::new(triangle, c.filled()))),
        3 => area.draw(&(e + Polygon::new(diamond, c.filled()))),
        4 => area.draw(&(e + Circle::new((dx, 0), 6, hollow))),
        5 => area.draw(&(e + Rectangle::new(square, hollow))),
        6 => area.draw(&(e + PathElement::new(triangle, hollow))),
        _ => area.draw(&(e + PathElement::new(diamond, hollow))),
    }
}
