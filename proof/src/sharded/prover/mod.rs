//! [`ShardProver`]: the layer search of one proof shard, its lists exchanged with the other
//! provers of its team, and its entries compared with the states it met.
//!
//! A zero-aware table's entries are compared in the shard's entry order once a layer is
//! complete ([`ShardProver::finish_layer`]): the new layer's states, in the blocks it
//! reached, against its depth's code, the entries given back a part at a time
//! ([`ShardEntries`], which may keep them in a file); the states never met likewise at the
//! end. A minimized table's entry is compared when its placement is first met, its entries
//! in memory.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::sort::radix_sort;
use tilepdb_common::table::{Encoding, UNREACHED};
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use super::entries::{ENTRIES_PART_BYTES, ShardEntries};
use crate::error::Result;
use crate::walks::{BlockMove, check_regions, fail, for_each_block_move};
use checks::first_wrong;

mod checks;

/// The bytes a prover holds in memory, and on disk (its file of entries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProverBytes {
    /// Its arrays in memory: the two-bit codes, the met placements, the blocks' flags and its
    /// entries (all of them, or one part of their file).
    pub memory: u64,
    /// Its file of entries (0 when they are in memory).
    pub disk: u64,
}

impl ProverBytes {
    /// The larger of each figure of `self` and `other`.
    pub fn max(self, other: ProverBytes) -> ProverBytes {
        ProverBytes {
            memory: self.memory.max(other.memory),
            disk: self.disk.max(other.disk),
        }
    }
}

/// What one proof shard counted once its search is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardTally {
    /// The shard's entries per distance, from the goal's 0 (trailing zeros kept as met).
    pub histogram: Vec<u64>,
    /// The shard's entries the search never met (each checked to store the unreached code).
    pub unreached: u64,
}

/// States and entries met by one call of [`ShardProver`] (counted once per call: threads
/// expanding at once would otherwise share a counter's cache line per state).
#[derive(Clone, Copy, Default)]
struct Met {
    states: u64,
    entries: u64,
}

/// The layer search of shard `shard` of a `layout` of a table's index, proving the file's
/// entries of that shard (see the module's documentation). Driven layer by layer:
/// [`ShardProver::expand`] (the layer's successors of other shards handed on in lists),
/// [`ShardProver::merge`] of every list the other provers sent for the layer,
/// [`ShardProver::finish_layer`]; once no prover of the team met a state in a layer,
/// [`ShardProver::finish`]. Lists may be merged while the shard expands (the layer being
/// expanded and the one being met keep different codes, as in the build): `expand` and `merge`
/// take the prover shared, `finish_layer` alone.
pub struct ShardProver {
    space: StateSpace,
    index: Arc<RegionIndex>,
    moves: Arc<OrderMoves>,
    layout: ShardLayout,
    shard: u32,
    own: Range<u64>,
    /// The orders the shard owns in each block.
    width: u64,
    /// The orders of a block (k!).
    f: u64,
    /// The shard of each order.
    owners: Vec<u32>,
    encoding: Encoding,
    minimized: bool,
    entries: ShardEntries,
    /// Two bits per state of the shard, by `block * width + order - first`.
    codes: StateCodes,
    /// A minimized table's placements of the shard already met (a bit each).
    placed: Vec<AtomicU64>,
    /// The blocks with states of the layer being expanded, and of the next one.
    active: Vec<AtomicBool>,
    next: Vec<AtomicBool>,
    /// The layer being expanded.
    depth: u32,
    /// States of the shard met at `depth + 1` so far.
    added: AtomicU64,
    /// The shard's entries met per distance.
    histogram: Vec<AtomicU64>,
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks, orders and placements index arrays held in memory, so they fit in usize"
)]
impl ShardProver {
    /// The prover of shard `shard` of `layout` of the table of `space` on `index`, in
    /// `encoding`, whose file entries of the shard are `entries`; the goal met if the shard
    /// owns it (and its entry checked). Proves zero-aware tables in `1-bit`, `mod3` and
    /// bytes, and minimized tables in bytes; an error for the others.
    pub fn new(
        space: &StateSpace,
        index: Arc<RegionIndex>,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        entries: ShardEntries,
    ) -> Result<ShardProver> {
        if !super::proven_on_shards(space, encoding) {
            return Err(fail(
                space,
                format!(
                    "a {} table in {encoding} is not proven on the shards",
                    space.rule()
                ),
            ));
        }
        let f = index.orders();
        if shard >= layout.shards() || layout.orders_of(layout.shards() - 1).end != f {
            return Err(fail(
                space,
                format!(
                    "proof shard {shard} of {} does not fit the index's {f} orders",
                    layout.shards()
                ),
            ));
        }
        check_regions(space, &index)?;
        let own = layout.orders_of(shard);
        let width = own.end - own.start;
        let minimized = space.rule() == BlankRule::Minimized;
        let blocks = index.region_count();
        let want = if minimized { index.sets() } else { blocks } * width;
        if entries.count() != want {
            return Err(fail(
                space,
                format!(
                    "proof shard {shard} was given {} entries, not its {want}",
                    entries.count()
                ),
            ));
        }
        let placed = if minimized {
            (0..words(index.sets() * width)?)
                .map(|_| AtomicU64::new(0))
                .collect()
        } else {
            Vec::new()
        };
        let flags = || -> Result<Vec<AtomicBool>> {
            Ok((0..len(blocks)?).map(|_| AtomicBool::new(false)).collect())
        };
        let mut prover = ShardProver {
            space: space.clone(),
            moves: Arc::new(OrderMoves::new(index.k())),
            layout,
            shard,
            width,
            f,
            owners: (0..f).map(|o| layout.owner(o)).collect(),
            encoding,
            minimized,
            entries,
            codes: StateCodes::new(blocks * width),
            placed,
            active: flags()?,
            next: flags()?,
            depth: 0,
            added: AtomicU64::new(0),
            histogram: (0..UNREACHED).map(|_| AtomicU64::new(0)).collect(),
            own,
            index,
        };
        let goal = prover.goal_state();
        if prover.owns(goal) {
            let (block, set) = prover.index.block_and_set(goal);
            let mut met = Met::default();
            prover.meet(block, set, goal % f, 0, &mut met)?;
            prover.count(0, met);
            prover.check_layer(0)?;
            std::mem::swap(&mut prover.active, &mut prover.next);
            prover.added.store(0, Relaxed);
        }
        Ok(prover)
    }

    /// The shard this prover proves.
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// The layer the next [`ShardProver::expand`] expands.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Bytes the prover holds: in memory its two-bit codes, met placements, blocks' flags
    /// and entries (all, or a part of their file), on disk its entries' file
    /// ([`prover_bytes`] before it is made).
    pub fn bytes(&self) -> ProverBytes {
        ProverBytes {
            memory: self.codes.bytes()
                + self.placed.len() as u64 * 8
                + self.entries.bytes()
                + (self.active.len() + self.next.len()) as u64
                    * std::mem::size_of::<AtomicBool>() as u64,
            disk: self.entries.disk_bytes(),
        }
    }

    /// The sets of the table's index: [`ShardProver::expand`] expands a range of them.
    pub fn sets(&self) -> u64 {
        self.index.sets()
    }

    /// Expands the shard's states of the current layer in the sets `sets`: every successor
    /// the shard owns is met at once (its entry checked), each other one is handed to `send`
    /// with its owner, in lists of at most `list_states` states (at least one), each sorted
    /// and without repeats. Stops at the first wrong entry or failed send. Ranges of sets
    /// may be expanded at once on several threads.
    pub fn expand(
        &self,
        sets: Range<u64>,
        list_states: usize,
        send: &mut dyn FnMut(u32, Vec<u64>) -> Result<()>,
    ) -> Result<()> {
        let mut met = Met::default();
        let list_states = list_states.max(1);
        let out = Outgoing {
            lists: (0..self.layout.shards())
                .map(|p| Vec::with_capacity(if p == self.shard { 0 } else { list_states }))
                .collect(),
            scratch: Vec::new(),
            list_states,
            send,
        };
        let expanded = self.expand_counted(sets, out, &mut met);
        self.count(self.depth + 1, met);
        expanded
    }

    /// [`ShardProver::expand`], the states and entries it met counted in `met`.
    fn expand_counted(&self, sets: Range<u64>, mut out: Outgoing<'_>, met: &mut Met) -> Result<()> {
        let here = StateCodes::code_of_depth(self.depth);
        let mut current: Vec<u64> = Vec::with_capacity(usize::try_from(self.width).unwrap_or(0));
        let index = Arc::clone(&self.index);
        for c in sets {
            let first = index.first_block(c);
            for (r, &region) in index.regions_of(c).iter().enumerate() {
                let block = first + r as u64;
                if !self.active[block as usize].load(Relaxed) {
                    continue;
                }
                current.clear();
                let base = block * self.width;
                self.codes
                    .for_each_with_code(base..base + self.width, here, |l| {
                        current.push(self.own.start + l - base);
                    });
                if current.is_empty() {
                    continue;
                }
                for_each_block_move(&self.space, &index, c, region, |m| {
                    self.expand_move(&m, &current, &mut out, met)
                })?;
            }
        }
        for to in 0..out.lists.len() {
            if !out.lists[to].is_empty() {
                out.send_list(to)?;
            }
        }
        Ok(())
    }

    /// The successors of the `orders` of a block by one move `m`: those the shard owns met,
    /// the others added to their owners' lists.
    #[inline]
    fn expand_move(
        &self,
        m: &BlockMove,
        orders: &[u64],
        out: &mut Outgoing<'_>,
        met: &mut Met,
    ) -> Result<()> {
        let moves = &*self.moves;
        let row = moves.row(m.pa, m.pb);
        let (depth, first) = (self.depth + 1, m.block * self.width);
        let code = StateCodes::code_of_depth(depth);
        let mut gained = false;
        for &o in orders {
            let moved = match row {
                Some(row) => u64::from(row[o as usize]),
                None => moves.moved(m.pa, m.pb, o),
            };
            // The shard's orders are one run (the order cut).
            let at = moved.wrapping_sub(self.own.start);
            if at < self.width {
                if self.mark(first + at, code) {
                    gained = true;
                    met.states += 1;
                    self.met_entry(m.set, moved, depth, met)?;
                }
            } else {
                let owner = self.owners[moved as usize] as usize;
                out.lists[owner].push(m.block * self.f + moved);
                if out.lists[owner].len() >= out.list_states {
                    out.send_list(owner)?;
                }
            }
        }
        if gained {
            self.raise(m.block);
        }
        Ok(())
    }

    /// Meets the states of `list` (from another prover of the team, successors of its
    /// current layer) at the next layer where they are unseen, each entry checked. An error
    /// if the list is not strictly increasing or names a state the shard does not own (the
    /// list is then refused before anything is met).
    pub fn merge(&self, list: &[u64]) -> Result<()> {
        let states = self.index.states();
        if let Some(&[a, b]) = list.windows(2).find(|w| w[0] >= w[1]) {
            return Err(fail(
                &self.space,
                format!(
                    "proof shard {}: a received list is not increasing ({} then {})",
                    self.shard, a, b
                ),
            ));
        }
        if let Some(&s) = list.iter().find(|&&s| s >= states || !self.owns(s)) {
            return Err(fail(
                &self.space,
                format!(
                    "proof shard {}: a received list names state {s}, which it does not own",
                    self.shard
                ),
            ));
        }
        let mut met = Met::default();
        let merged = list.iter().try_for_each(|&s| {
            let (block, set) = if self.minimized {
                self.index.block_and_set(s)
            } else {
                (s / self.f, 0)
            };
            self.meet(block, set, s % self.f, self.depth + 1, &mut met)
        });
        self.count(self.depth + 1, met);
        merged
    }

    /// Ends the current layer once every list of it is merged: its states are done, the new
    /// layer's entries are compared (a zero-aware table's, in the shard's order), and the new
    /// layer becomes current. The shard's states met in the new layer (the team's search is
    /// over when no prover met any). An error past the deepest layer a table holds, or at the
    /// first wrong entry.
    pub fn finish_layer(&mut self) -> Result<u64> {
        if self.depth + 1 >= u32::from(UNREACHED) - 1 {
            return Err(fail(
                &self.space,
                format!("the layers go on past depth {}", self.depth + 1),
            ));
        }
        let here = StateCodes::code_of_depth(self.depth);
        for (block, active) in self.active.iter_mut().enumerate() {
            if *active.get_mut() {
                let base = block as u64 * self.width;
                self.codes.retire(base..base + self.width, here);
                *active.get_mut() = false;
            }
        }
        self.check_layer(self.depth + 1)?;
        std::mem::swap(&mut self.active, &mut self.next);
        self.depth += 1;
        Ok(std::mem::take(self.added.get_mut()))
    }

    /// The search is over: every entry never met must store the unreached code (0 in
    /// `1-bit` and `mod3`, [`UNREACHED`] in bytes), compared in the shard's order. The
    /// shard's entries per distance.
    pub fn finish(mut self) -> Result<ShardTally> {
        let unmet = if self.encoding == Encoding::Byte {
            UNREACHED
        } else {
            0
        };
        let count = self.entries.count();
        let wrong = if self.minimized {
            let placed = &self.placed;
            let met = |e: u64| placed[(e / 64) as usize].load(Relaxed) & (1 << (e % 64)) != 0;
            let mut wrong = None;
            for e in (0..count).filter(|&e| !met(e)) {
                let stored = self.stored(e)?;
                if stored != unmet {
                    wrong = Some((e, stored));
                    break;
                }
            }
            wrong
        } else {
            let codes = &self.codes;
            self.entries.first_in_parts(
                |_| true,
                |entries, part| first_wrong(codes, entries.clone(), 0, unmet, part, entries.start),
            )?
        };
        if let Some((e, stored)) = wrong {
            return Err(fail(
                &self.space,
                format!(
                    "entry {} is unreachable but stores {stored}, not {unmet} (proof shard {})",
                    self.file_entry(e),
                    self.shard
                ),
            ));
        }
        let mut histogram: Vec<u64> = self.histogram.iter().map(|n| n.load(Relaxed)).collect();
        while histogram.len() > 1 && histogram.last() == Some(&0) {
            histogram.pop();
        }
        let met: u64 = histogram.iter().sum();
        Ok(ShardTally {
            histogram,
            unreached: count - met,
        })
    }

    /// Meets the state of `order` in `block` (of set `set`, needed for a minimized table) at
    /// `depth` if it is unseen: marked, its block raised for the next layer, and counted in
    /// `met`, its entry checked as [`ShardProver::met_entry`] says.
    fn meet(&self, block: u64, set: u64, order: u64, depth: u32, met: &mut Met) -> Result<()> {
        let local = block * self.width + order - self.own.start;
        if !self.mark(local, StateCodes::code_of_depth(depth)) {
            return Ok(());
        }
        met.states += 1;
        self.raise(block);
        self.met_entry(set, order, depth, met)
    }

    /// Marks the shard's state `local` with `code` if it is unseen; whether it was.
    #[inline(always)]
    fn mark(&self, local: u64, code: u8) -> bool {
        self.codes.get(local) == 0 && self.codes.try_mark(local, code)
    }

    /// Raises `block` for the next layer (written only when not raised yet: threads meeting
    /// states of one block do not take its flag's cache line from each other).
    #[inline(always)]
    fn raise(&self, block: u64) {
        let next = &self.next[block as usize];
        if !next.load(Relaxed) {
            next.store(true, Relaxed);
        }
    }

    /// Adds the states and entries of `met`, met at `depth`, to the prover's counts.
    fn count(&self, depth: u32, met: Met) {
        self.added.fetch_add(met.states, Relaxed);
        self.histogram[depth as usize].fetch_add(met.entries, Relaxed);
    }

    /// Whether the shard owns `state`.
    fn owns(&self, state: u64) -> bool {
        self.own.contains(&(state % self.f))
    }

    /// The goal's state on the index.
    fn goal_state(&self) -> u64 {
        let space = &self.space;
        let blank = space.goal().cell_of(0, space.board().cells());
        self.index.state_index(space.goal_cells(), blank)
    }
}

/// The bytes a prover of shard `shard` of `layout` of the table of `space` (in `encoding`) on
/// `index` holds ([`ShardProver::bytes`]), worked out before it is made, its zero-aware
/// entries in a file if `entries_in_file` (a part of them in memory), else in memory (a
/// minimized table's always are); an error for a table not proven on the shards.
pub fn prover_bytes(
    space: &StateSpace,
    index: &RegionIndex,
    layout: ShardLayout,
    shard: u32,
    encoding: Encoding,
    entries_in_file: bool,
) -> Result<ProverBytes> {
    let own = layout.orders_of(shard);
    let width = own.end - own.start;
    let blocks = index.region_count();
    let minimized = space.rule() == BlankRule::Minimized;
    let (placed, entries) = if minimized {
        let placements = index.sets() * width;
        (placements.div_ceil(64) * 8, placements)
    } else {
        (0, blocks * width)
    };
    let bits = u64::from(super::entries::code_bits(space, encoding)?);
    let packed = (entries * bits).div_ceil(8);
    let (in_memory, disk) = if entries_in_file && !minimized {
        (packed.min(ENTRIES_PART_BYTES as u64), packed)
    } else {
        (packed, 0)
    };
    Ok(ProverBytes {
        memory: StateCodes::file_bytes(blocks * width) + placed + in_memory + 2 * blocks,
        disk,
    })
}

/// The successors of one [`ShardProver::expand`] gathered per owner (`lists[owner]`), each
/// list handed to `send` once it holds `list_states`.
struct Outgoing<'a> {
    lists: Vec<Vec<u64>>,
    /// The second buffer of the lists' sorts.
    scratch: Vec<u64>,
    list_states: usize,
    send: &'a mut dyn FnMut(u32, Vec<u64>) -> Result<()>,
}

impl Outgoing<'_> {
    /// Hands the list of shard `to` on, sorted and without repeats, and empties it.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a shard number is below the team's shards, a u32"
    )]
    fn send_list(&mut self, to: usize) -> Result<()> {
        let mut list = std::mem::replace(&mut self.lists[to], Vec::with_capacity(self.list_states));
        radix_sort(&mut list, &mut self.scratch);
        list.dedup();
        (self.send)(to as u32, list)
    }
}

fn len(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| {
        crate::Error::Domain(tilepdb_common::Error::Shard(
            "a proof shard does not fit in memory".into(),
        ))
    })
}

fn words(bits: u64) -> Result<usize> {
    len(bits.div_ceil(64))
}
