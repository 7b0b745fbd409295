#!/usr/bin/env bash
# deploy/slurm.sbatch end to end under mock sbatch, srun and scontrol (.ci/slurm-mock/): a
# coordinator and a worker per mock node on this machine (127.0.0.1, a port the OS picks)
# build a small set, which must equal a single-machine build byte for byte; the data
# directory must be keyed by the job id and the output file named by --output.
#
#   .ci/slurm.sh [PARTITION]          # default 15:5-5-5
#
# The programs come from TILEPDB_BIN if set, else from a release build (cargo build --release).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
partition=${1:-15:5-5-5}
if [ -n "${TILEPDB_BIN:-}" ]; then
  bin=$(cd "$TILEPDB_BIN" && pwd)
else
  (cd "$root" && cargo build --release -q -p tilepdb-coordinator -p tilepdb-worker)
  bin=${CARGO_TARGET_DIR:-$root/target}/release
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/tilepdb-coordinator" build --partition "$partition" --out "$work/single" >/dev/null 2>&1

cd "$work"
export PATH="$root/.ci/slurm-mock:$bin:$PATH"
export MOCK_SLURM_JOB_ID=$((RANDOM + 1000)) MOCK_SLURM_NODES=2 MOCK_SLURM_CPUS=2
export TILEPDB_BASE=$work/base JOB="--partition $partition" LISTEN=127.0.0.1 PORT=0
export COORDINATOR_THREADS=1 RUST_LOG=info
if ! sbatch "$root/deploy/slurm.sbatch"; then
  cat "tilepdb-$MOCK_SLURM_JOB_ID.out" >&2 || true
  echo "slurm: the batch script failed" >&2
  exit 1
fi
output=tilepdb-$MOCK_SLURM_JOB_ID.out
[ -s "$output" ] || { echo "slurm: no output file $output" >&2; exit 1; }
[ -d "base/jobs/$MOCK_SLURM_JOB_ID" ] || { echo "slurm: no data directory base/jobs/$MOCK_SLURM_JOB_ID" >&2; exit 1; }
set_name=$(ls single)
if ! diff -r "single/$set_name" "base/tables/$set_name"; then
  cat "$output" >&2
  echo "slurm: the tables of the Slurm job differ from the single-machine build" >&2
  exit 1
fi
echo "slurm: $set_name from job $MOCK_SLURM_JOB_ID ($MOCK_SLURM_NODES mock nodes) equals the single-machine build"
