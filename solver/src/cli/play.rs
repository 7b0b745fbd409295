//! `tilepdb-solve play`: the puzzle in the terminal; arrow keys slide tiles, `h` asks for the
//! optimal next move and the distance left.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::fmt::Write;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};
use tilepdb_common::table::Load;
use tilepdb_common::{Board, Goal, PuzzleState};
use tilepdb_solver::generate::Generator;
use tilepdb_solver::heuristic::{Heuristic, LinearConflict, PdbHeuristic};
use tilepdb_solver::play::{Game, Slide};
use tilepdb_solver::search::Limits;

#[derive(Args)]
pub struct PlayArgs {
    /// The board: 8, 15, 24 or WxH (default: the tables' board, else 8).
    #[arg(long)]
    puzzle: Option<String>,
    /// The goal (default: the tables' goal, else blank-first).
    #[arg(long)]
    goal: Option<Goal>,
    /// A table set for the hints (without one, hints search with linear conflict: optimal,
    /// but slow beyond the 8-puzzle).
    #[arg(long)]
    tables: Option<PathBuf>,
    /// With --tables: also look up the reflected state.
    #[arg(long, requires = "tables")]
    reflect: bool,
    /// The start position (default: a random walk from the goal).
    #[arg(long, value_name = "TILES")]
    state: Option<String>,
    /// The length of the random walk that scrambles the start.
    #[arg(
        long,
        default_value_t = 30,
        value_name = "MOVES",
        value_parser = tilepdb_common::units::parse_walk
    )]
    walk: usize,
    /// The seed of the scramble (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Most nodes a hint's search may generate.
    #[arg(long, default_value_t = 200_000_000)]
    hint_nodes: u64,
}

pub fn run(args: PlayArgs) -> anyhow::Result<()> {
    // The game reads keys and redraws the screen: without a terminal on both ends the
    // terminal library fails with a bare system error (`No such device or address`).
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!(
            "play needs a terminal: its standard input and output must be one (run it in a \
             terminal window, not through a pipe, a file or a service)"
        );
    }
    let set = args
        .tables
        .as_deref()
        .map(|d| super::tables::open_set(d, Load::Map))
        .transpose()?;
    let asked: Option<Board> = args.puzzle.as_deref().map(str::parse).transpose()?;
    let (board, goal) = match &set {
        Some(set) => {
            if let Some(b) = asked.filter(|&b| b != set.board()) {
                bail!("the table set is for the {} board, not {b}", set.board());
            }
            if let Some(g) = args.goal.filter(|&g| g != set.goal()) {
                bail!("the table set is for the {} goal, not {g}", set.goal());
            }
            (set.board(), set.goal())
        }
        None => (asked.unwrap_or("8".parse()?), args.goal.unwrap_or_default()),
    };
    let start = if let Some(text) = &args.state {
        PuzzleState::parse(board, text).context("--state")?
    } else {
        let seed = args.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        });
        Generator::new(board, goal, seed).random_walk(args.walk)
    };
    let game = Game::new(start, goal)?;
    let limits = Limits {
        max_nodes: Some(args.hint_nodes),
        timeout: None,
    };
    match &set {
        Some(set) => {
            let h = PdbHeuristic::new(set, args.reflect)?;
            play(game, &h, &limits, "tables")
        }
        None => play(
            game,
            &LinearConflict::new(board, goal),
            &limits,
            "linear conflict",
        ),
    }
}

fn board_lines(game: &Game) -> Vec<String> {
    let state = game.state();
    let board = state.board();
    let width = if board.cells() > 10 { 2 } else { 1 };
    let rule = format!(
        "+{}",
        format!("{}+", "-".repeat(width + 2)).repeat(board.width())
    );
    let mut lines = vec![rule.clone()];
    for r in 0..board.height() {
        let mut line = String::from("|");
        for c in 0..board.width() {
            let t = state.tiles()[board.cell(r, c)];
            if t == 0 {
                write!(line, " {:>width$} |", "").expect("writing to a String");
            } else {
                write!(line, " {t:>width$} |").expect("writing to a String");
            }
        }
        lines.push(line);
        lines.push(rule.clone());
    }
    lines
}

fn play<H: Heuristic>(mut game: Game, h: &H, limits: &Limits, source: &str) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init().context("starting the terminal interface")?;
    let mut message = String::from("arrow keys slide a tile; h: hint; q: quit");
    let result = (|| -> anyhow::Result<()> {
        loop {
            let mut lines: Vec<Line> = board_lines(&game).into_iter().map(Line::from).collect();
            lines.push(Line::from(format!("moves: {}", game.moves())));
            lines.push(Line::from(format!("state: {}", game.state())));
            if game.is_solved() {
                lines.push(Line::from(format!(
                    "SOLVED in {} moves! (q: quit)",
                    game.moves()
                )));
            }
            lines.push(Line::from(message.clone()));
            let title = format!(
                " tilepdb play: {}, {} goal ",
                game.state().board(),
                game.goal()
            );
            terminal.draw(|frame| {
                frame.render_widget(
                    Paragraph::new(lines.clone()).block(Block::bordered().title(title.clone())),
                    frame.area(),
                );
            })?;
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            let slide = match key.code {
                KeyCode::Up => Some(Slide::Up),
                KeyCode::Down => Some(Slide::Down),
                KeyCode::Left => Some(Slide::Left),
                KeyCode::Right => Some(Slide::Right),
                KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                KeyCode::Char('h') => {
                    message = match game.hint_within(h, limits)? {
                        Some(hint) => format!(
                            "hint: slide tile {} {} - {} moves left (optimal, {source})",
                            hint.tile,
                            hint.slide.name(),
                            hint.distance
                        ),
                        None if game.is_solved() => "already solved".into(),
                        None => format!("no hint within {} nodes", limits.max_nodes.unwrap_or(0)),
                    };
                    None
                }
                _ => None,
            };
            if let Some(slide) = slide {
                message = if game.slide(slide) {
                    format!("slid {}", slide.name())
                } else {
                    format!("no tile can slide {}", slide.name())
                };
            }
        }
    })();
    ratatui::restore();
    result
}
