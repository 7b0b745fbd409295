//! `tilepdb-solve play` as a person plays it, in a real terminal (tmux): a slide, hints that
//! are optimal (checked against IDA*), and the solved message after following them. Skipped,
//! with the reason printed, where tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

use tilepdb_common::{Board, Goal, PuzzleState};
use tilepdb_solver::heuristic::Manhattan;
use tilepdb_solver::search::{Limits, ida_star};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "play"])
    }

    /// Waits until the screen satisfies `done` (a few seconds at most), and returns it.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn state_line(screen: &str) -> Option<String> {
    screen.lines().find_map(|l| {
        let i = l.find("state: ")?;
        Some(
            l[i + 7..]
                .trim_end_matches(|c: char| c == '│' || c.is_whitespace())
                .to_string(),
        )
    })
}

/// `(tile, direction, distance)` from "hint: slide tile T DIR - N moves left".
fn hint_line(screen: &str) -> Option<(u8, String, usize)> {
    screen.lines().find_map(|l| {
        let rest = &l[l.find("hint: slide tile ")? + "hint: slide tile ".len()..];
        let words: Vec<&str> = rest.split_whitespace().collect();
        Some((
            words[0].parse().ok()?,
            words[1].to_string(),
            words[3].parse().ok()?,
        ))
    })
}

fn optimal(board: Board, tiles: &str) -> usize {
    let state = PuzzleState::parse(board, tiles).unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    ida_star(&state, Goal::BlankFirst, &h, &Limits::default())
        .unwrap()
        .length()
        .unwrap()
}

#[test]
fn play_a_game_under_tmux() {
    if Command::new("tmux").arg("-V").output().is_err() {
        crate::skip::skipped(
            "play_a_game_under_tmux",
            "tmux is not installed (apt-get install tmux)",
        );
        return;
    }
    let board: Board = "3x3".parse().unwrap();
    // The blank in the bottom-right corner.
    let start = "8 7 6 5 4 3 2 1 0";
    let tmux = Tmux {
        socket: format!("tilepdb-play-test-{}", std::process::id()),
    };
    let command = format!(
        "{} play --puzzle 8 --state '{start}'",
        env!("CARGO_BIN_EXE_tilepdb-solve")
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "play",
        "-x",
        "90",
        "-y",
        "30",
        &command,
    ]);
    let screen = tmux.wait_for("the board", |s| state_line(s).is_some());
    assert_eq!(state_line(&screen).unwrap(), start, "{screen}");

    // Left: no tile is right of the blank; nothing moves.
    tmux.run(&["send-keys", "-t", "play", "Left"]);
    let screen = tmux.wait_for("the refusal", |s| s.contains("no tile can slide left"));
    assert!(screen.contains("moves: 0"), "{screen}");
    assert_eq!(state_line(&screen).unwrap(), start, "{screen}");
    // Right: tile 1, left of the blank, slides onto the blank's cell 8.
    tmux.run(&["send-keys", "-t", "play", "Right"]);
    let screen = tmux.wait_for("the move", |s| s.contains("moves: 1"));
    let mut current = state_line(&screen).unwrap();
    assert_eq!(current, "8 7 6 5 4 3 2 0 1", "{screen}");
    let expected_hints = optimal(board, &current);

    // Follow the hints to the goal, checking each against IDA*.
    let mut hints = 0;
    loop {
        tmux.run(&["send-keys", "-t", "play", "h"]);
        let screen = tmux.wait_for("a hint", |s| hint_line(s).is_some());
        let (tile, direction, distance) = hint_line(&screen).unwrap();
        assert_eq!(distance, optimal(board, &current), "{screen}");
        let mut tiles: Vec<u8> = current.split(' ').map(|t| t.parse().unwrap()).collect();
        let blank = tiles.iter().position(|&t| t == 0).unwrap();
        let cell = tiles.iter().position(|&t| t == tile).unwrap();
        assert_eq!(
            board.distance(blank, cell),
            1,
            "tile {tile} is not next to the blank"
        );
        tiles.swap(blank, cell);
        let next: Vec<String> = tiles.iter().map(std::string::ToString::to_string).collect();
        let next = next.join(" ");
        assert_eq!(
            optimal(board, &next),
            distance - 1,
            "the hint is not on an optimal path"
        );
        let key = match direction.as_str() {
            "up" => "Up",
            "down" => "Down",
            "left" => "Left",
            "right" => "Right",
            other => panic!("direction {other}"),
        };
        tmux.run(&["send-keys", "-t", "play", key]);
        let screen = tmux.wait_for("the hinted move", |s| {
            state_line(s).as_deref() == Some(next.as_str())
        });
        current = next;
        hints += 1;
        if distance == 1 {
            assert!(
                screen.contains(&format!("SOLVED in {} moves", 1 + hints)),
                "{screen}"
            );
            break;
        }
        assert!(!screen.contains("SOLVED"), "{screen}");
    }
    assert_eq!(hints, expected_hints);
    tmux.run(&["send-keys", "-t", "play", "q"]);
}
