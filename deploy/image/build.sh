#!/usr/bin/env bash
# Builds the tilepdb container image from this workspace, without pulling any base image.
#
#   deploy/image/build.sh [TAG]            # default tag: tilepdb:latest
#
# 1. `cargo build --profile dist` of the three programs (stripped release builds), unless
#    TILEPDB_BIN names a directory that already holds them (CI's release build), which are
#    stripped as they are copied;
# 2. a root filesystem in a temporary directory: the programs in /usr/local/bin, every shared
#    library `ldd` says they load (the dynamic loader included) at the same path, /etc/passwd
#    and /etc/group with the user tilepdb (uid and gid 10001), /data owned by it, /tmp;
# 3. `podman build` of the Containerfile next to this script, `FROM scratch` over that tree.
#
# TILEPDB_IMAGE_EXPORT=FILE also saves the image as an OCI archive (`podman load -i FILE` or
# `ctr images import` elsewhere).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${1:-tilepdb:latest}
programs=(tilepdb-coordinator tilepdb-worker tilepdb-solve)
# shellcheck source=deploy/image/podman.sh
source "$here/podman.sh"

if [ -n "${TILEPDB_BIN:-}" ]; then
  bin=$TILEPDB_BIN
else
  (cd "$root" && cargo build --profile dist -p tilepdb-coordinator -p tilepdb-worker -p tilepdb-solver)
  bin=${CARGO_TARGET_DIR:-$root/target}/dist
fi
for p in "${programs[@]}"; do
  [ -x "$bin/$p" ] || { echo "build.sh: no program $bin/$p" >&2; exit 1; }
done

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
rootfs=$context/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc" "$rootfs/tmp" "$context/data"
for p in "${programs[@]}"; do
  install -m 0755 --strip "$bin/$p" "$rootfs/usr/local/bin/$p"
done
# Every library any program loads, at the path the loader looks for it ("=> /path" or, for the
# loader itself, the bare absolute path), its symbolic links resolved.
libraries=$(for p in "${programs[@]}"; do ldd "$bin/$p"; done |
  grep -oE '(=> )?/[^ ]+' | sed 's/^=> //' | sort -u)
for lib in $libraries; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
# The loader is also looked for through /lib64 on x86-64 even when ldd names /lib/...
if [ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$rootfs/lib64/ld-linux-x86-64.so.2" ]; then
  mkdir -p "$rootfs/lib64"
  cp -L /lib64/ld-linux-x86-64.so.2 "$rootfs/lib64/"
fi
cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
tilepdb:x:10001:10001:tilepdb:/data:/sbin/nologin
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
tilepdb:x:10001:
GROUP
# (data/ is empty: COPY --chown makes /data, owned by tilepdb)
chmod 1777 "$rootfs/tmp"
cp "$here/Containerfile" "$context/Containerfile"

podman_cmd build --tag "$tag" --file "$context/Containerfile" "$context"
if [ -n "${TILEPDB_IMAGE_EXPORT:-}" ]; then
  podman_cmd save --format oci-archive --output "$TILEPDB_IMAGE_EXPORT" "$tag"
fi
echo "built image $tag: $(for p in "${programs[@]}"; do printf '%s ' "$p"; done)+ $(echo "$libraries" | wc -w) libraries" >&2
