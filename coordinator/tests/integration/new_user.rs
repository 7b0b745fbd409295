//! What a new user meets first in `--help`: "every core" without a `[default: 0]` beside it.

use std::process::Command;

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-coordinator");

#[test]
fn help_does_not_show_a_zero_for_every_core() {
    for command in ["build", "serve", "encode"] {
        let out = Command::new(PROGRAM)
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{command}");
        assert!(help.contains("every core"), "{command}: {help}");
        assert!(!help.contains("[default: 0]"), "{command}: {help}");
    }
}
