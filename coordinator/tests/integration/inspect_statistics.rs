//! `tilepdb-coordinator inspect DIR`'s statistics and `--plot`, through the real program on
//! 3x3 sets it builds: the mean value equals the mean of every decoded entry, the mean
//! heuristics over random states equal the solver's own heuristics on the states the seed
//! gives (and dominate Manhattan there), the plot is well-formed SVG with one series per table
//! (or a PNG of the stated size, not blank), and bad requests are refused with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tilepdb_common::PuzzleState;
use tilepdb_common::generate::Generator;
use tilepdb_common::table::{TableSet, UNREACHED};
use tilepdb_solver::heuristic::{Heuristic, Manhattan, PdbHeuristic};

fn coordinator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn refused(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected a refusal, got success");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
}

/// Builds the 8-puzzle 4-4 partition with `blank` and `encoding` under `out`; its directory.
fn build(out: &Path, blank: &str, encoding: &str) -> PathBuf {
    ok(coordinator(&[
        "build",
        "--partition",
        "8:4-4",
        "--blank",
        blank,
        "--encoding",
        encoding,
        "--out",
        out.to_str().unwrap(),
    ]));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

fn inspect_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["inspect", "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(coordinator(&all))).unwrap()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    sum / n as f64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The statistics of one set, checked against independent computations.
fn statistics_agree(dir: &Path) {
    let d = dir.to_str().unwrap();
    let (count, seed) = (400usize, 5u64);
    let json = inspect_json(&[d, "--random-states", "400", "--seed", "5"]);
    let set = TableSet::open(dir).unwrap();

    // The mean value: every entry of every table decoded, unreached ones left out.
    let by_entries: f64 = set
        .tables()
        .iter()
        .map(|t| {
            let values = t.decode_all().unwrap();
            mean(
                values
                    .into_iter()
                    .filter(|&v| v != UNREACHED)
                    .map(f64::from),
            )
        })
        .sum();
    let mean_value = json["mean_value"].as_f64().unwrap();
    assert!(
        close(mean_value, by_entries),
        "{mean_value} != {by_entries}"
    );

    // The mean heuristics: the solver's incremental heuristics on the seed's states.
    let board = set.board();
    let mut generator = Generator::new(board, set.goal(), seed);
    let states: Vec<PuzzleState> = (0..count).map(|_| generator.random_state()).collect();
    let plain = PdbHeuristic::new(&set, false).unwrap();
    let reflected = PdbHeuristic::new(&set, true).unwrap();
    let manhattan = Manhattan::new(board, set.goal());
    let value = |h: &dyn Fn(&[u8]) -> u32| -> Vec<f64> {
        states.iter().map(|s| f64::from(h(&s.cells()))).collect()
    };
    let h = value(&|c| plain.evaluate(c).unwrap().0);
    let r = value(&|c| reflected.evaluate(c).unwrap().0);
    let m = value(&|c| manhattan.evaluate(c).unwrap().0);
    for i in 0..count {
        assert!(h[i] >= m[i] && r[i] >= h[i], "{}", states[i]);
    }
    assert!(
        h.iter().zip(&m).any(|(h, m)| h > m),
        "the tables never beat Manhattan: a weak test"
    );
    assert_eq!(json["random_states"].as_u64(), Some(count as u64));
    assert_eq!(json["seed"].as_u64(), Some(seed));
    for (key, expected) in [
        ("mean_heuristic", &h),
        ("mean_heuristic_reflected", &r),
        ("mean_manhattan", &m),
    ] {
        let got = json[key].as_f64().unwrap();
        let want = mean(expected.iter().copied());
        assert!(close(got, want), "{key}: {got} != {want}");
    }

    // The same seed gives the same figures, another seed others.
    let again = inspect_json(&[d, "--random-states", "400", "--seed", "5"]);
    assert_eq!(again, json);
    let other = inspect_json(&[d, "--random-states", "400", "--seed", "6"]);
    assert_ne!(other["mean_heuristic"], json["mean_heuristic"]);
    assert_eq!(other["mean_value"], json["mean_value"]);

    // No states: no means over them, the mean value still.
    let none = inspect_json(&[d, "--random-states", "0"]);
    assert!(none["mean_heuristic"].is_null() && none["mean_manhattan"].is_null());
    assert_eq!(none["mean_value"], json["mean_value"]);

    let text = ok(coordinator(&[
        "inspect",
        d,
        "--random-states",
        "400",
        "--seed",
        "5",
    ]));
    assert!(text.contains("mean value"), "{text}");
    assert!(
        text.contains("400 solvable states (seed 5)") && text.contains("with reflection"),
        "{text}"
    );
}

#[test]
fn a_sets_statistics_agree_with_independent_computations() {
    let work = tempfile::tempdir().unwrap();
    statistics_agree(&build(&work.path().join("byte"), "minimized", "byte"));
    // Aware and mod3: values by descent to the goal.
    statistics_agree(&build(&work.path().join("mod3"), "aware", "mod3"));
}

fn svg_bars(path: &Path) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let mut colours: Vec<String> = root
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.children().any(|c| c.has_tag_name("title")))
        .map(|n| n.attribute("fill").unwrap().to_string())
        .collect();
    colours.sort();
    colours.dedup();
    let texts = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    (colours, texts)
}

#[test]
fn the_plot_has_one_series_per_table() {
    let work = tempfile::tempdir().unwrap();
    let dir = build(&work.path().join("t"), "minimized", "byte");
    let set = TableSet::open(&dir).unwrap();
    let svg = work.path().join("values.svg");
    let text = ok(coordinator(&[
        "inspect",
        dir.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]));
    assert!(text.contains("values.svg"), "{text}");
    let (colours, texts) = svg_bars(&svg);
    assert_eq!(colours.len(), set.tables().len(), "{colours:?}");
    for t in set.tables() {
        let name = t.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(texts.contains(&name), "{name} not in the legend {texts:?}");
    }

    // One table file: one series; --json keeps stdout JSON.
    let one = work.path().join("one.svg");
    let table = set.tables()[0].path().to_str().unwrap().to_string();
    let out = ok(coordinator(&[
        "inspect",
        &table,
        "--json",
        "--plot",
        one.to_str().unwrap(),
    ]));
    serde_json::from_str::<serde_json::Value>(&out).unwrap();
    assert_eq!(svg_bars(&one).0.len(), 1);
}

#[test]
fn bad_plot_and_statistics_requests_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = build(&work.path().join("t"), "minimized", "byte");
    let d = dir.to_str().unwrap();
    let jpg = work.path().join("x.jpg");
    refused(
        &coordinator(&["inspect", d, "--plot", jpg.to_str().unwrap()]),
        ".svg or .png",
    );
    assert!(!jpg.exists());
    let table = TableSet::open(&dir).unwrap().tables()[0]
        .path()
        .to_str()
        .unwrap()
        .to_string();
    refused(
        &coordinator(&["inspect", &table, "--random-states", "10"]),
        "set's directory",
    );
    refused(
        &coordinator(&["inspect", d, "--random-states", "many"]),
        "--random-states",
    );
    let missing = work.path().join("no").join("such").join("p.svg");
    refused(
        &coordinator(&["inspect", d, "--plot", missing.to_str().unwrap()]),
        "no/such/p.svg",
    );
    if !cfg!(feature = "png") {
        let png = work.path().join("x.png");
        refused(
            &coordinator(&["inspect", d, "--plot", png.to_str().unwrap()]),
            "feature `png`",
        );
        assert!(!png.exists());
    }
}

/// With the `png` feature: `--plot FILE.png` writes a PNG twice the chart's size, not blank.
#[cfg(feature = "png")]
#[test]
fn a_png_plot_decodes_to_its_size_and_is_not_blank() {
    let work = tempfile::tempdir().unwrap();
    let dir = build(&work.path().join("t"), "minimized", "byte");
    let path = work.path().join("values.png");
    ok(coordinator(&[
        "inspect",
        dir.to_str().unwrap(),
        "--plot",
        path.to_str().unwrap(),
    ]));
    let mut reader =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()))
            .read_info()
            .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1440, 880));
    let drawn = pixels[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .filter(|p| p.iter().take(3).any(|&c| c < 200))
        .count();
    let share = drawn as f64 / (info.width * info.height) as f64;
    assert!(share > 0.01 && share < 0.9, "{share} of the pixels drawn");
}
