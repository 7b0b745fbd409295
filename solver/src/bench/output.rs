//! Writing a [`BenchReport`]: records as JSONL and CSV, the summary as JSON, CSV and Markdown,
//! and the plots as SVG and, when the renderer is built in (the `png` feature), also as PNG
//! beside each SVG.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tilepdb_common::plot::{self, svg, svg::Point, svg::Scale};

use super::{BenchReport, EntrySummary, Provenance};
use crate::error::{Error, Result};

/// The files [`write()`] creates in its directory (besides one histogram per table).
pub const RESULTS_JSONL: &str = "results.jsonl";
/// One line per search, as CSV.
pub const RESULTS_CSV: &str = "results.csv";
/// The report without its records.
pub const SUMMARY_JSON: &str = "summary.json";
/// One line per entry, as CSV.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The report for people.
pub const REPORT_MD: &str = "report.md";
/// Table memory against mean nodes.
pub const PARETO_MEMORY_SVG: &str = "pareto-memory-nodes.svg";
/// Total time against instances solved.
pub const PARETO_TIME_SVG: &str = "pareto-time-solved.svg";
/// Nodes of each entry, sorted.
pub const NODES_SVG: &str = "nodes-sorted.svg";

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn option<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// A name safe as a file name: letters, digits, `-`, `_`, `.`, `+`; others become `_`.
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The directory being written, and the paths written to it so far.
struct OutputDir<'a> {
    dir: &'a Path,
    provenance: &'a Provenance,
    written: Vec<PathBuf>,
}

impl OutputDir<'_> {
    /// Writes `text` as the file `name`.
    fn save(&mut self, name: &str, text: &str) -> Result<()> {
        let path = self.dir.join(name);
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        self.written.push(path);
        Ok(())
    }

    /// Writes the chart `chart` as `name` (an `.svg` file name) and, when PNG is built in
    /// ([`plot::PNG_BUILT`]), as the PNG of the same stem.
    fn save_plot(&mut self, name: &str, chart: &str) -> Result<()> {
        let path = self.dir.join(name);
        let chart = with_provenance(chart, self.provenance);
        let chart = chart.as_str();
        plot::save(&path, chart)?;
        self.written.push(path.clone());
        if plot::PNG_BUILT {
            let png = path.with_extension("png");
            plot::save(&png, chart)?;
            self.written.push(png);
        }
        Ok(())
    }
}

/// `chart` (an SVG document) with a comment after its opening tag that names the program,
/// its commit and the command line (the PNG rendered from it does not show it).
pub fn with_provenance(chart: &str, provenance: &Provenance) -> String {
    // A comment may not hold `--`: a word joiner goes between the two.
    let text = format!(
        "made by {}: {}",
        provenance.program_line(),
        provenance.command_text()
    )
    .replace("--", "-\u{2060}-");
    let Some(end) = chart
        .find("<svg")
        .and_then(|start| chart[start..].find('>').map(|e| start + e + 1))
    else {
        return chart.to_string();
    };
    format!("{}\n<!-- {text} -->{}", &chart[..end], &chart[end..])
}

/// The tables of an entry as one CSV field: `file=checksum` joined by spaces.
fn checksums(summary: &EntrySummary) -> String {
    summary
        .tables
        .iter()
        .map(|t| format!("{}={}", t.file, t.checksum))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The records as CSV, one line per entry and instance.
pub fn results_csv(report: &BenchReport) -> String {
    let mut out =
        String::from("entry,number,instance,outcome,length,expanded,generated,seconds,initial_h\n");
    for r in &report.records {
        let outcome = serde_json::to_value(r.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{outcome},{},{},{},{:.6},{}",
            csv_field(&r.entry),
            r.number,
            csv_field(&r.instance),
            option(r.length),
            r.expanded,
            r.generated,
            r.seconds,
            r.initial_h
        );
    }
    out
}

/// The summary as CSV, one line per entry.
pub fn summary_csv(report: &BenchReport) -> String {
    let mut out = String::from(
        "entry,heuristic,table_bytes,instances,solved,mean_expanded,mean_generated,median_generated,mean_seconds,median_seconds,total_seconds,mean_initial_h,mean_random_h,on_memory_front,on_time_front,total_expanded,total_generated,cpu_seconds,expanded_per_cpu_second,generated_per_cpu_second,checksums,program_version,commit\n",
    );
    for s in &report.summaries {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{:.1},{:.1},{:.6},{:.6},{:.6},{:.3},{:.3},{},{},{},{},{:.6},{:.1},{:.1},{},{},{}",
            csv_field(&s.entry),
            csv_field(&s.heuristic),
            s.table_bytes,
            s.instances,
            s.solved,
            s.mean_expanded,
            s.mean_generated,
            s.median_generated,
            s.mean_seconds,
            s.median_seconds,
            s.total_seconds,
            s.mean_initial_h,
            s.mean_random_h,
            s.on_memory_front,
            s.on_time_front,
            s.total_expanded,
            s.total_generated,
            s.cpu_seconds,
            s.expanded_per_cpu_second,
            s.generated_per_cpu_second,
            csv_field(&checksums(s)),
            csv_field(&report.provenance.program_version),
            csv_field(&report.provenance.commit),
        );
    }
    out
}

fn mib(bytes: u64) -> String {
    if bytes == 0 {
        "—".into()
    } else {
        format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// The report as Markdown: protocol, machine, the summary table, the fronts and the plots.
pub fn report_markdown(report: &BenchReport, histogram_files: &[String]) -> String {
    let mut out = String::new();
    markdown_protocol(&mut out, report);
    markdown_summary_table(&mut out, report);
    markdown_fronts(&mut out, report);
    markdown_table_files(&mut out, report);
    markdown_plots(&mut out, histogram_files);
    out
}

/// The title, then the date, program, command, machine and protocol as a list.
fn markdown_protocol(out: &mut String, report: &BenchReport) {
    let _ = writeln!(
        out,
        "# Heuristic comparison on {} ({} goal)\n",
        report.board, report.goal
    );
    let _ = writeln!(out, "* date: {}", report.date);
    let _ = writeln!(out, "* program: {}", report.provenance.program_line());
    let _ = writeln!(
        out,
        "* command: `{}`",
        report.provenance.command_text().replace('`', "'")
    );
    let _ = writeln!(out, "* machine: {}", report.machine);
    let _ = writeln!(
        out,
        "* protocol: {} instances, IDA* (nodes expanded and nodes generated counted), per instance at most {} nodes and {}; {} instances at once, each searched on {} threads; tables held as `{}`; mean h also over {} uniformly random solvable states (seed {})",
        report.instances,
        report
            .max_nodes
            .map_or("unlimited".into(), |n| n.to_string()),
        report
            .timeout_seconds
            .map_or("no time limit".into(), |t| format!("{t} s")),
        report.threads,
        report.search_threads,
        report.load,
        report.random_states,
        report.seed
    );
    let _ = writeln!(
        out,
        "* nodes and times are over every instance: one stopped by a budget counts what it spent\n"
    );
}

/// The summary, a row per entry.
fn markdown_summary_table(out: &mut String, report: &BenchReport) {
    out.push_str("| entry | heuristic | tables MiB | solved | mean expanded | mean generated | median generated | mean s | median s | total s | CPU s | M expanded / CPU s | M generated / CPU s | mean h (instances) | mean h (random) |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for s in &report.summaries {
        let EntrySummary {
            entry, heuristic, ..
        } = s;
        let _ = writeln!(
            out,
            "| {entry} | {heuristic} | {} | {}/{} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2} | {:.2} |",
            mib(s.table_bytes),
            s.solved,
            s.instances,
            s.mean_expanded,
            s.mean_generated,
            s.median_generated,
            s.mean_seconds,
            s.median_seconds,
            s.total_seconds,
            s.cpu_seconds,
            s.expanded_per_cpu_second / 1e6,
            s.generated_per_cpu_second / 1e6,
            s.mean_initial_h,
            s.mean_random_h
        );
    }
}

/// The entries on each Pareto front.
fn markdown_fronts(out: &mut String, report: &BenchReport) {
    let _ = writeln!(
        out,
        "\nPareto front, table memory against mean nodes generated: {}",
        report.memory_front.join(", ")
    );
    let _ = writeln!(
        out,
        "\nPareto front, total time against instances solved: {}\n",
        report.time_front.join(", ")
    );
}

/// The table files of the entries that have tables, with their checksums; nothing when no
/// entry has tables.
fn markdown_table_files(out: &mut String, report: &BenchReport) {
    let with_tables: Vec<&EntrySummary> = report
        .summaries
        .iter()
        .filter(|s| !s.tables.is_empty())
        .collect();
    if with_tables.is_empty() {
        return;
    }
    out.push_str("Table files (checksums as in each set's manifest):\n\n");
    out.push_str("| entry | set | file | bytes | checksum |\n|---|---|---|---:|---|\n");
    for s in with_tables {
        let set = s
            .set_dir
            .as_ref()
            .map_or_else(String::new, |d| d.display().to_string());
        for t in &s.tables {
            let _ = writeln!(
                out,
                "| {} | {set} | {} | {} | {} |",
                s.entry, t.file, t.file_bytes, t.checksum
            );
        }
    }
    out.push('\n');
}

/// An image link to each plot: the fronts, the nodes, then the histograms.
fn markdown_plots(out: &mut String, histogram_files: &[String]) {
    for file in [PARETO_MEMORY_SVG, PARETO_TIME_SVG, NODES_SVG]
        .iter()
        .map(std::string::ToString::to_string)
        .chain(histogram_files.iter().cloned())
    {
        let _ = writeln!(out, "![{file}]({file})\n");
    }
}

/// Writes every output file of `report` into `dir` (created if missing); returns their paths.
pub fn write(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut out = OutputDir {
        dir,
        provenance: &report.provenance,
        written: Vec::new(),
    };
    out.save(RESULTS_JSONL, &results_jsonl(report)?)?;
    out.save(RESULTS_CSV, &results_csv(report))?;
    out.save(SUMMARY_JSON, &summary_json(report)?)?;
    out.save(SUMMARY_CSV, &summary_csv(report))?;
    out.save_plot(PARETO_MEMORY_SVG, &memory_chart(report))?;
    out.save_plot(PARETO_TIME_SVG, &time_chart(report))?;
    out.save_plot(NODES_SVG, &nodes_chart(report))?;
    let histogram_files = save_histograms(report, &mut out)?;
    out.save(REPORT_MD, &report_markdown(report, &histogram_files))?;
    Ok(out.written)
}

/// The records as JSON lines, one per entry and instance.
fn results_jsonl(report: &BenchReport) -> Result<String> {
    let mut jsonl = String::new();
    for r in &report.records {
        jsonl.push_str(&serde_json::to_string(r).map_err(|e| Error::Bench(e.to_string()))?);
        jsonl.push('\n');
    }
    Ok(jsonl)
}

/// The report as pretty JSON, ending in a line break.
fn summary_json(report: &BenchReport) -> Result<String> {
    let summary = serde_json::to_string_pretty(report).map_err(|e| Error::Bench(e.to_string()))?;
    Ok(summary + "\n")
}

/// The chart of table memory against mean nodes generated, the memory front marked.
fn memory_chart(report: &BenchReport) -> String {
    let memory: Vec<Point> = report
        .summaries
        .iter()
        .map(|s| Point {
            label: s.entry.clone(),
            x: s.table_bytes as f64 / (1024.0 * 1024.0),
            y: s.mean_generated,
            on_front: s.on_memory_front,
        })
        .collect();
    let budget = report
        .max_nodes
        .map_or(String::new(), |n| format!(", budget {n} nodes"));
    svg::scatter(
        &format!(
            "Table memory against search effort ({} instances{budget})",
            report.instances
        ),
        "table memory, MiB (log; computed heuristics at the left edge)",
        "mean nodes generated per instance (log)",
        (Scale::Log, Scale::Log),
        &memory,
    )
}

/// The chart of total time against instances solved, the time front marked.
fn time_chart(report: &BenchReport) -> String {
    let time: Vec<Point> = report
        .summaries
        .iter()
        .map(|s| Point {
            label: s.entry.clone(),
            x: s.total_seconds,
            y: s.solved as f64,
            on_front: s.on_time_front,
        })
        .collect();
    svg::scatter(
        "Time against instances solved within the budget",
        "total seconds over the instances (log)",
        "instances solved",
        (Scale::Log, Scale::Linear),
        &time,
    )
}

/// The chart of each entry's nodes generated per instance, sorted.
fn nodes_chart(report: &BenchReport) -> String {
    let lines: Vec<(String, Vec<f64>)> = report
        .summaries
        .iter()
        .map(|s| {
            let mut nodes: Vec<f64> = report
                .records
                .iter()
                .filter(|r| r.entry == s.entry)
                .map(|r| r.generated as f64)
                .collect();
            nodes.sort_by(f64::total_cmp);
            (s.entry.clone(), nodes)
        })
        .collect();
    svg::series(
        "Nodes per instance, sorted",
        "instances, by increasing nodes",
        "nodes (log)",
        Scale::Log,
        &lines,
    )
}

/// Writes the histogram of each table of the report; returns the SVG files' names.
fn save_histograms(report: &BenchReport, out: &mut OutputDir) -> Result<Vec<String>> {
    let mut histogram_files = Vec::new();
    for t in &report.histograms {
        let name = format!(
            "histogram-{}-{}.svg",
            file_safe(&t.set),
            file_safe(&t.table)
        );
        out.save_plot(
            &name,
            &svg::histogram(
                &format!("{} / {}: entries per value", t.set, t.table),
                "value (moves of the pattern tiles)",
                &t.counts,
            ),
        )?;
        histogram_files.push(name);
    }
    Ok(histogram_files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }

    #[test]
    fn file_names_are_made_safe() {
        assert_eq!(file_safe("4x4-7-8+reflect"), "4x4-7-8+reflect");
        assert_eq!(file_safe("a/b c"), "a_b_c");
    }
}
