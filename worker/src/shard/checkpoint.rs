//! A shard's checkpoints: the states of each layer of a table, written when the layer is
//! complete, from which a replacement worker of the shard rebuilds its arrays.
//!
//! A layer's cost on disk grows with its own new states, never with the shard's size: the
//! layer `L` of table `t` is written as parts `table-t/layer-L.part-i` (one per range of tile
//! sets, each a run of segments: `count`, `list bytes`, `compressed bytes` as u64 LE, then one
//! zstd frame of a region list, `common/src/wire/region_lists.rs`) and a marker
//! `table-t/layer-L.done`, written last (temporary file, sync, rename), which names the job,
//! the table, the layer, the shard and each part's states, bytes and CRC-32. Reading checks all
//! of it: a damaged, truncated or foreign checkpoint is an error, never states.
//!
//! ```text
//! tilepdb-shard-checkpoint 1
//! job 4x4-5-5-5-minimized-blank-first
//! table 0
//! layer 3
//! shard 1 of 3
//! part layer-3.part-0 412 1043 2774123341
//! ```

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tilepdb_common::shard::Shard;
use tilepdb_common::wire::region_lists::{encode_region_states, walk_region_states};

use super::list_shape;
use crate::error::{Error, Result};

/// The first line of a marker.
const MAGIC: &str = "tilepdb-shard-checkpoint 1";
/// States per segment of a part.
const SEGMENT_STATES: usize = 1 << 20;
/// Largest part file read back.
const MAX_PART_BYTES: u64 = 1 << 40;

/// The checkpoints of one shard of one job, in a directory of its own.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    dir: PathBuf,
    job_id: String,
    shard: u32,
    shards: u32,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Checkpoint(format!("{}: {e}", path.display()))
}

fn damaged(path: &Path, why: &str) -> Error {
    Error::Checkpoint(format!(
        "{} is damaged or not this shard's: {why}",
        path.display()
    ))
}

impl Checkpoints {
    /// The checkpoints of shard `shard` of `shards` of job `job_id` under `root`.
    pub fn new(root: &Path, job_id: &str, shard: u32, shards: u32) -> Checkpoints {
        let name: String = job_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Checkpoints {
            dir: root.join(format!("{name}-shard-{shard}-of-{shards}")),
            job_id: job_id.to_string(),
            shard,
            shards,
        }
    }

    fn table_dir(&self, table: u32) -> PathBuf {
        self.dir.join(format!("table-{table}"))
    }

    fn marker(&self, table: u32, layer: u32) -> PathBuf {
        self.table_dir(table).join(format!("layer-{layer}.done"))
    }

    /// Writes the shard's states of the layer `layer` of table `table` (on `pool`, a part per
    /// range of `ranges`); the bytes written.
    pub fn write_layer(
        &self,
        shard: &Shard,
        pool: &rayon::ThreadPool,
        ranges: &[Range<u64>],
        table: u32,
        layer: u32,
        level: i32,
    ) -> Result<u64> {
        let dir = self.table_dir(table);
        fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let parts: Vec<(String, u64, u64, u32)> = pool.install(|| {
            ranges
                .par_iter()
                .enumerate()
                .map(|(i, sets)| write_part(shard, &dir, sets, layer, i, level))
                .collect::<Result<_>>()
        })?;
        let mut text = format!(
            "{MAGIC}\njob {}\ntable {table}\nlayer {layer}\nshard {} of {}\n",
            self.job_id, self.shard, self.shards
        );
        for (name, states, bytes, crc) in &parts {
            let _ = writeln!(text, "part {name} {states} {bytes} {crc}");
        }
        let marker = self.marker(table, layer);
        let temp = marker.with_extension("tmp");
        let mut f = fs::File::create(&temp).map_err(|e| io(&temp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| io(&temp, e))?;
        fs::rename(&temp, &marker).map_err(|e| io(&marker, e))?;
        Ok(parts.iter().map(|p| p.2).sum())
    }

    /// Calls `f` with the states of the layer `layer` of table `table` that the shard wrote,
    /// a segment at a time, each checked in full before it is given.
    pub fn read_layer(
        &self,
        shard: &Shard,
        table: u32,
        layer: u32,
        mut f: impl FnMut(&[u64]) -> Result<()>,
    ) -> Result<()> {
        let marker = self.marker(table, layer);
        let text = fs::read_to_string(&marker).map_err(|e| io(&marker, e))?;
        let mut lines = text.lines();
        let expect = [
            MAGIC.to_string(),
            format!("job {}", self.job_id),
            format!("table {table}"),
            format!("layer {layer}"),
            format!("shard {} of {}", self.shard, self.shards),
        ];
        for want in &expect {
            if lines.next() != Some(want.as_str()) {
                return Err(damaged(&marker, &format!("expected {want:?}")));
            }
        }
        let shape = list_shape(shard, layer);
        for line in lines {
            let fields: Vec<&str> = line.split(' ').collect();
            let ["part", name, states, bytes, crc] = fields[..] else {
                return Err(damaged(&marker, &format!("line {line:?}")));
            };
            let number = |t: &str| t.parse::<u64>().map_err(|_| damaged(&marker, line));
            let (states, bytes, crc) = (number(states)?, number(bytes)?, number(crc)?);
            if name.contains('/') || bytes > MAX_PART_BYTES {
                return Err(damaged(&marker, line));
            }
            let path = self.table_dir(table).join(name);
            let data = fs::read(&path).map_err(|e| io(&path, e))?;
            if data.len() as u64 != bytes || u64::from(crc32fast::hash(&data)) != crc {
                return Err(damaged(&path, "its size or CRC-32 is not the marker's"));
            }
            let mut at = 0usize;
            let mut seen = 0u64;
            while at < data.len() {
                let word = |i: usize| -> Result<u64> {
                    data.get(at + 8 * i..at + 8 * i + 8)
                        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                        .ok_or_else(|| damaged(&path, "a segment's header is cut"))
                };
                let (count, list_bytes, packed_bytes) = (word(0)?, word(1)?, word(2)?);
                at += 24;
                let end = usize::try_from(packed_bytes)
                    .ok()
                    .and_then(|n| at.checked_add(n))
                    .filter(|&e| e <= data.len())
                    .ok_or_else(|| damaged(&path, "a segment is cut"))?;
                if count == 0
                    || count > SEGMENT_STATES as u64
                    || list_bytes > shape.max_bytes(count)
                {
                    return Err(damaged(&path, "a segment's sizes are impossible"));
                }
                let list = zstd::bulk::decompress(
                    &data[at..end],
                    usize::try_from(list_bytes).unwrap_or(usize::MAX),
                )
                .map_err(|e| damaged(&path, &e.to_string()))?;
                let mut segment = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
                walk_region_states(&list, count, &shape, 0..shard.index_states(), |s| {
                    segment.push(s);
                })
                .map_err(|e| damaged(&path, &e.to_string()))?;
                f(&segment)?;
                seen += count;
                at = end;
            }
            if seen != states {
                return Err(damaged(
                    &path,
                    "it holds another number of states than the marker says",
                ));
            }
        }
        Ok(())
    }

    /// Removes every checkpoint of the shard (the job is done).
    pub fn remove_all(&self) {
        let _ = fs::remove_dir_all(&self.dir);
    }

    /// Removes table `table`'s checkpoints.
    pub fn remove_table(&self, table: u32) {
        let _ = fs::remove_dir_all(self.table_dir(table));
    }
}

/// Writes the shard's states of the layer `layer` in the sets `sets` as part `part` in `dir`:
/// its name, states, bytes and CRC-32.
fn write_part(
    shard: &Shard,
    dir: &Path,
    sets: &Range<u64>,
    layer: u32,
    part: usize,
    level: i32,
) -> Result<(String, u64, u64, u32)> {
    let name = format!("layer-{layer}.part-{part}");
    let path = dir.join(&name);
    let file = fs::File::create(&path).map_err(|e| io(&path, e))?;
    let mut out = BufWriter::new(file);
    let shape = list_shape(shard, layer);
    let all = 0..shard.index_states();
    let (mut states, mut bytes, mut crc) = (0u64, 0u64, crc32fast::Hasher::new());
    let mut segment: Vec<u64> = Vec::new();
    let mut error = None;
    let mut flush = |segment: &mut Vec<u64>, out: &mut BufWriter<fs::File>| -> Result<()> {
        if segment.is_empty() {
            return Ok(());
        }
        let list = encode_region_states(&shape, all.clone(), segment)?;
        let packed = zstd::bulk::compress(&list, level)
            .map_err(|e| Error::Checkpoint(format!("cannot compress a layer: {e}")))?;
        let mut head = Vec::with_capacity(24);
        for n in [segment.len() as u64, list.len() as u64, packed.len() as u64] {
            head.extend_from_slice(&n.to_le_bytes());
        }
        for piece in [&head[..], &packed[..]] {
            out.write_all(piece).map_err(|e| io(&path, e))?;
            crc.update(piece);
            bytes += piece.len() as u64;
        }
        states += segment.len() as u64;
        segment.clear();
        Ok(())
    };
    shard.for_each_state_of_layer(sets.clone(), layer, |s| {
        segment.push(s);
        if segment.len() >= SEGMENT_STATES && error.is_none() {
            if let Err(e) = flush(&mut segment, &mut out) {
                error = Some(e);
            }
            segment.clear();
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    flush(&mut segment, &mut out)?;
    let file = out.into_inner().map_err(|e| io(&path, e.into_error()))?;
    file.sync_all().map_err(|e| io(&path, e))?;
    Ok((name, states, bytes, crc.finalize()))
}
