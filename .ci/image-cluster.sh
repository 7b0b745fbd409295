#!/usr/bin/env bash
# The container image end to end: builds it (deploy/image/build.sh), runs a coordinator
# container and two worker containers (host network, read-only root filesystems, the image's
# non-root user) on a small set, and compares the table set they write byte for byte with a
# single-machine `build` of the same set. For the default set it also runs the two pods of
# deploy/kubernetes/ with `podman play kube`: local-pod.yaml (a coordinator and two workers)
# and local-sharded-pod.yaml (`serve --shards 3` and a worker per shard, configured as the
# Indexed Job's pods of sharded-build.yaml are, each with its data directory on the pod's
# volume, which must be there afterwards), each set compared file by file (sha256) with the
# single-machine build. Exits non-zero on any difference.
#
#   .ci/image-cluster.sh [PARTITION]        # default 15:5-5-5
#
# Needs podman and runc (Debian: apt-get install podman runc) and root (the job's directory is
# handed to the image's user, uid 10001).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
partition=${1:-15:5-5-5}
tag=localhost/tilepdb:ci
# shellcheck source=deploy/image/podman.sh
source "$root/deploy/image/podman.sh"

started=$(date +%s)
"$root/deploy/image/build.sh" "$tag"
bin=${TILEPDB_BIN:-${CARGO_TARGET_DIR:-$root/target}/dist}

work=$(mktemp -d)
containers=()
pods=()
cleanup() {
  for c in "${containers[@]}"; do podman_cmd rm -f "$c" >/dev/null 2>&1 || true; done
  for p in "${pods[@]}"; do
    podman_cmd play kube --down "$work/$p.yaml" >/dev/null 2>&1 || true
    podman_cmd volume rm -f "$p" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The reference: a single-machine build on the host.
"$bin/tilepdb-coordinator" build --partition "$partition" --out "$work/single" >/dev/null 2>&1

mkdir -p "$work/cluster"
chown 10001:10001 "$work/cluster"
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
run=(podman_cmd run --detach --network host --read-only --env "TILEPDB_TOKEN=$token")

coordinator=$("${run[@]}" --volume "$work/cluster:/data" "$tag" \
  tilepdb-coordinator serve --partition "$partition" --listen 127.0.0.1:0 \
  --data-dir /data/job --out /data/tables --address-file /data/address)
containers+=("$coordinator")
# The address it bound (port 0: the OS picks), from the file it writes whole once listening.
addr=
for _ in $(seq 300); do
  if [ -s "$work/cluster/address" ]; then
    addr=$(awk '$1 == "grpc" { print $2 }' "$work/cluster/address")
    break
  fi
  [ "$(podman_cmd inspect --format '{{.State.Running}}' "$coordinator")" = true ] || break
  sleep 0.2
done
if [ -z "$addr" ]; then
  podman_cmd logs "$coordinator" >&2 || true
  echo "image-cluster: the coordinator container wrote no address file" >&2
  exit 1
fi
echo "image-cluster: coordinator container on $addr" >&2
for i in 1 2; do
  worker=$("${run[@]}" "$tag" tilepdb-worker --coordinator "http://$addr" --threads 1 \
    --name "container-$i")
  containers+=("$worker")
done

status=0
code=$(podman_cmd wait "$coordinator")
if [ "$code" != 0 ]; then
  echo "image-cluster: the coordinator container exited with $code" >&2
  status=1
fi
for worker in "${containers[@]:1}"; do
  wcode=$(podman_cmd wait "$worker")
  if [ "$wcode" != 0 ]; then
    echo "image-cluster: worker container ${worker:0:12} exited with $wcode" >&2
    podman_cmd logs "$worker" >&2 || true
    status=1
  fi
done
[ "$status" = 0 ] || { podman_cmd logs "$coordinator" >&2 || true; exit 1; }

set_name=$(cd "$work/single" && ls)
if ! diff -r "$work/single/$set_name" "$work/cluster/tables/$set_name"; then
  echo "image-cluster: the containers' tables differ from the single-machine build" >&2
  exit 1
fi
files=$(find "$work/cluster/tables/$set_name" -type f | wc -l)
echo "image-cluster: $set_name from a coordinator and two worker containers equals the single-machine build ($files files)"

# same_tables A B: the same files in the set directories A and B, with the same bytes (sha256).
same_tables() {
  diff <(cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) \
    <(cd "$2" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

# play_pod FILE CONTAINER...: the pod of deploy/kubernetes/FILE under `podman play kube`, with
# this image, without published ports, its pod and volume renamed tilepdb-ci-*; every container
# named must exit 0 (the first, the coordinator, within 5 minutes, the others a minute after)
# and the set it writes to tables/ in its volume must equal the single-machine build's; the
# directories of its volume named in the array expect_dirs (the data directories the programs
# were given) must be there.
expect_dirs=()
play_pod() {
  local file=$1
  shift
  local pod
  pod=$(awk '$1 == "kind:" && $2 == "Pod" { p = 1 } p && $1 == "name:" { print $2; exit }' \
    "$root/deploy/kubernetes/$file")
  local ci=tilepdb-ci-${pod#tilepdb-}
  sed -e "s|localhost/tilepdb:latest|$tag|" -e '/hostPort:/d' \
    -e "s/\(name\|claimName\): $pod\$/\1: $ci/" \
    "$root/deploy/kubernetes/$file" >"$work/$ci.yaml"
  podman_cmd play kube --down "$work/$ci.yaml" >/dev/null 2>&1 || true
  podman_cmd volume rm -f "$ci" >/dev/null 2>&1 || true
  pods+=("$ci")
  podman_cmd play kube "$work/$ci.yaml" >/dev/null
  # (once the coordinator has failed, the workers can only wait for it: not waited for)
  local c code limit=300 failed=0
  for c in "$@"; do
    code=$(timeout "$limit" podman "${podman_global_options[@]}" wait "$ci-$c") ||
      code="no exit status within $limit s"
    limit=60
    if [ "$code" != 0 ]; then
      echo "image-cluster: container $c of $file exited with $code" >&2
      failed=1
      [ "$c" != "$1" ] || break
    fi
  done
  local volume
  volume=$(podman_cmd volume inspect "$ci" --format '{{.Mountpoint}}')
  if [ "$failed" = 0 ] && ! same_tables "$work/single/$set_name" "$volume/tables/$set_name"; then
    echo "image-cluster: the tables of $file differ from the single-machine build" >&2
    failed=1
  fi
  local dir
  for dir in "${expect_dirs[@]}"; do
    if [ "$failed" = 0 ] && [ ! -d "$volume/$dir" ]; then
      echo "image-cluster: no data directory $dir in the volume of $file" >&2
      failed=1
    fi
  done
  if [ "$failed" != 0 ]; then
    for c in "$@"; do
      echo "--- $c" >&2
      podman_cmd logs "$ci-$c" >&2 || true
    done
  fi
  podman_cmd play kube --down "$work/$ci.yaml" >/dev/null 2>&1 || true
  podman_cmd volume rm -f "$ci" >/dev/null 2>&1 || true
  [ "$failed" = 0 ] || return 1
  echo "image-cluster: podman play kube of deploy/kubernetes/$file builds the same tables ($(find "$work/single/$set_name" -type f | wc -l) files, sha256)"
}

# The local tries of deploy/kubernetes/ (`podman play kube`: one pod each), only for the
# default set, which the pods build: a coordinator and two workers; the sharded build, the
# coordinator and a worker per shard.
if [ "$partition" = 15:5-5-5 ]; then
  play_pod local-pod.yaml coordinator worker-1 worker-2
  expect_dirs=(job shards/shard-0 shards/shard-1 shards/shard-2)
  play_pod local-sharded-pod.yaml coordinator shard-0 shard-1 shard-2
  expect_dirs=()
fi
echo "image-cluster: all checks passed in $(( $(date +%s) - started )) s"
