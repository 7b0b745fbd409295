//! Embeds the git commit the program is built from as `TILEPDB_COMMIT` (read by
//! `tilepdb_solver::provenance`): the environment variable `TILEPDB_COMMIT` if set (a packager
//! building from a source tarball names the commit that way), else what `git rev-parse HEAD`
//! says in the source tree, else `unknown` (a tarball without `.git`, or no git).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TILEPDB_COMMIT");
    let commit = std::env::var("TILEPDB_COMMIT")
        .ok()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TILEPDB_COMMIT={commit}");
}

/// `git rev-parse HEAD` in the package's directory, and the files whose change means another
/// commit (HEAD, the branch it names, the packed refs) watched so that a new commit is seen.
fn git_commit() -> Option<String> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!text.is_empty()).then_some(text)
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    let absolute = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { dir.join(p) }
    };
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]).map(absolute) {
        watch(&git_dir.join("HEAD"));
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]).map(absolute) {
            watch(&common.join("packed-refs"));
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch(&common.join(branch));
            }
        }
    }
    Some(commit)
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
