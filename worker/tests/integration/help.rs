//! `tilepdb-worker --help` says "every core" without a `[default: 0]` beside it.

use std::process::Command;

#[test]
fn help_does_not_show_a_zero_for_every_core() {
    let out = Command::new(env!("CARGO_BIN_EXE_tilepdb-worker"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(help.contains("every core"), "{help}");
    assert!(!help.contains("[default: 0]"), "{help}");
}
