//! Figures through plotters, as PNG, SVG and PDF, with DejaVu Sans embedded (the `dejavu` crate)
//! and registered for plotters' `ab_glyph` text, so no system font or package is needed.
//!
//! Sized for a paper at [`DPI`] = 300: one-column figures [`ONE_COLUMN_IN`] = 3.3 in wide
//! (990 px), two-column ones [`TWO_COLUMN_IN`] = 6.9 in (2070 px); every text at least 7 pt at
//! that size ([`TICK_PX`] is 7 pt after plotters' 1/1.24 font scaling, [`PLOTTERS_FONT_SCALE`]). The PNG records its 300 dpi (pHYs chunk); the PDF
//! is converted from the SVG by `svg2pdf` (vector, the font subset embedded).

use normscope_core::output::{atomic, console};
use normscope_core::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// The family name the embedded font is registered under.
pub const FONT: &str = "sans-serif";

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

/// Registers DejaVu Sans once per process (every figure function does it first).
pub fn register_font() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("embedded DejaVu Sans is a valid font"));
    });
}

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

/// Relative difference below which two presets' Monte Carlo points count as one point in a
/// merged legend entry (1%: indistinguishable at the figure's size).
pub(crate) const SAME_POINT: f64 = 0.01;

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

/// Marker shapes of points series, by palette index ([`Series::marker`]): filled circle,
/// square, triangle and diamond, then the same four hollow; so points stay apart without
/// colour.
pub const MARKERS: usize = 8;

/// Unicode for the ASCII math in labels: `||x||` to `‖x‖`, ` - ` to ` − `, `^2` to `²` (not
/// in `^20`), and the whole words `alpha`, `beta`, `lambda`, `sqrt` to `α`, `β`, `λ`, `√` (not
/// inside other words).
pub fn math(text: &str) -> String {
    let mut s = text.replace("||", "‖").replace(" - ", " − ");
    s = replace_where(&s, "^2", "²", |_, after| {
        !after.is_some_and(|c| c.is_ascii_digit())
    });
    for (word, symbol) in [
        ("alpha", "α"),
        ("beta", "β"),
        ("lambda", "λ"),
        ("sqrt", "√"),
        ("pi", "π"),
    ] {
        s = replace_where(&s, word, symbol, |before, after| {
            !before.is_some_and(char::is_alphabetic) && !after.is_some_and(char::is_alphabetic)
        });
    }
    subscripts(&s)
}

/// The Unicode subscript of `c`, where DejaVu Sans has one.
fn subscript(c: char) -> Option<char> {
    const FROM: &str = "0123456789+-=()aeoxhklmnpstj";
    const TO: &str = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜⱼ";
    FROM.chars()
        .position(|f| f == c)
        .and_then(|i| TO.chars().nth(i))
}

/// `x_{t-1}` as `xₜ₋₁` and `x_0` as `x₀` where every character has a subscript; others (`x_L`)
/// stay as written.
fn subscripts(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '_' && i > 0 && chars[i - 1].is_alphanumeric() {
            if chars.get(i + 1) == Some(&'{')
                && let Some(len) = chars[i + 2..].iter().position(|&c| c == '}')
            {
                let inner = &chars[i + 2..i + 2 + len];
                if let Some(sub) = inner
                    .iter()
                    .map(|&c| subscript(c))
                    .collect::<Option<String>>()
                {
                    out.push_str(&sub);
                    i += len + 3;
                    continue;
                }
            } else if let Some(&c) = chars.get(i + 1)
                && !chars.get(i + 2).is_some_and(|n| n.is_alphanumeric())
                && let Some(sub) = subscript(c)
            {
                out.push(sub);
                i += 2;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// `text` with each `from` replaced by `to` where `ok(char before, char after)` holds.
fn replace_where(
    text: &str,
    from: &str,
    to: &str,
    ok: impl Fn(Option<char>, Option<char>) -> bool,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(from) {
        let before = text[..i].chars().next_back();
        let after = text[i + from.len()..].chars().next();
        if i >= last && ok(before, after) {
            out.push_str(&text[last..i]);
            out.push_str(to);
            last = i + from.len();
        }
    }
    out.push_str(&text[last..]);
    out
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

/// Draws marker `kind` ([`MARKERS`]) centred `dx` pixels right of `at`, in colour `c`.
fn draw_marker<DB: DrawingBackend, X: CoordTranslate>(
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

/// Opacity of a [`Mark::Band`]'s fill: light enough that the lines over it and other bands
/// under it stay visible.
const BAND_ALPHA: f64 = 0.2;

/// Horizontal offset in pixels between neighbouring labelled points series, so that estimates
/// of several series at one x stay apart ([`LinePlot::dodge`]).
const DODGE_PX: f64 = 14.0;

/// Length in pixels of the arrow drawn on past an open end of an interval ([`Series::open`]).
const OPEN_ARROW_PX: i32 = 24;

/// How a series is drawn.
///
/// # Examples
///
/// [`Series::line`] draws a solid line, [`Series::points`] markers with their intervals:
///
/// ```rust
/// use normscope_figure::{Mark, Series};
///
/// let line = Series::line("closed form", 0, vec![(1.0, 2.0)]);
/// assert!(matches!(line.mark, Mark::Line));
/// let mc = Series::points("Monte Carlo", 0, &[(1.0, 2.0, 1.5, 2.5)]);
/// match &mc.mark {
///     Mark::Points { ci, .. } => assert_eq!(ci, &vec![(1.5, 2.5)]),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Clone, Debug)]
pub enum Mark {
    /// A solid line (closed form).
    Line,
    /// A dashed line (a second closed-form family).
    Dashed,
    /// A step line, each point `(k, y)` a level from `k - 1/2` to `k + 1/2` (a discrete
    /// distribution).
    Steps,
    /// Markers with vertical 95% confidence bars `(low, high)` per point (Monte Carlo).
    Points {
        /// The interval of each point, in the order of `points`.
        ci: Vec<(f64, f64)>,
        /// Whether each interval is open below and above: censored, it reaches past its drawn
        /// end (the lowest or highest value tried), which then gets an arrow instead of a cap
        /// ([`Series::open`]).
        open: Vec<(bool, bool)>,
    },
    /// A shaded band from each point `(x, low)` up to `high` (the spread of several runs
    /// around their median line), drawn under the lines.
    Band {
        /// The band's upper edge, in the order of `points`.
        high: Vec<f64>,
    },
}

/// One named series.
///
/// # Examples
///
/// A closed-form line in palette colour 1 and its Monte Carlo points: the points keep `(x, y)`,
/// the intervals go to the mark; colour 1 draws the long dash of [`DASHES`]`[1]`.
///
/// ```rust
/// use normscope_figure::{DASHES, Series};
///
/// let line = Series::line("Pre-LN", 1, vec![(1.0, 1.0), (2.0, 0.5)]);
/// assert_eq!(line.label, "Pre-LN");
/// assert_eq!(line.pattern(), DASHES[1]);
/// assert_eq!(line.pattern(), (16, 8));
/// let pts = Series::points("", 1, &[(1.0, 0.9, 0.8, 1.0), (2.0, 0.55, 0.5, 0.6)]);
/// assert_eq!(pts.points, vec![(1.0, 0.9), (2.0, 0.55)]);
/// assert_eq!(pts.color, 1);
/// ```
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label (empty: no legend entry).
    pub label: String,
    /// Points (x, y), x increasing.
    pub points: Vec<(f64, f64)>,
    /// Line or points with intervals.
    pub mark: Mark,
    /// Index into [`PALETTE`], so a preset's line and points share a colour.
    pub color: usize,
}

impl Series {
    /// A closed-form line.
    pub fn line(label: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
            mark: Mark::Line,
            color,
        }
    }

    /// A shaded band `(x, low, high)` in colour `color`, without a legend entry (the spread
    /// across seeds around a labelled median line of the same colour).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_figure::{Mark, Series};
    /// let band = Series::band(2, &[(0.0, 1.0, 3.0), (1.0, 0.5, 2.0)]);
    /// assert_eq!(band.points, vec![(0.0, 1.0), (1.0, 0.5)]);
    /// assert!(matches!(&band.mark, Mark::Band { high } if high == &vec![3.0, 2.0]));
    /// assert!(band.label.is_empty());
    /// ```
    pub fn band(color: usize, pts: &[(f64, f64, f64)]) -> Self {
        Series {
            label: String::new(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            mark: Mark::Band {
                high: pts.iter().map(|p| p.2).collect(),
            },
            color,
        }
    }

    /// Monte Carlo points `(x, y, ci_low, ci_high)`.
    pub fn points(label: impl Into<String>, color: usize, pts: &[(f64, f64, f64, f64)]) -> Self {
        Series {
            label: label.into(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            mark: Mark::Points {
                ci: pts.iter().map(|p| (p.2, p.3)).collect(),
                open: vec![(false, false); pts.len()],
            },
            color,
        }
    }

    /// Marks points' intervals as open below and above (`(below, above)` per point, in the
    /// order of `points`): censored, each reaches past its drawn end, which gets an arrow.
    /// No effect on other marks.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_figure::{Mark, Series};
    /// let s = Series::points("Post-LN", 1, &[(24.0, 1e-5, 1e-5, 1e-5)]).open(vec![(true, false)]);
    /// assert!(matches!(&s.mark, Mark::Points { open, .. } if open == &vec![(true, false)]));
    /// ```
    pub fn open(mut self, flags: Vec<(bool, bool)>) -> Self {
        if let Mark::Points { open, .. } = &mut self.mark {
            assert_eq!(flags.len(), open.len(), "one flag pair per point");
            *open = flags;
        }
        self
    }

    /// The line's dash pattern: [`DASHES`] by palette index, the long dash for
    /// [`Mark::Dashed`].
    pub fn pattern(&self) -> (u32, u32) {
        match self.mark {
            Mark::Dashed => DASHES[1],
            _ => DASHES[self.color % DASHES.len()],
        }
    }

    /// What tells this series apart besides its colour: its kind (line or points), and its
    /// dash pattern or marker ([`MARKERS`]).
    pub fn look(&self) -> (bool, (u32, u32)) {
        match self.mark {
            // The grey entry is drawn with its interval bar, which no other entry has.
            Mark::Points { .. } if self.color == MC_COLOR => (true, (u32::MAX, 0)),
            Mark::Points { .. } => (true, (self.marker() as u32, 0)),
            _ => (false, self.pattern()),
        }
    }

    /// The marker of a points series: [`MARKERS`] by palette index; the grey Monte Carlo
    /// legend entry ([`MC_COLOR`]) stands for every preset's points and takes the first.
    pub fn marker(&self) -> usize {
        if self.color == MC_COLOR {
            0
        } else {
            self.color % MARKERS
        }
    }

    /// Every y value this series draws (points and interval ends).
    fn ys(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.points.iter().map(|p| p.1).collect();
        match &self.mark {
            Mark::Points { ci, .. } => v.extend(ci.iter().flat_map(|c| [c.0, c.1])),
            Mark::Band { high } => v.extend(high),
            _ => {}
        }
        v
    }
}

/// Where a plot's legend goes.
///
/// # Examples
///
/// A new plot places its legend automatically; any corner can be asked for instead.
///
/// ```rust
/// use normscope_figure::{Legend, LinePlot};
///
/// let mut plot = LinePlot::new("q_l", "layer l", "q_l");
/// assert_eq!(plot.legend, Legend::Auto);
/// plot.legend = Legend::LowerRight;
/// assert_eq!(plot.merged().legend, Legend::LowerRight);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    /// The first corner free of data, else below the axes (see [`LinePlot::auto_legend`]).
    Auto,
    /// Upper left corner.
    UpperLeft,
    /// Upper right corner.
    UpperRight,
    /// Lower left corner.
    LowerLeft,
    /// Lower right corner.
    LowerRight,
    /// Below the axes, in two columns: where no corner is free of data.
    Outside,
}

/// A line plot: closed form as lines, Monte Carlo as points with 95% CI bars.
///
/// # Examples
///
/// Two presets with the same closed-form line share one legend entry once merged, and the
/// labels turn into Unicode math (`alpha` to `α`). [`render`] draws it in memory (PNG, SVG,
/// PDF) at the one-column [`SIZE`].
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_figure::{LinePlot, SIZE, Series, render};
/// use std::path::Path;
///
/// let mut plot = LinePlot::new("Skip gain", "layer l", "alpha");
/// assert!(plot.x_log && !plot.y_log);
/// let pts = vec![(1.0, 1.0), (2.0, 0.5), (4.0, 0.25)];
/// plot.series.push(Series::line("Pre-LN", 0, pts.clone()));
/// plot.series.push(Series::line("Peri-LN", 1, pts));
/// let merged = plot.merged();
/// assert_eq!(merged.y_label, "α");
/// assert_eq!(merged.series[0].label, "Pre-LN = Peri-LN");
/// assert_eq!(merged.series[1].label, "");
///
/// let drawn = render(&plot, Path::new("skip_gain"))?;
/// assert!(drawn.png.starts_with(b"\x89PNG"));
/// assert!(drawn.pdf.starts_with(b"%PDF"));
/// assert_eq!(SIZE, (990, 750));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct LinePlot {
    /// Caption above the plot.
    pub title: String,
    /// x-axis label, with its symbol.
    pub x_label: String,
    /// y-axis label, with its symbol.
    pub y_label: String,
    /// Whether the x axis is log-scale.
    pub x_log: bool,
    /// Whether the y axis is log-scale.
    pub y_log: bool,
    /// Where the legend goes.
    pub legend: Legend,
    /// The series.
    pub series: Vec<Series>,
    /// Whether coinciding lines share one legend entry ([`LinePlot::merged`]); off for the
    /// panels of one figure, whose colours must mean the same series in every panel.
    pub fold: bool,
    /// A shaded stretch of the x axis, from this value to the right edge: where Monte Carlo
    /// at a finite width is expected to leave the infinite-width closed form. The x label
    /// says what it marks.
    pub shade_from: Option<f64>,
}

/// Grey of [`LinePlot::shade_from`]'s stretch (opacity over white).
const SHADE_ALPHA: f64 = 0.08;

/// Default size: one column of a two-column paper at 300 dpi (3.3 in x 2.5 in).
pub const SIZE: (u32, u32) = (inches(ONE_COLUMN_IN), inches(2.5));

/// Layout of a [`LinePlot`] in pixels: margins, label areas and the caption's height, from
/// which the plotting area's size follows.
const MARGIN: u32 = 15;
/// Top of a title's first line when the title takes several lines (glyphs such as `T` reach
/// above the text box plotters measures).
const TITLE_TOP: u32 = 12;
const MARGIN_RIGHT: u32 = 40;
const X_LABEL_AREA: u32 = 100;
const Y_LABEL_AREA: u32 = 150;
/// Most ticks on the x and y axes (plotters picks round values).
const X_TICKS: usize = 6;
const Y_TICKS: usize = 8;
/// Height of one legend entry.
const LEGEND_ROW: u32 = TICK_PX + 10;
/// Width of a legend entry's line or marker sample, and the gap after it.
const LEGEND_GLYPH: u32 = 45;
/// Most columns of a legend strip below the axes.
const STRIP_COLUMNS: usize = 3;
/// Room after a strip entry's label, before the next column.
const STRIP_GAP: u32 = 30;
/// Gap between a corner legend's box and the axes.
const LEGEND_INSET: u32 = 8;

/// Compact tick text: `1e6` style outside [0.01, 10^4), trailing `.0` dropped inside.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(0.01..10_000.0).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        if (m.abs() - 1.0).abs() < 1e-9 {
            format!("{}1e{e}", if v < 0.0 { "-" } else { "" })
        } else {
            format!("{m:.1}e{e}")
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Something drawn on a plotters drawing area, saved by [`save`].
///
/// # Examples
///
/// An implementor: an 8 x 4 px white figure, drawn in memory by [`render`].
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_figure::{Figure, render};
/// use plotters::coord::Shift;
/// use plotters::prelude::*;
/// use std::path::Path;
///
/// struct Blank;
///
/// impl Figure for Blank {
///     fn size(&self) -> (u32, u32) {
///         (8, 4)
///     }
///
///     fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
///     where
///         DB::ErrorType: 'static,
///     {
///         root.fill(&WHITE).map_err(|e| e.to_string())
///     }
/// }
///
/// let drawn = render(&Blank, Path::new("blank"))?;
/// assert!(drawn.png.starts_with(b"\x89PNG"));
/// let svg = String::from_utf8(drawn.svg)?;
/// assert!(svg.contains("width=\"8\"") && svg.contains("height=\"4\""));
/// # Ok(())
/// # }
/// ```
pub trait Figure {
    /// Pixel size (width, height).
    fn size(&self) -> (u32, u32) {
        SIZE
    }

    /// Draws onto `root`.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static;

    /// Defects of what the figure shows that its drawn text cannot reveal (a line plot's
    /// series told apart by colour alone, a linear axis over more than two decades); the text
    /// is checked by [`defects`]. None by default.
    fn defects(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A figure drawn in memory.
///
/// # Examples
///
/// A plot at the one-column [`SIZE`] in its three formats: the PNG's header gives its size in
/// pixels, the PDF starts with its version line.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_figure::{LinePlot, Rendered, SIZE, Series, render};
/// use std::path::Path;
///
/// let mut plot = LinePlot::new("q_l", "layer l", "q_l");
/// plot.series.push(Series::line("Pre-LN", 0, vec![(1.0, 1.0), (2.0, 2.0)]));
/// let r: Rendered = render(&plot, Path::new("q"))?;
/// let (w, h) = (&r.png[16..20], &r.png[20..24]); // the IHDR chunk's width and height
/// assert_eq!((w, h), (&SIZE.0.to_be_bytes()[..], &SIZE.1.to_be_bytes()[..]));
/// assert!(r.pdf.starts_with(b"%PDF-") && r.svg.starts_with(b"<svg"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The PNG file's bytes, with its [`DPI`] recorded (pHYs).
    pub png: Vec<u8>,
    /// The SVG file's bytes.
    pub svg: Vec<u8>,
    /// The PDF file's bytes: the SVG converted by `svg2pdf` at [`DPI`], so the page has the
    /// figure's size in inches; the font subset is embedded.
    pub pdf: Vec<u8>,
}

/// PNG bytes of an RGB buffer, with the resolution [`DPI`] recorded (pixels per metre).
fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> std::result::Result<Vec<u8>, String> {
    let ppm = (DPI / 0.0254).round() as u32;
    let mut bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut bytes, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_pixel_dims(Some(png::PixelDimensions {
        xppu: ppm,
        yppu: ppm,
        unit: png::Unit::Meter,
    }));
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// PDF bytes of an SVG drawn with [`FONT`] (DejaVu Sans, the only font loaded, so no system
/// font is read).
fn svg_to_pdf(svg: &str) -> std::result::Result<Vec<u8>, String> {
    static FONTS: OnceLock<std::sync::Arc<usvg::fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        std::sync::Arc::new(db)
    });
    let opt = usvg::Options {
        fontdb: fonts.clone(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| e.to_string())?;
    let pdf = svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions { dpi: DPI as f32 },
    )
    .map_err(|e| e.to_string())?;
    Ok(sort_resource_entries(pdf))
}

/// svg2pdf 0.13 writes the entries of a resource dictionary (`/xo3 14 0 R` lines) in the
/// iteration order of a `HashMap`, which differs from run to run. Sorting each run of such
/// lines outside streams makes the bytes deterministic without changing the document: the
/// entries of a PDF dictionary are unordered, and the object keeps its length, so the
/// cross-reference offsets stay valid.
fn sort_resource_entries(pdf: Vec<u8>) -> Vec<u8> {
    let entry = |l: &[u8]| {
        let t = l.trim_ascii_start();
        t.len() < l.len() && t.first() == Some(&b'/') && t.ends_with(b" 0 R") && t.is_ascii()
    };
    let mut lines: Vec<&[u8]> = pdf.split(|b| *b == b'\n').collect();
    let mut in_stream = false;
    let mut i = 0;
    while i < lines.len() {
        if in_stream {
            in_stream = lines[i] != b"endstream";
            i += 1;
            continue;
        }
        if lines[i] == b"stream" {
            in_stream = true;
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && entry(lines[i]) {
            i += 1;
        }
        if i > start + 1 {
            lines[start..i].sort_unstable();
        }
        if i == start {
            i += 1;
        }
    }
    lines.join(&b'\n')
}

/// Draws `fig` in memory as PNG, SVG and PDF; `stem` (the path without extension) only names
/// it in errors. Nothing touches the file system.
pub fn render(fig: &impl Figure, stem: &Path) -> Result<Rendered> {
    register_font();
    // Every figure drawn is checked; a defect is reported on stderr (`figure defect: ...`),
    // and the tests fail on any in the quick run (tests/it/reproduce.rs).
    let defects = defects(fig).unwrap_or_else(|e| vec![e]);
    for d in defects {
        console::note(format!("figure defect: {}: {d}", stem.display()));
    }
    let (w, h) = fig.size();
    let fail = |ext: &str, message: String| Error::Figure {
        path: stem.with_extension(ext).display().to_string(),
        message,
    };
    let mut rgb = vec![0u8; 3 * w as usize * h as usize];
    fig.draw(BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area())
        .map_err(|m| fail("png", m))?;
    let png = encode_png(&rgb, (w, h)).map_err(|m| fail("png", m))?;
    let mut svg = String::new();
    fig.draw(SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area())
        .map_err(|m| fail("svg", m))?;
    let pdf = svg_to_pdf(&svg).map_err(|m| fail("pdf", m))?;
    Ok(Rendered {
        png,
        svg: svg.into_bytes(),
        pdf,
    })
}

/// Writes `stem.png`, `stem.svg` and `stem.pdf`, each atomically ([`atomic`]); an error
/// names the file.
pub fn save(fig: &impl Figure, stem: &Path) -> Result<()> {
    let r = render(fig, stem)?;
    atomic::write_bytes(&stem.with_extension("png"), &r.png)?;
    atomic::write_bytes(&stem.with_extension("svg"), &r.svg)?;
    atomic::write_bytes(&stem.with_extension("pdf"), &r.pdf)
}

/// Every defect of `fig`: overlapping texts ([`crate::inspect::overlapping`]), code in its
/// texts ([`crate::inspect::code_in_text`]) and what the figure finds in its own content
/// ([`Figure::defects`]).
pub fn defects(fig: &impl Figure) -> std::result::Result<Vec<String>, String> {
    register_font();
    let boxes = crate::inspect::text_boxes(fig.size(), |area| fig.draw(area))?;
    let mut out = crate::inspect::overlapping(&boxes);
    out.extend(crate::inspect::code_in_text(&boxes));
    out.extend(fig.defects());
    Ok(out)
}

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
    for word in title.split(' ') {
        match lines.last_mut() {
            Some(line) if fits(&format!("{line} {word}")) => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Width in pixels of `text` at `px` in [`FONT`], as plotters lays it out.
pub(crate) fn text_width(text: &str, px: u32) -> u32 {
    register_font();
    (FONT, px)
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * px, |b| b.0)
}

/// The corners of a step line through `points` (x increasing): each `(k, y)` a level from
/// `k - 1/2` to `k + 1/2`, joined by vertical rises.
pub(crate) fn step_path(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .flat_map(|&(k, y)| [(k - 0.5, y), (k + 0.5, y)])
        .collect()
}

/// Whether the segment `p`-`q` meets the rectangle `[x0, x1] x [y0, y1]` (Liang-Barsky
/// clipping; a point is a segment of length 0).
fn segment_meets(p: (f64, f64), q: (f64, f64), (x0, x1, y0, y1): (f64, f64, f64, f64)) -> bool {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (pp, qq) in [
        (-dx, p.0 - x0),
        (dx, x1 - p.0),
        (-dy, p.1 - y0),
        (dy, y1 - p.1),
    ] {
        if pp.abs() < f64::MIN_POSITIVE {
            if qq < 0.0 {
                return false;
            }
        } else {
            let t = qq / pp;
            if pp < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

impl LinePlot {
    /// A plot with a log x axis, linear y, legend upper left and no series yet.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LinePlot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: true,
            y_log: false,
            legend: Legend::Auto,
            series: Vec::new(),
            fold: true,
            shade_from: None,
        }
    }

    /// The plot as drawn: its text in Unicode math ([`math`]), and a line that coincides with an
    /// earlier labelled line (the same points to 1e-9 relative) folded into that line's legend
    /// entry (`Pre-LN = Peri-LN`), its own entry dropped; it is still drawn, in the colour of
    /// that entry, so no curve hides another without a word.
    pub fn merged(&self) -> LinePlot {
        let mut p = self.clone();
        p.title = math(&p.title);
        p.x_label = math(&p.x_label);
        p.y_label = math(&p.y_label);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        let orig: Vec<usize> = p.series.iter().map(|s| s.color).collect();
        let line = |s: &Series| !s.label.is_empty() && !matches!(s.mark, Mark::Points { .. });
        let same = |a: &Series, b: &Series| {
            !a.points.is_empty()
                && a.points.len() == b.points.len()
                && a.points
                    .iter()
                    .zip(&b.points)
                    .all(|(u, v)| close(u.0, v.0) && close(u.1, v.1))
        };
        for i in 0..p.series.len() {
            if !p.fold || !line(&p.series[i]) {
                continue;
            }
            if let Some(j) =
                (0..i).find(|&j| line(&p.series[j]) && same(&p.series[j], &p.series[i]))
            {
                let extra = std::mem::take(&mut p.series[i].label);
                let first = p.series[j]
                    .label
                    .split(" = ")
                    .next()
                    .unwrap_or("")
                    .to_string();
                p.series[j].label = format!("{} = {extra}", p.series[j].label);
                // The folded preset is drawn in the colour and pattern of the entry that
                // names it, its Monte Carlo points included when they agree too (overlapping
                // intervals); points that differ keep their colour and get a legend entry of
                // their own.
                // Colours as given (earlier folds recolour series): a preset's own points.
                let (from, to) = (orig[i], orig[j]);
                let points_of = |p: &LinePlot, c: usize| -> Vec<usize> {
                    (0..p.series.len())
                        .filter(|&k| {
                            orig[k] == c
                                && !p.series[k].points.is_empty()
                                && matches!(p.series[k].mark, Mark::Points { .. })
                        })
                        .collect()
                };
                // Points agree when, at every x they share, their 95% intervals overlap or
                // their values are within [`SAME_POINT`] of each other (indistinguishable as
                // drawn, e.g. a stream normalized to 1 with an interval of width 1e-12).
                let overlap = |a: &Series, b: &Series| match (&a.mark, &b.mark) {
                    (Mark::Points { ci: ca, .. }, Mark::Points { ci: cb, .. }) => {
                        a.points.iter().zip(ca).all(|(u, cu)| {
                            b.points.iter().zip(cb).all(|(v, cv)| {
                                !close(u.0, v.0)
                                    || cu.0.max(cv.0) <= cu.1.min(cv.1)
                                    || (u.1 - v.1).abs() <= SAME_POINT * u.1.abs().max(v.1.abs())
                            })
                        })
                    }
                    _ => false,
                };
                let (pf, pt) = (points_of(&p, from), points_of(&p, to));
                let agree = pf.len() == pt.len()
                    && pf
                        .iter()
                        .zip(&pt)
                        .all(|(&a, &b)| overlap(&p.series[a], &p.series[b]));
                p.series[i].color = to;
                if agree {
                    for k in pf {
                        p.series[k].color = to;
                    }
                } else {
                    for k in pf {
                        p.series[k].label = format!("{extra}, Monte Carlo");
                    }
                    for k in pt {
                        if p.series[k].label.is_empty() {
                            p.series[k].label = format!("{first}, Monte Carlo");
                        }
                    }
                }
            }
        }
        for s in &mut p.series {
            s.label = math(&s.label);
        }
        // A log axis over less than two decades gets plotters' half-decade ticks (3.162): draw
        // it linear instead, where its ticks are round.
        let ((x0, x1), (y0, y1)) = p.ranges();
        p.x_log &= x1 / x0 >= 100.0;
        p.y_log &= y1 / y0 >= 100.0;
        p
    }

    /// Makes the plot a discrete distribution: lines become steps, and every series is cut to
    /// the x range where some value reaches `floor` times the largest (plus one step each side).
    pub fn discrete(&mut self, floor: f64) {
        let top = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.1.is_finite() && p.1 >= floor * top)
            .map(|p| p.0)
            .collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min) - 1.0;
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 1.0;
        for s in &mut self.series {
            if matches!(s.mark, Mark::Line) {
                s.mark = Mark::Steps;
            }
            let keep: Vec<bool> = s.points.iter().map(|p| p.0 >= lo && p.0 <= hi).collect();
            let mut it = keep.iter();
            s.points.retain(|_| *it.next().unwrap_or(&false));
            if let Mark::Points { ci, open } = &mut s.mark {
                let mut it = keep.iter();
                ci.retain(|_| *it.next().unwrap_or(&false));
                let mut it = keep.iter();
                open.retain(|_| *it.next().unwrap_or(&false));
            }
        }
    }

    /// Height of the legend strip below the axes: 0 unless the legend goes outside.
    fn strip_height(&self) -> u32 {
        let n = self.labelled().count() as u32;
        if n > 0 && self.chosen_legend() == Legend::Outside {
            n.div_ceil(self.strip_columns().len() as u32) * LEGEND_ROW + 2 * MARGIN
        } else {
            0
        }
    }

    /// The left edges (px) of the legend strip's columns, entries filling rows left to right:
    /// the most columns, up to [`STRIP_COLUMNS`], whose widest entries fit side by side in the
    /// figure's width, each column as wide as its widest entry, the block centred.
    fn strip_columns(&self) -> Vec<i32> {
        let widths: Vec<u32> = self
            .labelled()
            .map(|s| LEGEND_GLYPH + text_width(&s.label, TICK_PX) + STRIP_GAP)
            .collect();
        let room = SIZE.0 - 2 * MARGIN;
        for cols in (1..=STRIP_COLUMNS.min(widths.len().max(1))).rev() {
            let col: Vec<u32> = (0..cols)
                .map(|c| {
                    widths
                        .iter()
                        .skip(c)
                        .step_by(cols)
                        .copied()
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            // The last column needs no gap after it.
            let total: u32 = col.iter().sum::<u32>() - STRIP_GAP;
            if total <= room || cols == 1 {
                let mut x = (MARGIN + room.saturating_sub(total) / 2) as i32;
                return col
                    .iter()
                    .map(|w| {
                        let at = x;
                        x += *w as i32;
                        at
                    })
                    .collect();
            }
        }
        unreachable!("one column is always returned")
    }

    /// The plotting area's size in pixels: the figure (without a legend strip) minus the
    /// caption, margins and label areas of [`LinePlot::draw`].
    fn plot_area(&self) -> (f64, f64) {
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
    fn title_block(&self, width: u32) -> (Vec<String>, u32, u32) {
        register_font();
        let lines = title_lines(&self.title, width);
        let line_h = (FONT, TITLE_PX)
            .into_font()
            .box_size(&self.title)
            .map_or(TITLE_PX + 10, |b| b.1);
        let height = TITLE_TOP + lines.len() as u32 * line_h + TICK_PX / 2;
        (lines, line_h, height)
    }

    /// Every segment drawn, in axis-normalized coordinates: line pieces, points (segments of
    /// length 0) and interval bars.
    fn drawn_segments(&self, x: (f64, f64), y: (f64, f64)) -> Vec<((f64, f64), (f64, f64))> {
        let norm = |v: f64, (lo, hi): (f64, f64), log: bool| {
            if log {
                (v / lo).ln() / (hi / lo).ln()
            } else {
                (v - lo) / (hi - lo)
            }
        };
        let at = |p: (f64, f64)| (norm(p.0, x, self.x_log), norm(p.1, y, self.y_log));
        let ok = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
        // The points [`Figure::draw`] keeps: finite, and on a log axis positive and within the
        // axis (values beyond its 60 decades are not drawn, and their neighbours are joined).
        let (x_log, y_log) = (self.x_log, self.y_log);
        let keep = |p: &(f64, f64)| {
            ok(p) && (!x_log || p.0 > 0.0) && (!y_log || (p.1 >= y.0 && p.1 <= y.1))
        };
        let mut segs = Vec::new();
        for s in &self.series {
            let kept: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
            let raw = match s.mark {
                Mark::Steps => step_path(&kept),
                _ => kept,
            };
            let pts: Vec<(f64, f64)> = raw.into_iter().map(at).filter(ok).collect();
            match &s.mark {
                Mark::Line | Mark::Dashed | Mark::Steps => {
                    segs.extend(pts.windows(2).map(|w| (w[0], w[1])));
                    if pts.len() == 1 {
                        segs.push((pts[0], pts[0]));
                    }
                }
                Mark::Band { high } => {
                    // Both edges, and the vertical span at each point.
                    // Each point with its top, filtered together so the two edges align.
                    let (lows, tops): (Vec<_>, Vec<_>) = s
                        .points
                        .iter()
                        .zip(high)
                        .filter(|(p, _)| keep(p))
                        .map(|(p, h)| (at(*p), at((p.0, h.min(y.1)))))
                        .filter(|(a, b)| ok(a) && ok(b))
                        .unzip();
                    segs.extend(lows.windows(2).map(|w| (w[0], w[1])));
                    segs.extend(tops.windows(2).map(|w| (w[0], w[1])));
                    segs.extend(lows.iter().zip(&tops).map(|(a, b)| (*a, *b)));
                }
                Mark::Points { ci, .. } => {
                    for (p, c) in s.points.iter().zip(ci).filter(|(p, _)| keep(p)) {
                        // As drawn: on a log axis a bar whose low end is not positive starts
                        // at the point.
                        let low = if y_log && c.0 <= 0.0 { p.1 } else { c.0 };
                        let (a, b, mid) = (at((p.0, low)), at((p.0, c.1)), at(*p));
                        if ok(&a) && ok(&b) {
                            segs.push((a, b));
                        }
                        if ok(&mid) {
                            segs.push((mid, mid));
                        }
                    }
                }
            }
        }
        // The below-floor markers sit on the bottom edge.
        for (px, _) in self.below_floor(x, y.0) {
            let p = at((px, y.0));
            if ok(&p) {
                segs.push((p, p));
            }
        }
        segs
    }

    /// The legend box's size in pixels as drawn: one row of [`LEGEND_ROW`] px per labelled
    /// series, the longest label measured in the embedded font, a line sample and padding.
    fn legend_pixels(&self) -> (u32, u32) {
        let labels: Vec<&str> = self.labelled().map(|s| s.label.as_str()).collect();
        let text = labels
            .iter()
            .map(|l| text_width(l, TICK_PX))
            .max()
            .unwrap_or(0);
        (
            LEGEND_GLYPH + text + 30,
            labels.len() as u32 * LEGEND_ROW + 20,
        )
    }

    /// The region a corner legend takes, `(width, height)` as fractions of the plotting area:
    /// the box and its inset from the axes, plus a marker's radius.
    fn legend_box(&self) -> (f64, f64) {
        let (pw, ph) = self.plot_area();
        let (bw, bh) = self.legend_pixels();
        let pad = (LEGEND_INSET + 8) as f64;
        (
            ((bw as f64 + pad) / pw).min(1.0),
            ((bh as f64 + pad) / ph).min(1.0),
        )
    }

    /// Where the legend goes: the first corner (upper left, upper right, lower left, lower
    /// right) whose box meets nothing drawn (every line piece, point and interval bar, tested
    /// exactly), else [`Legend::Outside`], below the axes.
    pub fn auto_legend(&self, x: (f64, f64), y: (f64, f64)) -> Legend {
        if self.series.iter().all(|s| s.label.is_empty()) {
            return Legend::UpperLeft;
        }
        let (w, h) = self.legend_box();
        let segs = self.drawn_segments(x, y);
        let corners = [
            (Legend::UpperLeft, (0.0, w, 1.0 - h, 1.0)),
            (Legend::UpperRight, (1.0 - w, 1.0, 1.0 - h, 1.0)),
            (Legend::LowerLeft, (0.0, w, 0.0, h)),
            (Legend::LowerRight, (1.0 - w, 1.0, 0.0, h)),
        ];
        corners
            .iter()
            .find(|(_, r)| !segs.iter().any(|s| segment_meets(s.0, s.1, *r)))
            .map_or(Legend::Outside, |c| c.0)
    }

    /// Whether the legend at `legend` meets anything drawn (false for [`Legend::Outside`]):
    /// the tests' check of [`Self::auto_legend`]'s choice.
    #[cfg(test)]
    pub(crate) fn legend_covers_data(&self, legend: Legend) -> bool {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let (w, h) = self.legend_box();
        let r = match legend {
            Legend::UpperLeft | Legend::Auto => (0.0, w, 1.0 - h, 1.0),
            Legend::UpperRight => (1.0 - w, 1.0, 1.0 - h, 1.0),
            Legend::LowerLeft => (0.0, w, 0.0, h),
            Legend::LowerRight => (1.0 - w, 1.0, 0.0, h),
            Legend::Outside => return false,
        };
        self.drawn_segments((x0, x1), (y0, y1))
            .iter()
            .any(|s| segment_meets(s.0, s.1, r))
    }

    /// The legend this plot draws (its own, or [`Self::auto_legend`]'s choice).
    pub(crate) fn chosen_legend(&self) -> Legend {
        match self.legend {
            Legend::Auto => {
                let ((x0, x1), (y0, y1)) = self.ranges();
                self.auto_legend((x0, x1), (y0, y1))
            }
            fixed => fixed,
        }
    }

    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let span = |vals: Vec<f64>, log: bool| {
            let (lo, hi) = vals
                .into_iter()
                .filter(|v| v.is_finite() && (!log || *v > 0.0))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                    (a.0.min(v), a.1.max(v))
                });
            if !lo.is_finite() {
                (if log { 0.1 } else { 0.0 }, 1.0)
            } else if log {
                // At most 60 decades (plotters' log axis misbehaves near subnormals); smaller
                // values are not drawn. The padding is taken in log10 units and the top kept
                // below f64's largest number (an infinite end would hang plotters' ticks).
                let l1 = hi.log10();
                let l0 = lo.log10().max(l1 - 60.0);
                let pad = (0.04 * (l1 - l0)).max(1.5f64.log10());
                (
                    10f64.powf((l0 - pad).max(-307.0)),
                    10f64.powf((l1 + pad).min(308.0)),
                )
            } else {
                // Half the span on each side is computed first, so hi - lo cannot overflow.
                let half = hi / 2.0 - lo / 2.0;
                // One value (a single x, a constant series): half its size each side (at
                // least 0.5), so that the ticks are distinct round numbers.
                let pad = if half <= 1e-9 * hi.abs() {
                    (hi.abs() / 2.0).max(0.5)
                } else {
                    0.1 * half
                };
                ((lo - pad).max(-f64::MAX), (hi + pad).min(f64::MAX))
            }
        };
        let xs = self
            .series
            .iter()
            .flat_map(|s| match s.mark {
                // A step reaches half a unit beyond its point on each side.
                Mark::Steps => step_path(&s.points).into_iter().map(|p| p.0).collect(),
                _ => s.points.iter().map(|p| p.0).collect::<Vec<_>>(),
            })
            .collect();
        let ys = self.series.iter().flat_map(|s| s.ys()).collect();
        let (x, (mut y0, mut y1)) = (span(xs, self.x_log), span(ys, self.y_log));
        // Room for the arrows past open interval ends ([`OPEN_ARROW_PX`], about 5% of the
        // axes' height): 8% of the span more on each side that has one.
        let (below, above) = self.open_ends();
        let t = |v: f64| if self.y_log { v.log10() } else { v };
        let u = |v: f64| if self.y_log { 10f64.powf(v) } else { v };
        let room = 0.08 * (t(y1) - t(y0));
        if below {
            y0 = u(t(y0) - room);
        }
        if above {
            y1 = u(t(y1) + room);
        }
        (x, (y0, y1))
    }

    /// The points a log y axis cannot show because they are at or below its floor `y0` (zero,
    /// or more than 60 decades under the largest value), as `(x, series index)`: they are
    /// marked by a downward triangle on the bottom edge instead of being dropped.
    fn below_floor(&self, x: (f64, f64), y0: f64) -> Vec<(f64, usize)> {
        if !self.y_log {
            return Vec::new();
        }
        self.series
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.points
                    .iter()
                    .filter(move |p| {
                        p.0.is_finite()
                            && (!self.x_log || p.0 > 0.0)
                            && (x.0..=x.1).contains(&p.0)
                            && p.1.is_finite()
                            && p.1 < y0
                    })
                    .map(move |p| (p.0, i))
            })
            .collect()
    }

    /// The marker of the unlabelled points drawn in line series `s`'s colour (a preset's Monte
    /// Carlo points beside its closed-form line), shown on `s`'s legend sample; `None` for
    /// other series.
    fn points_marker(&self, s: &Series) -> Option<usize> {
        if matches!(s.mark, Mark::Points { .. }) {
            return None;
        }
        self.series
            .iter()
            .find(|p| {
                p.label.is_empty()
                    && p.color == s.color
                    && matches!(p.mark, Mark::Points { .. })
                    && !p.points.is_empty()
            })
            .map(Series::marker)
    }

    /// The horizontal offset in pixels of each point of each series, keyed by `(series
    /// index, x bits)`: at an x that two or more of them share (a depth, a tier), the labelled
    /// points series with points that are their own estimates (not Monte Carlo beside a
    /// labelled line of their colour) are spread [`DODGE_PX`] apart around it, in series
    /// order among those present there, so that estimates at one x do not hide each other. A
    /// point at an x of its own is not moved (a measured x stays where it is).
    fn dodge(&self) -> std::collections::BTreeMap<(usize, u64), i32> {
        let beside_line = |s: &Series| {
            self.series.iter().any(|l| {
                !l.label.is_empty() && l.color == s.color && !matches!(l.mark, Mark::Points { .. })
            })
        };
        let dodged = |s: &Series| {
            !s.label.is_empty()
                && matches!(s.mark, Mark::Points { .. })
                && !s.points.is_empty()
                && !beside_line(s)
        };
        let mut at_x = std::collections::BTreeMap::<u64, Vec<usize>>::new();
        for (i, s) in self.series.iter().enumerate().filter(|(_, s)| dodged(s)) {
            let xs: std::collections::BTreeSet<u64> =
                s.points.iter().map(|p| p.0.to_bits()).collect();
            for x in xs {
                at_x.entry(x).or_default().push(i);
            }
        }
        let mut out = std::collections::BTreeMap::new();
        for (x, here) in at_x.into_iter().filter(|e| e.1.len() > 1) {
            let mid = (here.len() as f64 - 1.0) / 2.0;
            for (rank, i) in here.into_iter().enumerate() {
                out.insert((i, x), ((rank as f64 - mid) * DODGE_PX).round() as i32);
            }
        }
        out
    }

    /// Whether any point's interval is open below, and any above (an arrow at that end,
    /// [`Series::open`]).
    fn open_ends(&self) -> (bool, bool) {
        self.series
            .iter()
            .fold((false, false), |acc, s| match &s.mark {
                Mark::Points { open, .. } => {
                    open.iter().fold(acc, |(b, a), o| (b || o.0, a || o.1))
                }
                _ => acc,
            })
    }

    /// The x label as drawn: the plot's, with what the drawing adds said after it (values
    /// below a log axis's floor, censored interval ends).
    fn x_desc(&self, (x0, x1): (f64, f64), y0: f64) -> String {
        let mut desc = self.x_label.clone();
        if !self.below_floor((x0, x1), y0).is_empty() {
            desc += " (▽ below)";
        }
        let arrows = match self.open_ends() {
            (true, true) => "↓↑",
            (true, false) => "↓",
            (false, true) => "↑",
            (false, false) => "",
        };
        if !arrows.is_empty() {
            desc += &format!(" ({arrows} censored)");
        }
        desc
    }

    /// The series with a legend entry, in legend order.
    fn labelled(&self) -> impl Iterator<Item = &Series> {
        self.series.iter().filter(|s| !s.label.is_empty())
    }

    /// Writes `stem.png`, `stem.svg` and `stem.pdf` (see [`save`]).
    pub fn save(&self, stem: &Path) -> Result<()> {
        save(self, stem)
    }
}

impl Figure for LinePlot {
    /// [`SIZE`], taller by the legend strip when the legend goes below the axes (the axes keep
    /// their size).
    fn size(&self) -> (u32, u32) {
        (SIZE.0, SIZE.1 + self.merged().strip_height())
    }

    /// [`LinePlot::paint`], then the backend's output.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        self.paint(&root)?;
        root.present().map_err(|x| x.to_string())
    }

    /// No point in any series (axes and a legend only), a linear axis whose values (all of one
    /// sign) span more than two decades, and legend entries that differ only in colour (same
    /// mark, same dash or marker).
    fn defects(&self) -> Vec<String> {
        let p = self.merged();
        let mut out = Vec::new();
        // Axes and a legend with nothing in them: every point was filtered out upstream.
        if p.series.iter().all(|s| s.points.is_empty()) {
            out.push(format!("{:?}: no data drawn", p.title));
        }
        let xs: Vec<f64> = p
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.0))
            .collect();
        // The points themselves: an interval reaching near 0 does not make an axis span
        // decades. An interval that reaches 0 or crosses it does make 0 a value the axis must
        // show (a difference, a cost), which a log axis cannot: its end is counted then.
        let mut ys: Vec<f64> = Vec::new();
        for s in &p.series {
            ys.extend(s.points.iter().map(|q| q.1));
            if let Mark::Points { ci, .. } = &s.mark {
                for (q, c) in s.points.iter().zip(ci) {
                    if q.1 > 0.0 && c.0 <= 0.0 {
                        ys.push(c.0);
                    } else if q.1 < 0.0 && c.1 >= 0.0 {
                        ys.push(c.1);
                    }
                }
            }
        }
        for (axis, log, values) in [("x", p.x_log, xs), ("y", p.y_log, ys)] {
            if !log && crate::inspect::over_two_decades(&values) {
                out.push(format!(
                    "{:?}: linear {axis} axis over more than two decades",
                    p.title
                ));
            }
        }
        let entries: Vec<&Series> = p.labelled().collect();
        for (i, a) in entries.iter().enumerate() {
            for b in &entries[i + 1..] {
                if a.look() == b.look() {
                    out.push(format!(
                        "{:?}: {:?} and {:?} differ only in colour",
                        p.title, a.label, b.label
                    ));
                }
            }
        }
        out
    }
}

impl LinePlot {
    /// Draws the plot onto `root` without presenting it (a panel of a larger figure,
    /// [`crate::facets::Facets`]). Log axes are drawn as linear axes in log10 units, with
    /// ticks chosen there and labelled with the value (`1e-14`): plotters' own log axis labels
    /// only a few decades of a range that spans dozens.
    pub fn paint<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let merged = self.merged();
        let this = &merged;
        // An axis label longer than its axis would be clipped: refuse to draw it (the x label
        // as drawn, with what the drawing adds to it).
        let ((x0, x1), (y0, y1)) = this.ranges();
        let (pw, ph) = this.plot_area();
        let x_desc = this.x_desc((x0, x1), y0);
        for (label, room) in [(&x_desc, pw), (&this.y_label, ph)] {
            if f64::from(text_width(label, LABEL_PX)) > room {
                return Err(format!(
                    "axis label '{label}' is wider than its axis ({} > {room:.0} px): shorten it",
                    text_width(label, LABEL_PX)
                ));
            }
        }
        let legend = this.chosen_legend();
        let labelled: Vec<&Series> = this.labelled().collect();
        // An outside legend takes a strip below the axes: two entries per row.
        let (area, strip) = if this.strip_height() > 0 {
            let (_, h) = root.dim_in_pixel();
            let (a, b) = root.split_vertically(h - this.strip_height());
            (a, Some(b))
        } else {
            (root.clone(), None)
        };
        let (x_log, y_log) = (this.x_log, this.y_log);
        let tx = move |v: f64| if x_log { v.log10() } else { v };
        let ty = move |v: f64| if y_log { v.log10() } else { v };
        let at = move |p: (f64, f64)| (tx(p.0), ty(p.1));
        let keep = move |p: &(f64, f64)| {
            p.0.is_finite()
                && p.1.is_finite()
                && (!x_log || p.0 > 0.0)
                && (!y_log || (p.1 >= y0 && p.1 <= y1))
        };
        let label = |log: bool| move |v: &f64| if log { tick(10f64.powf(*v)) } else { tick(*v) };
        // A title too wide for one line: the lines before the last are drawn above the
        // chart, whose caption is the last line.
        let (w, _) = area.dim_in_pixel();
        let (lines, line_h, title_h) = this.title_block(w);
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let centred =
            TextStyle::from((FONT, TITLE_PX).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (i, line) in lines.iter().enumerate() {
            let y = (TITLE_TOP + i as u32 * line_h) as i32;
            area.draw_text(line, &centred, ((w / 2) as i32, y))
                .map_err(e)?;
        }
        let area = area.margin(title_h, 0, 0, 0);
        let mut chart = ChartBuilder::on(&area)
            .margin(MARGIN)
            // The title block ends with the room the top tick label needs.
            .margin_top(0)
            .margin_right(MARGIN_RIGHT)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(tx(x0)..tx(x1), ty(y0)..ty(y1))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(&this.y_label)
            .label_style((FONT, TICK_PX))
            // At most 6 (x) and 8 (y) ticks at round values of the (log10) axis: whole decades,
            // every 1, 2, 5, 10, ... of them, across the whole range.
            .x_labels(ticks(tx(x0), tx(x1), x_log, X_TICKS))
            .y_labels(ticks(ty(y0), ty(y1), y_log, Y_TICKS))
            .x_label_formatter(&label(x_log))
            .y_label_formatter(&label(y_log))
            .axis_desc_style((FONT, LABEL_PX))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(e)?;
        if let Some(from) = this.shade_from.filter(|&from| from < x1) {
            let from = from.max(x0);
            let corners = [(tx(from), ty(y0)), (tx(x1), ty(y1))];
            chart
                .draw_series([Rectangle::new(corners, BLACK.mix(SHADE_ALPHA).filled())])
                .map_err(e)?;
        }
        let dodge = this.dodge();
        for (si, s) in this.series.iter().enumerate() {
            let c = PALETTE[s.color % PALETTE.len()];
            let kept: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
            let pts: Vec<(f64, f64)> = match s.mark {
                Mark::Steps => step_path(&kept).into_iter().map(at).collect(),
                _ => kept.iter().copied().map(at).collect(),
            };
            match &s.mark {
                Mark::Band { high } => {
                    let (lo, hi): (Vec<_>, Vec<_>) = s
                        .points
                        .iter()
                        .zip(high)
                        .filter(|(p, h)| keep(p) && keep(&(p.0, **h)))
                        .map(|(p, h)| (at(*p), at((p.0, *h))))
                        .unzip();
                    let outline: Vec<(f64, f64)> =
                        lo.into_iter().chain(hi.into_iter().rev()).collect();
                    chart
                        .draw_series([Polygon::new(outline, c.mix(BAND_ALPHA).filled())])
                        .map_err(e)?;
                }
                Mark::Line | Mark::Dashed | Mark::Steps => {
                    let (dash, gap) = s.pattern();
                    let style = c.stroke_width(3);
                    if dash == 0 {
                        chart.draw_series(LineSeries::new(pts, style)).map_err(e)?;
                    } else {
                        chart
                            .draw_series(DashedLineSeries::new(pts, dash, gap, style))
                            .map_err(e)?;
                    }
                }
                Mark::Points { ci, open } => {
                    let dx_at = |x: f64| dodge.get(&(si, x.to_bits())).copied().unwrap_or(0);
                    let style = c.stroke_width(2);
                    let area = chart.plotting_area();
                    // The bar and its ends as plain strokes in pixels from the point (plotters'
                    // `ErrorBar` adds a hollow circle at the point, a ring around square or
                    // triangle markers): a cap at a closed end, an arrow pointing on at an open
                    // one. On a log axis a low end that is not positive starts at the point.
                    let points = s.points.iter().zip(ci).zip(open);
                    for ((p, c), o) in points.filter(|((p, _), _)| keep(p)) {
                        let dx = dx_at(p.0);
                        let pixel = |v: f64| area.map_coordinate(&(tx(p.0), ty(v))).1;
                        let y = pixel(p.1);
                        let lo = if y_log && c.0 <= 0.0 { y } else { pixel(c.0) } - y;
                        let hi = pixel(c.1) - y;
                        let mut strokes = vec![vec![(dx, lo), (dx, hi)]];
                        // Pixel y grows downwards: below is +, above is -.
                        for (end, is_open, down) in [(lo, o.0, 1), (hi, o.1, -1)] {
                            if is_open {
                                let tip = end + down * OPEN_ARROW_PX;
                                strokes.push(vec![(dx, end), (dx, tip)]);
                                let back = tip - down * 7;
                                strokes.push(vec![(dx - 5, back), (dx, tip), (dx + 5, back)]);
                            } else {
                                strokes.push(vec![(dx - 6, end), (dx + 6, end)]);
                            }
                        }
                        for path in strokes {
                            let at = EmptyElement::at((tx(p.0), ty(p.1)));
                            area.draw(&(at + PathElement::new(path, style)))
                                .map_err(e)?;
                        }
                    }
                    for (p, drawn) in kept.iter().zip(&pts) {
                        draw_marker(area, *drawn, dx_at(p.0), c, s.marker()).map_err(e)?;
                    }
                }
            }
        }
        // Values below a log axis's floor: a hollow downward triangle on the bottom edge in
        // the series' colour (the x label says so).
        for (px, i) in this.below_floor((x0, x1), y0) {
            let c = PALETTE[this.series[i].color % PALETTE.len()];
            let tri = EmptyElement::at((tx(px), ty(y0)))
                + PathElement::new(
                    vec![(-7, -14), (7, -14), (0, -1), (-7, -14)],
                    c.stroke_width(2),
                );
            chart.plotting_area().draw(&tri).map_err(e)?;
        }
        let entries: Vec<Entry> = labelled
            .iter()
            .map(|s| Entry {
                series: s,
                marker: this.points_marker(s),
            })
            .collect();
        if strip.is_none() && !entries.is_empty() {
            let area = chart.plotting_area().strip_coord_spec();
            draw_legend_box(&area, &entries, legend, this.legend_pixels()).map_err(e)?;
        }
        if let Some(strip) = strip {
            draw_legend_strip(&strip, &entries, &this.strip_columns()).map_err(e)?;
        }
        Ok(())
    }
}

/// How many ticks to ask plotters for on an axis from `lo` to `hi` (log10 units when `log`):
/// `most`, except that a log axis spanning two decades or more asks for at most one per decade,
/// so that its ticks fall on whole decades (10, 100, not 31.6).
fn ticks(lo: f64, hi: f64, log: bool, most: usize) -> usize {
    let decades = hi - lo;
    if log && decades >= 2.0 {
        (decades.floor() as usize + 1).min(most)
    } else {
        most
    }
}

/// A legend entry: a labelled series and the marker of its colour's unlabelled points, if
/// any ([`LinePlot::points_marker`]).
struct Entry<'a> {
    series: &'a Series,
    marker: Option<usize>,
}

/// A legend below the axes: each labelled series' sample (line, dashed line or marker) and
/// label, in rows across the `columns` ([`LinePlot::strip_columns`]).
fn draw_legend_strip<DB: DrawingBackend>(
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
fn draw_legend_box<DB: DrawingBackend>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_caught_between_its_ends() {
        // A long diagonal crossing the box's corner, with both ends far outside it: sampling
        // the segment would miss it, clipping does not.
        let r = (0.0, 0.2, 0.8, 1.0);
        assert!(segment_meets((-0.5, 0.4), (0.5, 1.4), r));
        assert!(!segment_meets((0.3, 0.0), (1.0, 0.9), r));
        // A point is a segment of length 0.
        assert!(segment_meets((0.1, 0.9), (0.1, 0.9), r));
        assert!(!segment_meets((0.3, 0.9), (0.3, 0.9), r));
    }

    #[test]
    fn with_no_free_corner_the_legend_goes_below_and_the_figure_grows() {
        // An X through the whole area and a flat line along the top and bottom leave no corner
        // free.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.x_log = false;
        plot.series
            .push(Series::line("a", 0, vec![(0.0, 0.0), (1.0, 1.0)]));
        plot.series
            .push(Series::line("b", 1, vec![(0.0, 1.0), (1.0, 0.0)]));
        plot.series.push(Series::line(
            "c",
            2,
            vec![(0.0, 0.5), (0.5, 0.5), (1.0, 0.5)],
        ));
        assert_eq!(plot.chosen_legend(), Legend::Outside);
        assert!(plot.size().1 > SIZE.1);
        for corner in [
            Legend::UpperLeft,
            Legend::UpperRight,
            Legend::LowerLeft,
            Legend::LowerRight,
        ] {
            assert!(plot.legend_covers_data(corner), "{corner:?}");
        }
        assert!(!plot.legend_covers_data(Legend::Outside));
        // Rendering works and the PDF is deterministic.
        let a = render(&plot, Path::new("t")).unwrap();
        let b = render(&plot, Path::new("t")).unwrap();
        assert!(a.svg == b.svg, "the SVG differs between renders");
        assert!(a.pdf == b.pdf, "the PDF differs between renders");
        assert!(a.pdf.starts_with(b"%PDF"));
        // The PNG records 300 dpi: pHYs with 11811 pixels per metre on both axes.
        let phys = a
            .png
            .windows(4)
            .position(|w| w == b"pHYs")
            .expect("pHYs chunk");
        let ppm = u32::from_be_bytes(a.png[phys + 4..phys + 8].try_into().unwrap());
        assert_eq!(ppm, 11811);
    }

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

    #[test]
    fn coinciding_lines_share_one_legend_entry_in_unicode() {
        let mut plot = LinePlot::new("||x_L||^2 against alpha", "x", "y");
        let pts = vec![(1.0, 2.0), (2.0, 3.0)];
        plot.series.push(Series::line("Pre-LN", 0, pts.clone()));
        plot.series
            .push(Series::line("Post-LN", 1, vec![(1.0, 2.0), (2.0, 5.0)]));
        plot.series.push(Series::line("Peri-LN", 3, pts));
        let m = plot.merged();
        let labels: Vec<&str> = m.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["Pre-LN = Peri-LN", "Post-LN", ""]);
        assert_eq!(m.title, "‖x_L‖² against α");
        assert_eq!(math("alphabet at 10^20, beta^2"), "alphabet at 10^20, β²");
        // Coinciding lines whose Monte Carlo points differ: one line entry, and the points
        // keep their presets' colours with entries of their own.
        let mut mixed = LinePlot::new("t", "x", "y");
        let line = vec![(1.0, 1.0), (2.0, 1.0)];
        mixed.series.push(Series::line("Pre-LN", 0, line.clone()));
        mixed.series.push(Series::line("Post-LN", 1, line));
        mixed
            .series
            .push(Series::points("", 0, &[(1.0, 1.0, 0.9, 1.1)]));
        mixed
            .series
            .push(Series::points("", 1, &[(1.0, 1.8, 1.5, 2.1)]));
        let mm = mixed.merged();
        let entries: Vec<(&str, usize)> =
            mm.labelled().map(|s| (s.label.as_str(), s.color)).collect();
        assert_eq!(
            entries,
            [
                ("Pre-LN = Post-LN", 0),
                ("Pre-LN, Monte Carlo", 0),
                ("Post-LN, Monte Carlo", 1)
            ]
        );
        // Three coinciding lines: points that agree (overlapping intervals) take the merged
        // colour; points that differ keep theirs, once each; empty point series get no entry.
        let mut three = LinePlot::new("t", "x", "y");
        for (name, c) in [("Pre-LN", 0), ("Peri-LN", 3), ("Admin", 4)] {
            three
                .series
                .push(Series::line(name, c, vec![(1.0, 1.0), (2.0, 1.0)]));
        }
        three
            .series
            .push(Series::points("", 0, &[(1.0, 1.0, 0.9, 1.1)]));
        three
            .series
            .push(Series::points("", 3, &[(1.0, 1.05, 0.95, 1.15)]));
        three
            .series
            .push(Series::points("", 4, &[(1.0, 2.0, 1.8, 2.2)]));
        three.series.push(Series::points("", 1, &[]));
        let m3 = three.merged();
        let entries: Vec<(&str, usize)> =
            m3.labelled().map(|s| (s.label.as_str(), s.color)).collect();
        assert_eq!(
            entries,
            [
                ("Pre-LN = Peri-LN = Admin", 0),
                ("Pre-LN, Monte Carlo", 0),
                ("Admin, Monte Carlo", 4)
            ]
        );
        assert_eq!(
            m3.series[4].color, 0,
            "Peri-LN's agreeing points take the merged colour"
        );
        // A legend strip takes as many columns (up to three) as its widest entries allow,
        // each column as wide as its own widest entry, within the figure.
        let mut wide = LinePlot::new("t", "x", "y");
        wide.legend = Legend::Outside;
        wide.series.push(Series::line("short", 0, vec![(1.0, 1.0)]));
        assert_eq!(wide.strip_columns().len(), 1);
        for (i, l) in ["Pre-LN", "Post-LN", "DeepNorm"].into_iter().enumerate() {
            wide.series.push(Series::line(l, i + 1, vec![(1.0, 2.0)]));
        }
        let cols = wide.strip_columns();
        assert_eq!(cols.len(), 3);
        assert!(cols.windows(2).all(|w| w[0] < w[1]));
        let long = "a label far too long for one third of the figure's width, or half";
        wide.series
            .insert(0, Series::line(long, 5, vec![(1.0, 2.0)]));
        wide.series
            .insert(1, Series::line(long, 6, vec![(1.0, 2.0)]));
        assert_eq!(wide.strip_columns().len(), 1);
        // A title too wide for the figure breaks before its setting, every line within it.
        let long = "Angular distance of adjacent layers at L = 1000 (ReLU MLP, He init)";
        let lines = title_lines(long, SIZE.0);
        assert_eq!(
            lines,
            [
                "Angular distance of adjacent layers at L = 1000",
                "(ReLU MLP, He init)"
            ]
        );
        let wordy = ["word"; 60].join(" ");
        let lines = title_lines(&wordy, SIZE.0);
        assert!(
            lines.len() > 1
                && lines
                    .iter()
                    .all(|l| text_width(l, TITLE_PX) <= SIZE.0 - 2 * MARGIN)
        );
        assert_eq!(lines.join(" "), wordy);
        assert_eq!(title_lines("Short", SIZE.0), ["Short"]);
        assert_eq!(
            math("angle(x_t, x_{t-1}) / pi, x_0 of x_L, x_{L-1}, pipe_2"),
            "angle(xₜ, xₜ₋₁) / π, x₀ of x_L, x_{L-1}, pipe₂"
        );
        // Every line is still drawn, and the first four presets' patterns differ.
        assert_eq!(m.series.iter().filter(|s| !s.points.is_empty()).count(), 3);
        let patterns: Vec<(u32, u32)> = (0..4)
            .map(|c| Series::line("", c, vec![]).pattern())
            .collect();
        for i in 0..4 {
            for j in 0..i {
                assert_ne!(patterns[i], patterns[j]);
            }
        }
    }

    #[test]
    fn distributions_are_steps_cut_to_their_mass() {
        let mut plot = LinePlot::new("t", "k", "share");
        plot.x_log = false;
        let law: Vec<(f64, f64)> = (0..60)
            .map(|k| (k as f64, if (10..=14).contains(&k) { 0.2 } else { 1e-9 }))
            .collect();
        plot.series.push(Series::line("a", 0, law));
        plot.discrete(1e-3);
        let s = &plot.series[0];
        assert!(matches!(s.mark, Mark::Steps));
        let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(xs.first(), Some(&9.0));
        assert_eq!(xs.last(), Some(&15.0));
        assert_eq!(step_path(&[(1.0, 0.5)]), vec![(0.5, 0.5), (1.5, 0.5)]);
    }

    #[test]
    fn one_value_gets_an_axis_with_distinct_ticks() {
        // One x (a quick run's single depth) and a constant y: half the value each side, at
        // least 0.5, so that round ticks (1, 1.5, 2, ...) tell apart.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.x_log = false;
        plot.series
            .push(Series::points("a", 0, &[(2.0, 0.0, -0.1, 0.1)]));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!((x0, x1), (1.0, 3.0));
        assert!(
            (y0 + 0.11).abs() < 1e-15 && (y1 - 0.11).abs() < 1e-15,
            "{y0} {y1}"
        );
        plot.series[0] = Series::line("b", 0, vec![(2.0, 0.0), (3.0, 0.0)]);
        let (_, (y0, y1)) = plot.ranges();
        assert_eq!((y0, y1), (-0.5, 0.5));
    }

    #[test]
    fn auto_legend_avoids_the_data() {
        // A line falling from the upper left to the lower right leaves the other two corners
        // free; upper right comes first in the tie order.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.series
            .push(Series::line("falling", 0, vec![(1.0, 10.0), (100.0, 0.0)]));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!(plot.auto_legend((x0, x1), (y0, y1)), Legend::UpperRight);
        // Rising: upper left is free.
        plot.series[0].points = vec![(1.0, 0.0), (100.0, 10.0)];
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!(plot.auto_legend((x0, x1), (y0, y1)), Legend::UpperLeft);
        // A flat line along the top: a lower corner.
        plot.series[0].points = vec![(1.0, 10.0), (100.0, 10.0), (50.0, 0.0)];
        plot.series[0].points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        let l = plot.auto_legend((x0, x1), (y0, y1));
        assert!(matches!(l, Legend::LowerLeft | Legend::LowerRight), "{l:?}");
    }
}
