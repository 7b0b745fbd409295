//! Checks of a program's `completions SHELL` and `man DIR` commands, shared by the tests of the
//! three programs (each includes this file with `#[path]`).

use std::process::Command;

/// `program completions bash` prints a script that `bash -n` parses and that mentions every one
/// of `words`; the zsh and fish scripts are printed too.
pub fn check_completions(program: &str, name: &str, words: &[&str]) {
    let out = Command::new(program)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = String::from_utf8(out.stdout).unwrap();
    for word in words {
        assert!(script.contains(word), "the script does not mention {word}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{name}.bash"));
    std::fs::write(&file, &script).unwrap();
    let parsed = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(
        parsed.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    for shell in ["zsh", "fish"] {
        let out = Command::new(program)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
}

/// `program man DIR` writes the page `name.1` (a man page naming the program) and, among the
/// others, `subcommand_page`.
pub fn check_man_pages(program: &str, name: &str, subcommand_page: &str) {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = Command::new(program).arg("man").arg(&man).output().unwrap();
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
    let page = std::fs::read_to_string(man.join(format!("{name}.1"))).unwrap();
    assert!(page.contains(".TH") && page.contains(name), "{page}");
    assert!(pages.contains(&subcommand_page.to_string()), "{pages:?}");
}
