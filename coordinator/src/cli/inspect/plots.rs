//! `inspect --plot`: the value histograms of a table or a set drawn into a file.

use std::path::Path;

use anyhow::bail;
use tilepdb_common::plot::{self, PlotFormat};
use tilepdb_common::table::header::histogram_mean;
use tilepdb_common::table::{Pdb, TableSet};

/// Refuses a plot file name that is neither .svg nor .png, or a PNG this build cannot draw,
/// before any work.
pub(super) fn check_plot_file(file: &Path) -> anyhow::Result<()> {
    if PlotFormat::of_path(file)? == PlotFormat::Png && !plot::PNG_BUILT {
        bail!(
            "{}: PNG plots are not built into this program (cargo feature `png`); use a .svg file",
            file.display()
        );
    }
    Ok(())
}

/// A table's file name, or its path when it has none.
pub(super) fn table_name(pdb: &Pdb) -> String {
    pdb.path().file_name().map_or_else(
        || pdb.path().display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Draws the value histograms of every table of `set` into `file`.
pub(super) fn plot_set(file: &Path, set: &TableSet, dir: &Path, json: bool) -> anyhow::Result<()> {
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let tables: Vec<&Pdb> = set.tables().iter().collect();
    plot_tables(file, &name, &tables, json)
}

/// Draws the value histograms of `tables` (one series each) into `file`, titled `name`.
pub(super) fn plot_tables(
    file: &Path,
    name: &str,
    tables: &[&Pdb],
    json: bool,
) -> anyhow::Result<()> {
    let series: Vec<(String, Vec<u64>)> = tables
        .iter()
        .map(|t| (table_name(t), t.header().histogram.clone()))
        .collect();
    let mean: f64 = tables
        .iter()
        .map(|t| histogram_mean(&t.header().histogram).unwrap_or(0.0))
        .sum();
    let chart = plot::svg::histograms(
        &format!("{name}: entries per value (mean value {mean:.2})"),
        "value (moves of the pattern tiles)",
        &series,
    );
    plot::save(file, &chart)?;
    if !json {
        tilepdb_common::outln!("histogram plot written to {}", file.display());
    }
    Ok(())
}
