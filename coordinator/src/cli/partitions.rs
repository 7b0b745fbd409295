//! `tilepdb-coordinator partitions`: the known partitions and their tiles.

use clap::Args;
use serde::Serialize;
use tilepdb_common::KNOWN_PARTITIONS;

#[derive(Args, Default)]
pub struct PartitionsArgs {
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Entry {
    partition: &'static str,
    board: &'static str,
    patterns: Vec<Vec<u8>>,
    source: &'static str,
}

pub fn run(args: PartitionsArgs) -> anyhow::Result<()> {
    if args.json {
        #[derive(Serialize)]
        struct Partitions {
            partitions: Vec<Entry>,
        }
        let entries: Vec<Entry> = KNOWN_PARTITIONS
            .iter()
            .map(|k| Entry {
                partition: k.name,
                board: k.board,
                patterns: k.patterns.iter().map(|p| p.to_vec()).collect(),
                source: k.source,
            })
            .collect();
        tilepdb_common::json::print(
            "partitions",
            Partitions {
                partitions: entries,
            },
        )?;
        return Ok(());
    }
    for k in KNOWN_PARTITIONS {
        let patterns = k
            .patterns
            .iter()
            .map(|p| {
                format!(
                    "{{{}}}",
                    p.iter()
                        .map(std::string::ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
        tilepdb_common::outln!("{:<12} {:<4} {patterns}  ({})", k.name, k.board, k.source);
    }
    Ok(())
}
