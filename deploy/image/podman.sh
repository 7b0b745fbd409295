# Sourced by the image scripts: `podman_cmd ARGS...` runs podman with the options this kind of
# machine needs (no systemd, no cgroup delegation, no overlay mounts): runc, cgroupfs, vfs
# storage, and a containers.conf that sets no ulimits and no pids limit.
# TILEPDB_PODMAN_OPTIONS replaces the global options (e.g. to use a machine's own defaults:
# TILEPDB_PODMAN_OPTIONS=" ").
podman_conf_dir=${TILEPDB_PODMAN_CONF_DIR:-${TMPDIR:-/tmp}/tilepdb-podman}
mkdir -p "$podman_conf_dir"
cat >"$podman_conf_dir/containers.conf" <<'CONF'
[containers]
default_ulimits = []
pids_limit = 0
CONF
export CONTAINERS_CONF="$podman_conf_dir/containers.conf"
read -r -a podman_global_options <<<"${TILEPDB_PODMAN_OPTIONS:---runtime runc --cgroup-manager cgroupfs --storage-driver vfs}"

podman_cmd() {
  podman "${podman_global_options[@]}" "$@"
}
