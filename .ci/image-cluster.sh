#!/usr/bin/env bash
# The container image end to end: builds it (deploy/image/build.sh), runs a coordinator
# container and two worker containers (host network, read-only root filesystems, the image's
# non-root user) on a small set, and compares the table set they write byte for byte with a
# single-machine `build` of the same set. Exits non-zero on any difference.
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
cleanup() {
  for c in "${containers[@]}"; do podman_cmd rm -f "$c" >/dev/null 2>&1 || true; done
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

# The local try of deploy/kubernetes/local-pod.yaml (`podman play kube`: one pod, a coordinator
# and two workers), with this image and without the published port; only for the default set,
# which the pod builds.
if [ "$partition" = 15:5-5-5 ]; then
  sed -e "s|localhost/tilepdb:latest|$tag|" -e '/hostPort:/d' \
    -e 's/claimName: tilepdb-local/claimName: tilepdb-ci-local/' -e 's/name: tilepdb-local$/name: tilepdb-ci-local/' \
    "$root/deploy/kubernetes/local-pod.yaml" >"$work/local-pod.yaml"
  podman_cmd play kube --down "$work/local-pod.yaml" >/dev/null 2>&1 || true
  podman_cmd volume rm -f tilepdb-ci-local >/dev/null 2>&1 || true
  podman_cmd play kube "$work/local-pod.yaml" >/dev/null
  pod_code=$(podman_cmd wait tilepdb-ci-local-coordinator)
  volume=$(podman_cmd volume inspect tilepdb-ci-local --format '{{.Mountpoint}}')
  pod_status=0
  [ "$pod_code" = 0 ] && diff -r "$work/single/$set_name" "$volume/tables/$set_name" || pod_status=1
  [ "$pod_status" = 0 ] || podman_cmd logs tilepdb-ci-local-coordinator >&2 || true
  podman_cmd play kube --down "$work/local-pod.yaml" >/dev/null 2>&1 || true
  podman_cmd volume rm -f tilepdb-ci-local >/dev/null 2>&1 || true
  if [ "$pod_status" != 0 ]; then
    echo "image-cluster: the local pod (podman play kube) failed or its tables differ" >&2
    exit 1
  fi
  echo "image-cluster: podman play kube of deploy/kubernetes/local-pod.yaml builds the same tables"
fi
echo "image-cluster: all checks passed in $(( $(date +%s) - started )) s"
