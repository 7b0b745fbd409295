//! `tilepdb-worker completions SHELL` prints a completion script that the shell parses and that knows
//! the program's words; `tilepdb-worker man DIR` writes man pages.

use std::process::Command;

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-worker");

#[test]
fn the_bash_completion_parses_and_knows_the_words() {
    let out = Command::new(PROGRAM)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = String::from_utf8(out.stdout).unwrap();
    for word in ["--coordinator", "--threads", "--token-file"] {
        assert!(script.contains(word), "the script does not mention {word}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tilepdb-worker.bash");
    std::fs::write(&file, &script).unwrap();
    let parsed = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(
        parsed.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    for shell in ["zsh", "fish"] {
        let out = Command::new(PROGRAM)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
}

#[test]
fn man_pages_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = Command::new(PROGRAM).arg("man").arg(&man).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let page = std::fs::read_to_string(man.join("tilepdb-worker.1")).unwrap();
    assert!(
        page.contains(".TH") && page.contains("tilepdb-worker"),
        "{page}"
    );
    assert!(
        pages.contains(&"tilepdb-worker-completions.1".to_string()),
        "{pages:?}"
    );
}
