//! PNG output (cargo feature `png`): a chart's SVG rendered by `resvg`, at [`SCALE`] times its
//! size, text in the first sans-serif face found among the system's fonts (DejaVu Sans,
//! Liberation Sans, Noto Sans or FreeSans, else any face; with no fonts at all the chart is
//! drawn without its text).
//!
//! ```
//! let chart = tilepdb_common::plot::svg::histogram("a table", "value", &[1, 3, 1]);
//! let png = tilepdb_common::plot::png::render(&chart).unwrap();
//! assert_eq!(&png[1..4], b"PNG");
//! ```

use std::sync::{Arc, OnceLock};

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{self, fontdb};

/// Pixels per SVG unit: a 720 x 440 chart becomes a 1440 x 880 image.
pub const SCALE: u32 = 2;

/// The faces `sans-serif` is looked for in, in order.
const SANS_SERIF: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// The system's fonts, loaded once per process.
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            let families: Vec<String> = db
                .faces()
                .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
                .collect();
            let family = SANS_SERIF
                .iter()
                .find(|s| families.iter().any(|f| f == *s))
                .map(|s| s.to_string())
                .or_else(|| families.first().cloned());
            if let Some(family) = family {
                db.set_sans_serif_family(family);
            }
            Arc::new(db)
        })
        .clone()
}

/// The PNG file of the SVG document `svg`, [`SCALE`] times the document's size; an error
/// says why the document could not be read or drawn.
pub fn render(svg: &str) -> Result<Vec<u8>, String> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let (width, height) = (size.width() * SCALE, size.height() * SCALE);
    let mut pixmap = Pixmap::new(width, height)
        .ok_or_else(|| format!("an image of {width} x {height} pixels cannot be made"))?;
    let scale = SCALE as f32;
    resvg::render(
        &tree,
        Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Width, height and the pixels (RGBA) of a PNG file, by an independent decoder.
    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut reader = ::png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        pixels.truncate(info.buffer_size());
        (info.width, info.height, pixels)
    }

    #[test]
    fn a_chart_renders_at_the_stated_size_and_is_not_blank() {
        let chart = crate::plot::svg::histograms(
            "two tables",
            "value",
            &[("a".into(), vec![1, 5, 20, 5]), ("b".into(), vec![2, 9, 2])],
        );
        let doc = roxmltree::Document::parse(&chart).unwrap();
        let side = |name| -> u32 { doc.root_element().attribute(name).unwrap().parse().unwrap() };
        let (width, height, pixels) = decode(&render(&chart).unwrap());
        assert_eq!(
            (width, height),
            (side("width") * SCALE, side("height") * SCALE)
        );
        // White background; the bars and the frame are not white.
        let coloured = pixels
            .chunks(4)
            .filter(|p| p[0] < 200 || p[1] < 200 || p[2] < 200)
            .count();
        let share = coloured as f64 / (width * height) as f64;
        assert!(share > 0.01 && share < 0.9, "{share} of the pixels drawn");
    }

    #[test]
    fn a_document_that_is_not_svg_is_an_error() {
        let err = render("<html>no</html>").unwrap_err();
        assert!(!err.is_empty());
    }
}
