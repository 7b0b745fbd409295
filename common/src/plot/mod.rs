//! Charts for people: SVG written by hand ([`svg`]) and, with the `png` cargo feature, the same
//! charts rendered as PNG (`png`), so that one drawing serves both formats.
//!
//! [`save`] writes a chart in the format its file name asks for:
//!
//! ```
//! use tilepdb_common::plot::{self, PlotFormat};
//! let dir = tempfile::tempdir().unwrap();
//! let chart = plot::svg::histogram("a table", "value", &[1, 3, 1]);
//! let path = dir.path().join("values.svg");
//! assert_eq!(plot::save(&path, &chart).unwrap(), PlotFormat::Svg);
//! assert!(std::fs::read_to_string(&path).unwrap().starts_with("<svg"));
//! // A PNG needs the renderer built in; without it the refusal says so.
//! let png = plot::save(&dir.path().join("values.png"), &chart);
//! assert_eq!(png.is_ok(), plot::PNG_BUILT);
//! ```

#[cfg(feature = "png")]
pub mod png;
pub mod svg;

use std::path::{Path, PathBuf};

use thiserror::Error;

/// Whether this build renders PNG (the `png` cargo feature).
pub const PNG_BUILT: bool = cfg!(feature = "png");

/// Why a chart could not be written.
#[derive(Debug, Error)]
pub enum PlotError {
    /// Writing the file failed. The I/O error is part of the message (not a `source`, which reports would print twice).
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A file name that ends neither in `.svg` nor in `.png`.
    #[error("{path}: a plot's file name ends in .svg or .png")]
    Extension {
        /// The file.
        path: PathBuf,
    },
    /// A PNG asked of a build without the renderer.
    #[error("{path}: PNG output is not built into this program (cargo feature `png`); write .svg")]
    PngNotBuilt {
        /// The file.
        path: PathBuf,
    },
    /// A document the renderer could not read or draw.
    #[error("{path}: rendering the PNG failed: {reason}")]
    Render {
        /// The file.
        path: PathBuf,
        /// The renderer's reason.
        reason: String,
    },
}

/// The file formats a chart is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// The chart as written ([`svg`]).
    Svg,
    /// The chart rendered ([`PNG_BUILT`] builds only).
    Png,
}

impl PlotFormat {
    /// The format a file name asks for by its extension (`.svg` or `.png`, any case).
    pub fn of_path(path: &Path) -> Result<PlotFormat, PlotError> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("svg") => Ok(PlotFormat::Svg),
            Some("png") => Ok(PlotFormat::Png),
            _ => Err(PlotError::Extension {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// Writes the chart `svg` (a document from [`svg`]) to `path`, as SVG or PNG after the file
/// name; returns the format written. PNG is refused, before anything is written, when the
/// renderer is not built in ([`PNG_BUILT`]).
pub fn save(path: &Path, svg: &str) -> Result<PlotFormat, PlotError> {
    let format = PlotFormat::of_path(path)?;
    let bytes = match format {
        PlotFormat::Svg => svg.as_bytes().to_vec(),
        PlotFormat::Png => png_bytes(path, svg)?,
    };
    std::fs::write(path, bytes).map_err(|error| PlotError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(format)
}

#[cfg(feature = "png")]
fn png_bytes(path: &Path, svg: &str) -> Result<Vec<u8>, PlotError> {
    png::render(svg).map_err(|reason| PlotError::Render {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(not(feature = "png"))]
fn png_bytes(path: &Path, _svg: &str) -> Result<Vec<u8>, PlotError> {
    Err(PlotError::PngNotBuilt {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(
            PlotFormat::of_path(Path::new("a/b.SVG")).unwrap(),
            PlotFormat::Svg
        );
        assert_eq!(
            PlotFormat::of_path(Path::new("b.png")).unwrap(),
            PlotFormat::Png
        );
        for bad in ["plot", "plot.jpg", "svg"] {
            let err = PlotFormat::of_path(Path::new(bad)).unwrap_err().to_string();
            assert!(err.contains(bad) && err.contains(".svg or .png"), "{err}");
        }
    }

    #[test]
    fn an_unwritable_path_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("p.svg");
        let err = save(&path, "<svg/>").unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");
    }

    #[cfg(not(feature = "png"))]
    #[test]
    fn png_without_the_renderer_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.png");
        let err = save(&path, "<svg/>").unwrap_err().to_string();
        assert!(err.contains("feature `png`"), "{err}");
        assert!(!path.exists());
    }
}
