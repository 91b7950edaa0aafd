//! Defect checks run on every figure as it is drawn ([`crate::defects`]): text that
//! overlaps other text, measured from the boxes the figure's own drawing lays its text in
//! ([`text_boxes`]), and, for line plots, the checks on what is drawn
//! ([`crate::Figure::defects`]: series told apart by colour alone, a linear axis over
//! more than two decades).
//!
//! The text boxes come from drawing the figure onto [`TextRecorder`], a plotters backend that
//! draws nothing and records each text with the box plotters' bitmap backend would fill (the
//! font's layout box, placed by the text's anchor and rotation): the PNG's, whose text is the
//! widest of the three formats.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// A drawn text and the box it fills, in pixels: `(x0, y0)` top left, `(x1, y1)` bottom right.
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::TextBox;
/// let a = TextBox { text: "64".into(), rect: (0, 0, 30, 10) };
/// let b = TextBox { text: "128".into(), rect: (29, 0, 60, 10) };
/// assert!(!a.overlaps(&b, 2)); // 1 px shared: within the slack
/// assert!(a.overlaps(&TextBox { rect: (20, 0, 50, 10), ..b }, 2));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TextBox {
    /// The text.
    pub text: String,
    /// Left, top, right, bottom.
    pub rect: (i32, i32, i32, i32),
}

impl TextBox {
    /// Whether the two boxes share more than `slack` pixels in both directions (touching
    /// boxes, or boxes within the slack, do not overlap).
    pub fn overlaps(&self, other: &TextBox, slack: i32) -> bool {
        let (a, b) = (self.rect, other.rect);
        let dx = a.2.min(b.2) - a.0.max(b.0);
        let dy = a.3.min(b.3) - a.1.max(b.1);
        dx > slack && dy > slack
    }
}

/// A plotters backend that draws nothing and records every text's [`TextBox`].
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::TextRecorder;
/// use plotters::prelude::*;
/// normscope_figure::register_font();
/// let mut rec = TextRecorder::new((200, 100));
/// {
///     let root = (&mut rec).into_drawing_area();
///     root.draw_text("ab", &("sans-serif", 20).into_text_style(&root), (10, 10)).unwrap();
/// }
/// assert_eq!(rec.boxes.len(), 1);
/// assert_eq!((rec.boxes[0].rect.0, rec.boxes[0].rect.1), (10, 10)); // top left anchor
/// ```
pub struct TextRecorder {
    size: (u32, u32),
    /// The texts drawn so far.
    pub boxes: Vec<TextBox>,
}

impl TextRecorder {
    /// A recorder for a figure of `size` pixels.
    pub fn new(size: (u32, u32)) -> Self {
        TextRecorder {
            size,
            boxes: Vec::new(),
        }
    }
}

/// The error type of [`TextRecorder`] (it never fails).
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::NoError;
/// assert_eq!(NoError.to_string(), "no error");
/// ```
#[derive(Debug)]
pub struct NoError;

impl std::fmt::Display for NoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no error")
    }
}

impl std::error::Error for NoError {}

impl DrawingBackend for &mut TextRecorder {
    type ErrorType = NoError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn draw_pixel(
        &mut self,
        _: BackendCoord,
        _: BackendColor,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    // The shapes below are ignored too. They are written out (alike, by the trait's
    // signatures) because plotters' defaults rasterize each one pixel by pixel into
    // `draw_pixel`, work a text recorder does not need.
    fn draw_line<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: BackendCoord,
        _: &S,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: BackendCoord,
        _: &S,
        _: bool,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        _: I,
        _: &S,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: u32,
        _: &S,
        _: bool,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        _: I,
        _: &S,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    fn blit_bitmap(
        &mut self,
        _: BackendCoord,
        _: (u32, u32),
        _: &[u8],
    ) -> Result<(), DrawingErrorKind<NoError>> {
        Ok(())
    }

    /// Records the box the default (bitmap) text drawing fills: the layout box moved by the
    /// anchor, then rotated about the anchor point.
    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<NoError>> {
        if style.color().alpha == 0.0 || text.trim().is_empty() {
            return Ok(());
        }
        let Ok(((min_x, min_y), (max_x, max_y))) = style.layout_box(text) else {
            return Ok(());
        };
        let (w, h) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let t = style.transform();
        let (ax, ay) = t.transform(dx, dy);
        let (bx, by) = t.transform(dx + w, dy + h);
        self.boxes.push(TextBox {
            text: text.to_string(),
            rect: (
                pos.0 + ax.min(bx),
                pos.1 + ay.min(by),
                pos.0 + ax.max(bx),
                pos.1 + ay.max(by),
            ),
        });
        Ok(())
    }
}

/// Every text `draw` draws on an area of `size` pixels, with its box (a figure's drawing,
/// [`crate::defects`]).
pub fn text_boxes(
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<&mut TextRecorder, Shift>) -> Result<(), String>,
) -> Result<Vec<TextBox>, String> {
    let mut rec = TextRecorder::new(size);
    draw((&mut rec).into_drawing_area())?;
    Ok(rec.boxes)
}

/// Pixels two texts may share before they count as overlapping (anti-aliased edges, and the
/// layout box's room above and below the glyphs).
pub const OVERLAP_SLACK: i32 = 2;

/// The pairs of texts of `fig` that overlap each other (tick labels run together, a legend
/// over an axis label, ...), as `"a" over "b"`.
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::{TextBox, overlapping};
/// let b = |t: &str, x: i32| TextBox { text: t.into(), rect: (x, 0, x + 30, 10) };
/// assert!(overlapping(&[b("64", 0), b("128", 40)]).is_empty());
/// assert_eq!(overlapping(&[b("64", 0), b("128", 20)]), ["\"64\" over \"128\""]);
/// ```
pub fn overlapping(boxes: &[TextBox]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            if a.overlaps(b, OVERLAP_SLACK) {
                out.push(format!("{:?} over {:?}", a.text, b.text));
            }
        }
    }
    out
}

/// The texts of `boxes` that hold a code identifier (a word joined by `_` to another, as in
/// `grad_first_over_last` or an untypeset subscript `x_L`) or an unrounded number (`0.003000`,
/// `128.000`: two or more trailing zeros after a decimal point).
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::{TextBox, code_in_text};
/// let b = |t: &str| TextBox { text: t.into(), rect: (0, 0, 1, 1) };
/// assert!(code_in_text(&[b("x₀ share"), b("lr 0.003"), b("1e-3")]).is_empty());
/// assert_eq!(code_in_text(&[b("eff_depth")]).len(), 1);
/// assert_eq!(code_in_text(&[b("lr 0.003000")]).len(), 1);
/// assert_eq!(code_in_text(&[b("128.00")]).len(), 1);
/// ```
pub fn code_in_text(boxes: &[TextBox]) -> Vec<String> {
    let word = |c: char| c.is_alphanumeric();
    let mut out = Vec::new();
    for b in boxes {
        let chars: Vec<char> = b.text.chars().collect();
        let identifier = chars
            .windows(3)
            .any(|w| word(w[0]) && w[1] == '_' && word(w[2]));
        let unrounded = b
            .text
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .any(|t| {
                t.split_once('.')
                    .is_some_and(|(i, f)| !i.is_empty() && f.len() >= 2 && f.ends_with("00"))
            });
        if identifier {
            out.push(format!("code identifier in {:?}", b.text));
        }
        if unrounded {
            out.push(format!("unrounded number in {:?}", b.text));
        }
    }
    out
}

/// Whether values spanning `lo..=hi` (all of one sign) cover more than two decades: such an
/// axis must be logarithmic.
///
/// # Examples
///
/// ```rust
/// use normscope_figure::inspect::over_two_decades;
/// assert!(over_two_decades(&[0.5, 20.0, 80.0]));
/// assert!(!over_two_decades(&[0.5, 20.0]));
/// assert!(!over_two_decades(&[-1.0, 0.0, 500.0])); // crosses zero: a linear axis
/// ```
pub fn over_two_decades(values: &[f64]) -> bool {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
            (a.0.min(*v), a.1.max(*v))
        });
    if finite.is_empty() || (lo <= 0.0 && hi >= 0.0) {
        return false;
    }
    let (a, b) = (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()));
    b > 100.0 * a
}
