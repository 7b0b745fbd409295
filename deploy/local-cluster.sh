#!/usr/bin/env bash
# A coordinator and N workers on this machine, over loopback.
#
#   deploy/local-cluster.sh N [job arguments of `tilepdb-coordinator serve`...]
#   deploy/local-cluster.sh 2 --partition 15:6-6-3 --out tables
#
# Uses tilepdb-coordinator and tilepdb-worker from $TILEPDB_BIN (default: the release directory
# of cargo's target directory, $CARGO_TARGET_DIR if set, else target/ of this repository).
# The data directory is $TILEPDB_DATA (default: a new temporary directory). `tilepdb-coordinator
# build --workers N` does the same in one command.
set -euo pipefail
workers=${1:?usage: $0 WORKERS [serve arguments...]}
shift
bin=${TILEPDB_BIN:-${CARGO_TARGET_DIR:-$(dirname "$0")/../target}/release}
for program in tilepdb-coordinator tilepdb-worker; do
  [ -x "$bin/$program" ] || {
    echo "$0: no $bin/$program: build it (cargo build --release), or set TILEPDB_BIN to its directory" >&2
    exit 1
  }
done
data=${TILEPDB_DATA:-$(mktemp -d)}
export TILEPDB_TOKEN=${TILEPDB_TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
log=$(mktemp)
address=$(mktemp -u)
"$bin/tilepdb-coordinator" serve --listen 127.0.0.1:0 --data-dir "$data" \
  --address-file "$address" "$@" 2>"$log" &
coordinator=$!
trap 'kill $coordinator 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -f "$address"' EXIT
# The address it bound, from the file it writes whole once it listens.
until [ -s "$address" ]; do
  kill -0 $coordinator 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
addr=$(awk '$1 == "grpc" { print $2 }' "$address")
echo "coordinator on $addr, data in $data; starting $workers worker(s)" >&2
threads=$(( $(nproc) / workers > 0 ? $(nproc) / workers : 1 ))
for _ in $(seq "$workers"); do
  "$bin/tilepdb-worker" --coordinator "http://$addr" --threads "$threads" &
done
tail -f "$log" --pid=$coordinator >&2 &
wait $coordinator
