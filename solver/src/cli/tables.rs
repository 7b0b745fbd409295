//! Opening the table set a command names, with a hint when there is none there, and how its
//! tables are held (`--load`).

use std::path::Path;

use anyhow::Context;
use clap::ValueEnum;
use tilepdb_common::table::{Load, TableSet};

/// How the tables are held in memory.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadArg {
    /// Map the files: shared through the page cache, nothing copied.
    Map,
    /// Read the files into memory backed by huge pages: faster lookups in large tables (the
    /// 15-puzzle's 8-tile table), their size in private memory.
    Memory,
}

impl From<LoadArg> for Load {
    fn from(load: LoadArg) -> Load {
        match load {
            LoadArg::Map => Load::Map,
            LoadArg::Memory => Load::Memory,
        }
    }
}

/// The table set in `dir`, read as `load` says. A directory without a set's manifest is
/// refused with the commands that make one: `tilepdb-coordinator build` (its options read
/// from the set's name when it is the name of a set of a known board) and `tilepdb-solve
/// fetch`.
pub fn open_set(dir: &Path, load: Load) -> anyhow::Result<TableSet> {
    if dir.exists() && !dir.is_dir() {
        // A file, a FIFO or a device: not a set's directory, and nothing to hint about.
        anyhow::bail!(
            "{} is not a directory: a table set is a directory with a manifest.json",
            dir.display()
        );
    }
    if !dir.join("manifest.json").is_file() {
        let what = if dir.is_dir() {
            "has no table set (no manifest.json)"
        } else {
            "does not exist"
        };
        anyhow::bail!(
            "the table set {} {what}: build it with `{}`, or download it from a coordinator with \
             `tilepdb-solve fetch --from URL --set {}` and pass the directory it prints",
            dir.display(),
            build_command(dir),
            dir.file_name()
                .map_or_else(|| "NAME".into(), |n| n.to_string_lossy().into_owned())
        );
    }
    TableSet::open_with(dir, load)
        .with_context(|| format!("opening the table set {}", dir.display()))
}

/// `tilepdb-coordinator build ...` that writes the set `dir`: with its partition, blank rule,
/// goal and encoding when its name is that of a set of a known partition
/// (`4x4-7-8-minimized-blank-first-nibble`), else with `--partition NAME` to fill in.
fn build_command(dir: &Path) -> String {
    let out = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| ".".to_string(), |p| p.display().to_string());
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let options = options_of_name(&name)
        .unwrap_or_else(|| "--partition NAME (see tilepdb-coordinator partitions)".to_string());
    format!("tilepdb-coordinator build {options} --out {out}")
}

/// The build options of a set name of a square board: `4x4-7-8-minimized-blank-first[-E]`
/// gives `--partition 15:7-8 --blank minimized --goal blank-first [--encoding E]`.
fn options_of_name(name: &str) -> Option<String> {
    let (board, rest) = name.split_once('-')?;
    let puzzle = match board {
        "3x3" => 8,
        "4x4" => 15,
        "5x5" => 24,
        _ => return None,
    };
    let rules = ["minimized", "zero-aware", "aware", "ignored"];
    let (groups, rule, rest) = rules.iter().find_map(|rule| {
        let at = rest.find(&format!("-{rule}-"))?;
        let groups = &rest[..at];
        Some((groups, *rule, &rest[at + rule.len() + 2..]))
    })?;
    if groups.is_empty() || !groups.chars().all(|c| c.is_ascii_digit() || c == '-') {
        return None;
    }
    let goal = ["blank-first", "blank-last"]
        .into_iter()
        .find(|g| rest.starts_with(g))?;
    let encoding = rest[goal.len()..].strip_prefix('-').map(|e| {
        // The name spells `min-nibble:C` as `min-nibble-C`.
        e.strip_prefix("min-nibble-")
            .map_or_else(|| e.to_string(), |c| format!("min-nibble:{c}"))
    });
    let encoding = encoding.map_or_else(String::new, |e| format!(" --encoding {e}"));
    Some(format!(
        "--partition {puzzle}:{groups} --blank {rule} --goal {goal}{encoding}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sets_name_gives_its_build_options() {
        assert_eq!(
            options_of_name("4x4-7-8-minimized-blank-first").as_deref(),
            Some("--partition 15:7-8 --blank minimized --goal blank-first")
        );
        assert_eq!(
            options_of_name("4x4-7-8-zero-aware-blank-first-1-bit").as_deref(),
            Some("--partition 15:7-8 --blank zero-aware --goal blank-first --encoding 1-bit")
        );
        assert_eq!(
            options_of_name("5x5-6-6-6-6-aware-blank-last-min-nibble-4").as_deref(),
            Some("--partition 24:6-6-6-6 --blank aware --goal blank-last --encoding min-nibble:4")
        );
        assert_eq!(options_of_name("3x4-1.2.3.4_5.6.7-aware-blank-first"), None);
        assert_eq!(options_of_name("my-tables"), None);
        assert!(
            build_command(Path::new("tables/4x4-6-6-3-minimized-blank-first")).ends_with(
                "--partition 15:6-6-3 --blank minimized --goal blank-first --out tables"
            )
        );
    }
}
