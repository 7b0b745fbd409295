//! The default memory limit of `build` under a real memory cgroup: a cgroup made for the test
//! below this process's own (v2 `memory.max`, or v1 `memory.limit_in_bytes`), a build started
//! inside it whose table needs more than the cgroup allows is refused with the friendly
//! message (instead of being killed by the OOM killer), and a build that fits succeeds there.
//!
//! Needs root and a writable memory cgroup; where the machine has neither, the test prints
//! why it is skipped and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::server::{coordinator_bin, scratch};

/// The limit set on the test's cgroup.
const LIMIT: u64 = 64 << 20;

/// A memory cgroup made for the test, removed when dropped.
struct TestCgroup {
    dir: PathBuf,
}

impl TestCgroup {
    /// Makes a cgroup limited to `limit` bytes below this process's memory cgroup, or says
    /// why it cannot.
    fn create(limit: u64) -> Result<TestCgroup, String> {
        let memberships = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let name = format!("tilepdb-test-{}", std::process::id());
        // v1: the memory controller's hierarchy.
        if let Some(path) = memberships.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        }) {
            let parent = Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let cgroup = TestCgroup { dir };
            cgroup.write("memory.limit_in_bytes", &limit.to_string())?;
            return Ok(cgroup);
        }
        // v2: the unified hierarchy, with the memory controller enabled for children.
        let path = memberships
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("no memory cgroup in /proc/self/cgroup")?;
        let parent = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
        let controllers = std::fs::read_to_string(parent.join("cgroup.controllers"))
            .map_err(|e| format!("no cgroup v2 controllers at {}: {e}", parent.display()))?;
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err(format!("no memory controller in {}", parent.display()));
        }
        let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory");
        let dir = parent.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cgroup = TestCgroup { dir };
        cgroup.write("memory.max", &limit.to_string())?;
        Ok(cgroup)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// `tilepdb-coordinator ARGS` run inside the cgroup (a shell moves itself in, then
    /// becomes the program).
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.dir)
            .arg(coordinator_bin())
            .args(args)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Its processes have exited: the empty cgroup can go.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_build_that_does_not_fit_the_cgroup_is_refused_and_one_that_fits_is_built() {
    let cgroup = match TestCgroup::create(LIMIT) {
        Ok(c) => c,
        Err(reason) => {
            crate::skip::skipped(
                "a_build_that_does_not_fit_the_cgroup_is_refused_and_one_that_fits_is_built",
                &format!("cannot make a memory cgroup here ({reason})"),
            );
            return;
        }
    };
    let out = scratch("cgroup-memory");
    let out_arg = out.to_str().unwrap();

    // A 7-tile table of the 15-puzzle: 130 MB of two-bit codes plus 58 MB of depth bytes.
    let refused = cgroup.run(&[
        "build",
        "--puzzle",
        "15",
        "--pattern",
        "1,2,3,4,5,6,7",
        "--out",
        out_arg,
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "expected the friendly refusal (exit 1), got {}; stderr:\n{stderr}",
        refused.status
    );
    assert!(
        stderr.contains("needs")
            && stderr.contains("more than the")
            && stderr.contains("it may use"),
        "{stderr}"
    );
    // The limit it names is the cgroup's, not the machine's.
    let limit_named = stderr
        .split("more than the ")
        .nth(1)
        .and_then(|rest| rest.split(" it may use").next())
        .unwrap_or_default()
        .to_string();
    let (number, unit) = limit_named.split_once(' ').unwrap_or(("", ""));
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        other => panic!("unit {other:?} in {stderr}"),
    };
    let named = number.parse::<f64>().unwrap() * scale;
    assert!(
        named <= LIMIT as f64,
        "the refusal names {limit_named}, more than the cgroup's {LIMIT} bytes: {stderr}"
    );

    // A set that fits is built inside the same cgroup.
    let built = cgroup.run(&["build", "--partition", "8:4-4", "--out", out_arg]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert!(
        out.join("3x3-4-4-minimized-blank-first")
            .join("manifest.json")
            .is_file()
    );
    drop(cgroup);
    let _ = std::fs::remove_dir_all(&out);
}
