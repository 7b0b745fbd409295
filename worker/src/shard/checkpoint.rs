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
use tilepdb_common::layer::BitPositions;
use tilepdb_common::shard::Shard;
use tilepdb_common::wire::region_lists::{RegionListEncoder, walk_region_states};
use tilepdb_common::wire::zstd_frames;

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

    /// The shard's directory (its checkpoints, and its prover's file of entries).
    pub fn dir(&self) -> &Path {
        &self.dir
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
                .map(|(i, sets)| write_part(shard, &dir, sets, layer, i, level, SEGMENT_STATES))
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
                let list = zstd_frames::decompress(
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
/// its name, states, bytes and CRC-32. The states are encoded a block at a time straight from
/// the shard's codes, cut into segments of `segment_states` states (the last one shorter).
fn write_part(
    shard: &Shard,
    dir: &Path,
    sets: &Range<u64>,
    layer: u32,
    part: usize,
    level: i32,
    segment_states: usize,
) -> Result<(String, u64, u64, u32)> {
    let name = format!("layer-{layer}.part-{part}");
    let path = dir.join(&name);
    let file = fs::File::create(&path).map_err(|e| io(&path, e))?;
    let mut segments = Segments {
        out: BufWriter::new(file),
        path: &path,
        level,
        states: 0,
        bytes: 0,
        crc: crc32fast::Hasher::new(),
    };
    let shape = list_shape(shard, layer);
    let all = 0..shard.index_states();
    let mut encoder = RegionListEncoder::with_buffer(&shape, all.clone(), SEGMENT_BYTES.take());
    let mut error = None;
    let mut orders = Vec::new();
    shard.for_each_block_bits_of_layer(sets.clone(), layer, |block, first, bits, count| {
        let room = (segment_states as u64).saturating_sub(encoder.count());
        if count <= room {
            encoder.push_block_bits(block, first, bits);
        } else {
            // The block's orders cut between this segment and the next ones.
            orders.clear();
            orders.extend(BitPositions::new(bits, first));
        }
        let mut rest = if count <= room { &[][..] } else { &orders[..] };
        loop {
            if encoder.count() == segment_states as u64 && error.is_none() {
                let next =
                    RegionListEncoder::with_buffer(&shape, all.clone(), SEGMENT_BYTES.take());
                let full = std::mem::replace(&mut encoder, next);
                if let Err(e) = segments.write(full) {
                    error = Some(e);
                }
            }
            if rest.is_empty() || error.is_some() {
                break;
            }
            let room = segment_states - usize::try_from(encoder.count()).expect("a segment");
            let (now, later) = rest.split_at(rest.len().min(room));
            encoder.push_block(block, now);
            rest = later;
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    segments.write(encoder)?;
    let file = segments
        .out
        .into_inner()
        .map_err(|e| io(&path, e.into_error()))?;
    file.sync_all().map_err(|e| io(&path, e))?;
    Ok((
        name,
        segments.states,
        segments.bytes,
        segments.crc.finalize(),
    ))
}

thread_local! {
    /// A checkpoint writer's segment bytes before compression, kept from segment to segment
    /// (the last one written gives its buffer to the next one's encoder).
    static SEGMENT_BYTES: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A part's file in the writing: its segments so far, their states, bytes and CRC-32.
struct Segments<'p> {
    out: BufWriter<fs::File>,
    path: &'p Path,
    level: i32,
    states: u64,
    bytes: u64,
    crc: crc32fast::Hasher,
}

impl Segments<'_> {
    /// Writes the states of `encoder` as a segment (nothing when it has none).
    fn write(&mut self, encoder: RegionListEncoder<'_>) -> Result<()> {
        let count = encoder.count();
        if count == 0 {
            return Ok(());
        }
        let list = encoder.finish()?;
        let packed = zstd_frames::compress(&list, self.level)
            .map_err(|e| Error::Checkpoint(format!("cannot compress a layer: {e}")))?;
        let mut head = Vec::with_capacity(24);
        for n in [count, list.len() as u64, packed.len() as u64] {
            head.extend_from_slice(&n.to_le_bytes());
        }
        for piece in [&head[..], &packed[..]] {
            self.out.write_all(piece).map_err(|e| io(self.path, e))?;
            self.crc.update(piece);
            self.bytes += piece.len() as u64;
        }
        self.states += count;
        SEGMENT_BYTES.set(list);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tilepdb_common::wire::region_lists::encode_region_states;

    use super::*;
    use crate::shard::searched::searched_shard;

    /// Shard `shard` of `shards` of the 3x4 puzzle's tiles {1, 2, 3}, zero-aware, its layers
    /// `0..depth` searched.
    fn shard_at(shard: u32, shards: u32, depth: u32) -> Shard {
        searched_shard("3x4", &[1, 2, 3], shard, shards, depth)
    }

    /// The bytes of a part as written before the states were encoded a block at a time: the
    /// states gathered, then encoded `segment` at a time.
    fn part_gathered(shard: &Shard, sets: Range<u64>, layer: u32, segment: usize) -> Vec<u8> {
        let mut states = Vec::new();
        shard.for_each_state_of_layer(sets, layer, |s| states.push(s));
        let shape = list_shape(shard, layer);
        let mut out = Vec::new();
        for chunk in states.chunks(segment) {
            let list = encode_region_states(&shape, 0..shard.index_states(), chunk).unwrap();
            let packed = zstd::bulk::compress(&list, 1).unwrap();
            for n in [chunk.len(), list.len(), packed.len()] {
                out.extend_from_slice(&(n as u64).to_le_bytes());
            }
            out.extend_from_slice(&packed);
        }
        out
    }

    #[test]
    fn a_part_is_the_gathered_states_encoded_segment_by_segment() {
        let dir = tempfile::tempdir().unwrap();
        let shard = shard_at(0, 1, 4);
        let sets = 0..shard.index().sets();
        let mut layer_states = 0;
        shard.for_each_state_of_layer(sets.clone(), 4, |_| layer_states += 1);
        assert!(layer_states > 40, "a layer of several segments");
        for segment in [1, 7, 40, SEGMENT_STATES] {
            let (name, states, bytes, crc) =
                write_part(&shard, dir.path(), &sets, 4, 0, 1, segment).unwrap();
            let written = fs::read(dir.path().join(&name)).unwrap();
            assert_eq!(written, part_gathered(&shard, sets.clone(), 4, segment));
            assert_eq!(states, layer_states);
            assert_eq!(bytes, written.len() as u64);
            assert_eq!(crc, crc32fast::hash(&written));
        }
    }

    #[test]
    fn a_layer_reads_back_as_written_and_a_damaged_part_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for (number, shards) in [(0, 1), (1, 2)] {
            let shard = shard_at(number, shards, 3);
            let sets = shard.index().sets();
            let ranges = [0..sets / 3, sets / 3..sets];
            let checkpoints = Checkpoints::new(root.path(), "job 1", number, shards);
            checkpoints
                .write_layer(&shard, &pool, &ranges, 0, 3, 1)
                .unwrap();
            let mut want = Vec::new();
            shard.for_each_state_of_layer(0..sets, 3, |s| want.push(s));
            assert!(!want.is_empty());
            let mut got = Vec::new();
            checkpoints
                .read_layer(&shard, 0, 3, |states| {
                    got.extend_from_slice(states);
                    Ok(())
                })
                .unwrap();
            assert_eq!(got, want);
            let part = ["layer-3.part-0", "layer-3.part-1"]
                .map(|name| checkpoints.table_dir(0).join(name))
                .into_iter()
                .find(|p| fs::metadata(p).unwrap().len() > 0)
                .unwrap();
            let mut bytes = fs::read(&part).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
            fs::write(&part, &bytes).unwrap();
            let read = checkpoints.read_layer(&shard, 0, 3, |_| Ok(()));
            assert!(matches!(read, Err(Error::Checkpoint(_))), "{read:?}");
        }
    }
}
