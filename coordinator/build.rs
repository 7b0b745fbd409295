//! Links the optimised `tilepdb-coordinator` with the functions a single-machine build runs
//! placed first, in the order of `link/function-order.txt` (made by `link/order-functions.sh`).
//! The code a build runs then sits in a few hundred contiguous pages instead of being scattered
//! over the whole `.text`, of which the kernel maps 64 KiB around every page fault
//! (`docs/benchmarks.md` has the figures).
//!
//! Only where the linker takes `--symbol-ordering-file` (LLD, rustc's linker on `x86_64` Linux):
//! a probe links an empty program with the flag first, and without the linker's support the
//! program is linked as before. Names the file does not hold (other versions, other compilers)
//! are ignored; the order only moves code, it never changes what the program does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDER: &str = "link/function-order.txt";

fn main() {
    println!("cargo::rerun-if-changed={ORDER}");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let out = std::env::var_os("OUT_DIR").map(PathBuf::from);
    let (Some(manifest), Some(out)) = (manifest, out) else {
        return;
    };
    let order = manifest.join(ORDER);
    if !order.is_file() {
        return;
    }
    // Each argument to the linker on its own (`-Xlinker`), so that no character of the path
    // splits it.
    let flags = [
        "-Xlinker".to_string(),
        "--symbol-ordering-file".to_string(),
        "-Xlinker".to_string(),
        order.display().to_string(),
        "-Xlinker".to_string(),
        "--no-warn-symbol-ordering".to_string(),
    ];
    if links_with(&flags, &out) {
        for flag in flags {
            println!("cargo::rustc-link-arg-bin=tilepdb-coordinator={flag}");
        }
    } else {
        println!(
            "cargo::warning=the linker does not order functions (--symbol-ordering-file): tilepdb-coordinator is linked without {ORDER}"
        );
    }
}

/// Whether rustc, for the target being built, links an empty program with the linker `flags`.
fn links_with(flags: &[String], out: &Path) -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .args([
            "--crate-name",
            "link_probe",
            "--crate-type",
            "bin",
            "--edition",
            "2021",
        ])
        .arg("-o")
        .arg(out.join("link-probe"))
        .arg("-");
    if let Ok(target) = std::env::var("TARGET") {
        probe.args(["--target", &target]);
    }
    // The linker and flags cargo gives rustc for the program, as the program is linked.
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        probe
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    if let Ok(encoded) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        probe.args(encoded.split('\x1f').filter(|f| !f.is_empty()));
    }
    for flag in flags {
        probe.arg("-C").arg(format!("link-arg={flag}"));
    }
    let Ok(mut child) = probe
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        if stdin.write_all(b"fn main() {}\n").is_err() {
            return false;
        }
    }
    child.wait().is_ok_and(|status| status.success())
}
