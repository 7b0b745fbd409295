//! The tests' harness: where provers keep their entries, a team's proof run in one process,
//! and the tables the tests prove.

use super::*;

/// Where the tests' provers keep their entries: in memory, or in files of a directory in
/// parts of a few bytes.
#[derive(Clone, Copy)]
pub(super) enum Keep<'a> {
    Memory,
    Files(&'a Path, usize),
}

impl Keep<'_> {
    /// The entries of shard `shard` of `layout`, kept here.
    pub(super) fn entries(
        self,
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        payload: &[u8],
    ) -> crate::Result<ShardEntries> {
        let path = self.path(shard);
        let place = match (self, &path) {
            (Keep::Files(_, part_bytes), Some(path)) => EntriesPlace {
                file: Some(path),
                part_bytes,
            },
            _ => EntriesPlace::memory(),
        };
        ShardEntries::from_payload(space, index, layout, shard, encoding, place, payload)
    }

    pub(super) fn path(self, shard: u32) -> Option<PathBuf> {
        match self {
            Keep::Memory => None,
            Keep::Files(dir, _) => Some(dir.join(format!("shard-{shard}.entries"))),
        }
    }
}

/// Runs the provers of every shard of `layout` on `table`, their entries kept by `keep`, each
/// layer's lists handed over in memory, except the lists from shard `from` to shard `to`
/// where `withhold(from, to)`; the team's entries per distance, checked against the header.
pub(super) fn prove_team(
    space: &StateSpace,
    payload: &[u8],
    header: &Header,
    encoding: Encoding,
    (layout, keep): (ShardLayout, Keep<'_>),
    withhold: &(dyn Fn(u32, u32) -> bool + Sync),
) -> crate::Result<crate::layers::Layers> {
    let index = Arc::new(space.region_index()?);
    let mut provers = (0..layout.shards())
        .map(|j| {
            let entries = keep.entries(space, &index, layout, j, encoding, payload)?;
            ShardProver::new(space, Arc::clone(&index), layout, j, encoding, entries)
        })
        .collect::<crate::Result<Vec<_>>>()?;
    loop {
        let inbox: Mutex<Vec<Vec<Vec<u64>>>> = Mutex::new(vec![Vec::new(); provers.len()]);
        // Each prover's sets expanded in two halves on two threads, as a worker's threads do.
        for prover in &provers {
            let from = prover.shard();
            let sets = prover.sets();
            std::thread::scope(|scope| -> crate::Result<()> {
                let halves = [0..sets / 2, sets / 2..sets].map(|half| {
                    let inbox = &inbox;
                    scope.spawn(move || {
                        // Lists of 64 states: many lists a layer, each flushed mid-range.
                        prover.expand(half, 64, &mut |to, list| {
                            assert_ne!(to, from, "a prover sends its own successors away");
                            assert!(list.windows(2).all(|w| w[0] < w[1]), "a list unsorted");
                            if !withhold(from, to) {
                                inbox.lock().unwrap()[to as usize].push(list);
                            }
                            Ok(())
                        })
                    })
                });
                for half in halves {
                    half.join().expect("an expanding thread")?;
                }
                Ok(())
            })?;
        }
        let inbox = inbox.into_inner().unwrap();
        for (prover, lists) in provers.iter_mut().zip(&inbox) {
            for list in lists {
                prover.merge(list)?;
            }
        }
        let mut added = 0;
        for prover in &mut provers {
            added += prover.finish_layer()?;
        }
        if added == 0 {
            break;
        }
    }
    let tallies = provers
        .into_iter()
        .map(ShardProver::finish)
        .collect::<crate::Result<Vec<_>>>()?;
    team_layers(space, &tallies, &header.histogram, header.unreached)
}

pub(super) fn honest(_: u32, _: u32) -> bool {
    false
}

/// The 8- and 15-puzzle patterns of the tests, with their rules and encodings.
pub(super) fn cases() -> Vec<(StateSpace, Vec<u8>, Encoding)> {
    let fifteen = Partition::named("15:5-5-5").unwrap();
    let mut spaces = vec![];
    for rule in [BlankRule::ZeroAware, BlankRule::Minimized] {
        for (board, tiles) in [
            ("3x3", &[1u8, 2, 3, 4][..]),
            ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]),
        ] {
            spaces.push(built(board, tiles, Goal::BlankFirst, rule));
        }
        let tiles = fifteen.patterns()[0].tiles().to_vec();
        spaces.push(built("4x4", &tiles, Goal::BlankFirst, rule));
    }
    let mut all = vec![];
    for (space, values) in spaces {
        let encodings: &[Encoding] = if space.rule() == BlankRule::ZeroAware {
            &[Encoding::OneBit, Encoding::Mod3, Encoding::Byte]
        } else {
            &[Encoding::Byte]
        };
        for &encoding in encodings {
            all.push((space.clone(), values.clone(), encoding));
        }
    }
    all
}

pub(super) fn what(space: &StateSpace, encoding: Encoding, shards: u32) -> String {
    format!(
        "{} {} {} {encoding}, {shards} proof shards",
        space.board(),
        space.rule(),
        space.pattern()
    )
}

/// Bytes of a part of the entries in the tests' files: a few parts per shard.
pub(super) const SMALL_PART: usize = 64;
