//! The file formats: PNG bytes with their resolution recorded, and PDF bytes converted from
//! the SVG plotters writes (by `svg2pdf`, the font subset embedded), made deterministic.

use crate::sizes::DPI;
use std::sync::OnceLock;

/// PNG bytes of an RGB buffer, with the resolution [`DPI`] recorded (pixels per metre).
pub(crate) fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> std::result::Result<Vec<u8>, String> {
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

/// PDF bytes of an SVG drawn with [`FONT`](crate::FONT) (DejaVu Sans, the only font loaded, so
/// no system font is read).
pub(crate) fn svg_to_pdf(svg: &str) -> std::result::Result<Vec<u8>, String> {
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
