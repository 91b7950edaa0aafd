//! Paper and type sizes: figures sized for a paper at [`DPI`] = 300, one-column figures
//! [`ONE_COLUMN_IN`] = 3.3 in wide (990 px), two-column ones [`TWO_COLUMN_IN`] = 6.9 in
//! (2070 px); every text at least 7 pt at that size ([`TICK_PX`] is 7 pt after plotters' 1/1.24
//! font scaling, [`PLOTTERS_FONT_SCALE`]).

/// Resolution of the PNG files, recorded in them.
pub const DPI: f64 = 300.0;
/// Width of a one-column figure in a two-column paper, inches.
pub const ONE_COLUMN_IN: f64 = 3.3;
/// Width of a two-column (full-width) figure, inches.
pub const TWO_COLUMN_IN: f64 = 6.9;

/// Pixels of a length in inches at [`DPI`].
pub const fn inches(x: f64) -> u32 {
    (x * DPI) as u32
}

/// How much larger plotters' font size must be than the type size drawn: its SVG backend
/// writes `font-size = size / 1.24` (plotters-svg 0.3, `svg.rs`), and the PNG scales the
/// font's full height, 2384/2048 = 1.16 of the type size for DejaVu Sans. The larger factor
/// is used, so both formats reach the size asked for.
pub const PLOTTERS_FONT_SCALE: f64 = 1.24;

/// The plotters font size that draws text of `pt` points at [`DPI`], rounded up.
pub const fn points(pt: f64) -> u32 {
    let px = pt * DPI / 72.0 * PLOTTERS_FONT_SCALE;
    let floor = px as u32;
    if (floor as f64) < px {
        floor + 1
    } else {
        floor
    }
}

/// Tick labels and legend entries: 7 pt, the smallest text a figure has (37 px at 300 dpi
/// in plotters' units).
pub const TICK_PX: u32 = points(7.0);
/// Axis descriptions: 8 pt.
pub(crate) const LABEL_PX: u32 = points(8.0);
/// Titles: 7.5 pt (a title holds the setting and may be long).
pub(crate) const TITLE_PX: u32 = points(7.5);

/// Default size: one column of a two-column paper at 300 dpi (3.3 in x 2.5 in).
pub const SIZE: (u32, u32) = (inches(ONE_COLUMN_IN), inches(2.5));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LinePlot, Series, render};
    use std::path::Path;

    #[test]
    fn text_is_at_least_7_points_at_the_stated_size() {
        // 990 px is 3.3 in at 300 dpi; 7 pt is 29.2 px there. Read what is drawn: every
        // font-size in the SVG (and so in the PDF made from it).
        assert_eq!(SIZE.0, 990);
        let mut plot = LinePlot::new("title", "x label", "y label");
        plot.series.push(Series::line(
            "legend entry",
            0,
            vec![(1.0, 1.0), (10.0, 2.0)],
        ));
        let svg = String::from_utf8(render(&plot, Path::new("t")).unwrap().svg).unwrap();
        let sizes: Vec<f64> = svg
            .split("font-size=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().parse().unwrap())
            .collect();
        assert!(sizes.len() >= 5, "{sizes:?}");
        let min_px = 7.0 * DPI / 72.0;
        assert!(sizes.iter().all(|&s| s >= min_px), "{sizes:?} < {min_px}");
    }
}
