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

/// Completes `words` (the command line so far, the last word being completed; an empty last
/// word completes a new one) the way bash does at a TAB: the script of `program completions
/// bash` is sourced in a fresh `bash`, the function it registered for `name` is found with
/// `complete -p` and called with `COMP_WORDS`, `COMP_CWORD`, `COMP_LINE` and `COMP_POINT` set
/// as readline sets them. The candidates it leaves in `COMPREPLY`.
pub fn bash_complete(program: &str, name: &str, words: &[&str]) -> Vec<String> {
    let out = Command::new(program)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{name}.bash"));
    std::fs::write(&file, &out.stdout).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        r#"source '{file}' || exit 3
spec=$(complete -p '{name}') || exit 4
fn=$(printf '%s\n' "$spec" | sed -E 's/.*-F ([^ ]+) .*/\1/')
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
"$fn" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        file = file.display(),
        words = quoted.join(" "),
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// [`bash_complete`] of `words` offers `expected` (among others, perhaps).
pub fn check_completes(program: &str, name: &str, words: &[&str], expected: &str) {
    let offered = bash_complete(program, name, words);
    assert!(
        offered.iter().any(|o| o == expected),
        "{name}: completing {words:?} offers {offered:?}, not {expected:?}"
    );
}
