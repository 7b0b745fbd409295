//! How much memory this process may still use: the least of what the machine has available
//! (`MemAvailable` in `/proc/meminfo`) and what its memory cgroups leave it (cgroup v2
//! `memory.max`, v1 `memory.limit_in_bytes`, of its own cgroup and every ancestor).
//!
//! A cgroup's headroom is its limit minus its working set: the usage (`memory.current`,
//! `memory.usage_in_bytes`) less the inactive file cache (`inactive_file`,
//! `total_inactive_file` in `memory.stat`), which the kernel reclaims before it kills anything.
//! Under Slurm's `--mem` or Kubernetes' `limits.memory` the limit is the cgroup's, and a build
//! that would not fit is refused up front instead of being killed by the OOM killer.
//!
//! ```
//! let available = tilepdb_coordinator::memory::available_bytes();
//! if let Some(bytes) = available {
//!     assert!(bytes > 0);
//! }
//! ```

use std::path::{Path, PathBuf};

/// Which cgroup hierarchy a limit came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The unified hierarchy (`cgroup2`): `memory.max`, `memory.current`.
    V2,
    /// The v1 `memory` controller: `memory.limit_in_bytes`, `memory.usage_in_bytes`.
    V1,
}

/// The tightest memory cgroup over this process: the one with the least headroom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLimit {
    /// Version 1 or 2 of the cgroup interface.
    pub version: CgroupVersion,
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// Its limit in bytes.
    pub limit: u64,
    /// Its working set in bytes (usage less inactive file cache).
    pub working_set: u64,
}

impl CgroupLimit {
    /// Bytes the cgroup still allows: its limit less its working set.
    pub fn headroom(&self) -> u64 {
        self.limit.saturating_sub(self.working_set)
    }
}

/// What this process may use, and where each bound comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryBudget {
    /// `MemAvailable` of `/proc/meminfo`, if readable.
    pub machine_available: Option<u64>,
    /// The tightest memory cgroup with a limit, if any.
    pub cgroup: Option<CgroupLimit>,
}

impl MemoryBudget {
    /// Reads the budget of this process from the real `/proc` and cgroup file systems.
    pub fn of_this_process() -> MemoryBudget {
        MemoryBudget::read(Path::new("/"))
    }

    /// Reads the budget under `root` as if it were `/`: `root/proc/self/cgroup`,
    /// `root/proc/self/mountinfo`, `root/proc/meminfo`, and the cgroup directories at the
    /// mount points that mountinfo names (taken relative to `root`). Anything missing or
    /// unreadable is left out.
    pub fn read(root: &Path) -> MemoryBudget {
        let under = |p: &str| root.join(p.trim_start_matches('/'));
        let machine_available = std::fs::read_to_string(under("proc/meminfo"))
            .ok()
            .and_then(|s| meminfo_available(&s));
        let memberships = std::fs::read_to_string(under("proc/self/cgroup")).unwrap_or_default();
        let mountinfo = std::fs::read_to_string(under("proc/self/mountinfo")).unwrap_or_default();
        let mut tightest: Option<CgroupLimit> = None;
        for (version, cgroup_path) in memory_cgroups(&memberships) {
            for mount in cgroup_mounts(&mountinfo, version) {
                let Some(relative) = relative_to(&cgroup_path, &mount.root) else {
                    continue;
                };
                let top = under(&mount.point);
                let Some(limit) = tightest_on_path(version, &top, &relative) else {
                    continue;
                };
                if tightest
                    .as_ref()
                    .is_none_or(|t| limit.headroom() < t.headroom())
                {
                    tightest = Some(limit);
                }
            }
        }
        MemoryBudget {
            machine_available,
            cgroup: tightest,
        }
    }

    /// The least of the machine's available memory and the cgroup's headroom.
    pub fn available(&self) -> Option<u64> {
        let cgroup = self.cgroup.as_ref().map(CgroupLimit::headroom);
        match (self.machine_available, cgroup) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }
}

/// Bytes this process may still use (see the module's documentation), if the OS tells.
pub fn available_bytes() -> Option<u64> {
    MemoryBudget::of_this_process().available()
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn meminfo_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory cgroups of a `/proc/self/cgroup` text: `0::/path` (v2) and the v1 hierarchy
/// whose controllers include `memory`.
fn memory_cgroups(memberships: &str) -> Vec<(CgroupVersion, String)> {
    let mut found = Vec::new();
    for line in memberships.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            found.push((CgroupVersion::V2, path.to_string()));
        } else if controllers.split(',').any(|c| c == "memory") {
            found.push((CgroupVersion::V1, path.to_string()));
        }
    }
    found
}

/// A cgroup file system mounted somewhere: the part of the hierarchy it shows (`root`) and
/// where (`point`).
#[derive(Debug, PartialEq, Eq)]
struct CgroupMount {
    root: String,
    point: String,
}

/// The mounts of `version`'s hierarchy in a `/proc/self/mountinfo` text (for v1, those of
/// the `memory` controller).
fn cgroup_mounts(mountinfo: &str, version: CgroupVersion) -> Vec<CgroupMount> {
    let mut mounts = Vec::new();
    for line in mountinfo.lines() {
        // ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let before: Vec<&str> = before.split_whitespace().collect();
        let after: Vec<&str> = after.split_whitespace().collect();
        if before.len() < 5 || after.is_empty() {
            continue;
        }
        let wanted = match version {
            CgroupVersion::V2 => after[0] == "cgroup2",
            CgroupVersion::V1 => {
                after[0] == "cgroup"
                    && after
                        .get(2)
                        .is_some_and(|opts| opts.split(',').any(|o| o == "memory"))
            }
        };
        if wanted {
            mounts.push(CgroupMount {
                root: unescape(before[3]),
                point: unescape(before[4]),
            });
        }
    }
    mounts
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal (`\040`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let code = u32::from(bytes[i + 1] - b'0') * 64
                + u32::from(bytes[i + 2] - b'0') * 8
                + u32::from(bytes[i + 3] - b'0');
            if let Ok(b) = u8::try_from(code) {
                out.push(b);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup path `path` seen from a mount of the hierarchy's `root`: the rest of the path
/// below it ("" for the mount point itself), or `None` if the mount does not show it.
/// Inside a cgroup namespace the kernel already gives paths from the namespace's root.
fn relative_to(path: &str, root: &str) -> Option<String> {
    let path = path.trim_end_matches(" (deleted)");
    let root = root.trim_end_matches('/');
    let rest = path.strip_prefix(root)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    Some(rest.trim_matches('/').to_string())
}

/// The limit with the least headroom among the cgroup `top/relative` and its ancestors up to
/// `top` (the mount point), skipping those without a limit.
fn tightest_on_path(version: CgroupVersion, top: &Path, relative: &str) -> Option<CgroupLimit> {
    let mut dir = top.to_path_buf();
    let mut levels = vec![dir.clone()];
    for part in relative.split('/').filter(|p| !p.is_empty()) {
        dir = dir.join(part);
        levels.push(dir.clone());
    }
    levels
        .into_iter()
        .filter_map(|d| read_limit(version, &d))
        .min_by_key(CgroupLimit::headroom)
}

/// Limits of v1 above this are "no limit" (the kernel reports the largest page multiple of
/// `i64::MAX`).
const V1_UNLIMITED: u64 = 1 << 62;

/// The limit and working set of the cgroup directory `dir`, if it has a memory limit.
fn read_limit(version: CgroupVersion, dir: &Path) -> Option<CgroupLimit> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let number = |s: String| s.trim().parse::<u64>().ok();
    let (limit, usage, inactive_key) = match version {
        CgroupVersion::V2 => {
            let max = read("memory.max")?;
            if max.trim() == "max" {
                return None;
            }
            (
                number(max)?,
                read("memory.current").and_then(number)?,
                "inactive_file",
            )
        }
        CgroupVersion::V1 => {
            let limit = read("memory.limit_in_bytes").and_then(number)?;
            if limit >= V1_UNLIMITED {
                return None;
            }
            let usage = read("memory.usage_in_bytes").and_then(number)?;
            (limit, usage, "total_inactive_file")
        }
    };
    let inactive = read("memory.stat")
        .and_then(|stat| {
            stat.lines().find_map(|l| {
                let (key, value) = l.split_once(' ')?;
                (key == inactive_key).then(|| value.trim().parse::<u64>().ok())?
            })
        })
        .unwrap_or(0);
    Some(CgroupLimit {
        version,
        dir: dir.to_path_buf(),
        limit,
        working_set: usage.saturating_sub(inactive),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake root: /proc files and cgroup directories written under a temporary directory.
    struct Fake {
        root: tempfile::TempDir,
    }

    impl Fake {
        fn new(cgroup: &str, mountinfo: &str, mem_available_kib: u64) -> Fake {
            let fake = Fake {
                root: tempfile::tempdir().unwrap(),
            };
            fake.write("proc/self/cgroup", cgroup);
            fake.write("proc/self/mountinfo", mountinfo);
            fake.write(
                "proc/meminfo",
                &format!(
                    "MemTotal: 99999999 kB\nMemFree: 1 kB\nMemAvailable: {mem_available_kib} kB\n"
                ),
            );
            fake
        }

        fn write(&self, path: &str, text: &str) {
            let p = self.root.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }

        fn budget(&self) -> MemoryBudget {
            MemoryBudget::read(self.root.path())
        }
    }

    const V2_MOUNT: &str =
        "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
    const V1_MOUNTS: &str = "\
25 24 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
33 25 0:29 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
34 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const GIB: u64 = 1 << 30;

    #[test]
    fn v2_limit_minus_working_set_when_below_the_machine() {
        let f = Fake::new("0::/job/step\n", V2_MOUNT, 16 * GIB / 1024);
        f.write("sys/fs/cgroup/job/memory.max", &format!("{}\n", 4 * GIB));
        f.write("sys/fs/cgroup/job/memory.current", &format!("{GIB}\n"));
        f.write(
            "sys/fs/cgroup/job/memory.stat",
            &format!("anon 1\nfile 5\ninactive_file {}\nactive_file 3\n", GIB / 4),
        );
        f.write("sys/fs/cgroup/job/step/memory.max", "max\n");
        f.write("sys/fs/cgroup/job/step/memory.current", "100\n");
        let b = f.budget();
        let cg = b.cgroup.clone().expect("a cgroup limit");
        assert_eq!(cg.version, CgroupVersion::V2);
        assert!(cg.dir.ends_with("sys/fs/cgroup/job"), "{:?}", cg.dir);
        assert_eq!(cg.limit, 4 * GIB);
        assert_eq!(cg.working_set, GIB - GIB / 4);
        assert_eq!(b.available(), Some(4 * GIB - (GIB - GIB / 4)));
    }

    #[test]
    fn the_machine_wins_when_it_has_less_than_the_cgroup() {
        let f = Fake::new("0::/job\n", V2_MOUNT, GIB / 1024);
        f.write("sys/fs/cgroup/job/memory.max", &format!("{}", 8 * GIB));
        f.write("sys/fs/cgroup/job/memory.current", "0");
        assert_eq!(f.budget().available(), Some(GIB));
    }

    #[test]
    fn no_limit_anywhere_leaves_the_machine_figure() {
        let f = Fake::new("0::/job\n", V2_MOUNT, 3 * GIB / 1024);
        f.write("sys/fs/cgroup/job/memory.max", "max\n");
        f.write("sys/fs/cgroup/job/memory.current", "12345\n");
        let b = f.budget();
        assert_eq!(b.cgroup, None);
        assert_eq!(b.available(), Some(3 * GIB));
    }

    #[test]
    fn v1_memory_controller_in_a_hybrid_layout() {
        let cgroup =
            "12:pids:/x\n4:memory:/slurm/uid_1/job_7\n2:cpu,cpuacct:/x\n1:name=systemd:/x\n0::/x\n";
        let f = Fake::new(cgroup, V1_MOUNTS, 64 * GIB / 1024);
        let job = "sys/fs/cgroup/memory/slurm/uid_1/job_7";
        f.write(
            &format!("{job}/memory.limit_in_bytes"),
            &format!("{}\n", 2 * GIB),
        );
        f.write(
            &format!("{job}/memory.usage_in_bytes"),
            &format!("{}\n", GIB / 2),
        );
        f.write(
            &format!("{job}/memory.stat"),
            &format!(
                "cache 9\ninactive_file 1\ntotal_inactive_file {}\n",
                GIB / 4
            ),
        );
        // Ancestors without a limit (the kernel's "unlimited") do not count.
        f.write(
            "sys/fs/cgroup/memory/slurm/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        f.write("sys/fs/cgroup/memory/slurm/memory.usage_in_bytes", "5\n");
        // The unified hierarchy of a hybrid layout has no memory controller files.
        let b = f.budget();
        let cg = b.cgroup.clone().expect("the v1 limit");
        assert_eq!(cg.version, CgroupVersion::V1);
        assert_eq!(cg.working_set, GIB / 4);
        assert_eq!(b.available(), Some(2 * GIB - GIB / 4));
    }

    #[test]
    fn an_ancestor_with_less_headroom_is_the_bound() {
        let f = Fake::new("0::/a/b\n", V2_MOUNT, 64 * GIB / 1024);
        f.write("sys/fs/cgroup/a/memory.max", &format!("{}", 3 * GIB));
        f.write("sys/fs/cgroup/a/memory.current", &format!("{}", 2 * GIB));
        f.write("sys/fs/cgroup/a/b/memory.max", &format!("{}", 2 * GIB));
        f.write("sys/fs/cgroup/a/b/memory.current", &format!("{}", GIB / 2));
        let b = f.budget();
        assert!(b.cgroup.as_ref().unwrap().dir.ends_with("a"));
        assert_eq!(b.available(), Some(GIB));
    }

    #[test]
    fn a_container_sees_its_own_cgroup_at_the_mount_point() {
        // In a cgroup namespace the path is "/" and the mount shows the container's cgroup.
        let f = Fake::new("0::/\n", V2_MOUNT, 64 * GIB / 1024);
        f.write("sys/fs/cgroup/memory.max", &format!("{GIB}"));
        f.write("sys/fs/cgroup/memory.current", &format!("{}", GIB / 8));
        assert_eq!(f.budget().available(), Some(GIB - GIB / 8));
    }

    #[test]
    fn a_bind_mounted_sub_hierarchy_is_found_below_its_root() {
        // Docker without a cgroup namespace, v1: the mount's root is the container's cgroup.
        let mounts = "40 30 0:29 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n";
        let f = Fake::new("9:memory:/docker/abc\n", mounts, 64 * GIB / 1024);
        f.write(
            "sys/fs/cgroup/memory/memory.limit_in_bytes",
            &format!("{GIB}"),
        );
        f.write("sys/fs/cgroup/memory/memory.usage_in_bytes", "0");
        assert_eq!(f.budget().available(), Some(GIB));
    }

    #[test]
    fn usage_above_the_limit_leaves_nothing() {
        let f = Fake::new("0::/job\n", V2_MOUNT, 64 * GIB / 1024);
        f.write("sys/fs/cgroup/job/memory.max", "1000");
        f.write("sys/fs/cgroup/job/memory.current", "5000");
        assert_eq!(f.budget().available(), Some(0));
    }

    #[test]
    fn garbage_files_are_ignored_not_fatal() {
        let f = Fake::new("what\n0:\n::\n", "garbage line\n - \n", 2 * GIB / 1024);
        f.write("sys/fs/cgroup/memory.max", "lots");
        assert_eq!(f.budget().available(), Some(2 * GIB));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(MemoryBudget::read(empty.path()), MemoryBudget::default());
    }

    #[test]
    fn mountinfo_octal_escapes() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape(r"/a\\b"), r"/a\\b");
        assert_eq!(unescape(r"/end\04"), r"/end\04");
        assert_eq!(
            relative_to("/docker/abc/x", "/docker/abc"),
            Some("x".into())
        );
        assert_eq!(relative_to("/docker/abcd", "/docker/abc"), None);
        assert_eq!(relative_to("/a", "/"), Some("a".into()));
    }
}
