//! Figures through plotters, as PNG, SVG and PDF, with DejaVu Sans embedded (the `dejavu` crate)
//! and registered for plotters' `ab_glyph` text, so no system font or package is needed: the
//! [`Figure`] trait, its drawing in memory ([`render`]) and to files ([`save`]), and the
//! defect checks every figure passes ([`defects`]).
//!
//! The PNG records its 300 dpi (pHYs chunk); the PDF is converted from the SVG by `svg2pdf`
//! (vector, the font subset embedded).

use crate::encode::{encode_png, svg_to_pdf};
use crate::font::register_font;
use crate::sizes::SIZE;
use normscope_core::output::{atomic, console};
use normscope_core::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

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
    /// The PNG file's bytes, with its [`DPI`](crate::DPI) recorded (pHYs).
    pub png: Vec<u8>,
    /// The SVG file's bytes.
    pub svg: Vec<u8>,
    /// The PDF file's bytes: the SVG converted by `svg2pdf` at [`DPI`](crate::DPI), so the page
    /// has the figure's size in inches; the font subset is embedded.
    pub pdf: Vec<u8>,
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
