#!/usr/bin/env bash
# deploy/slurm.sbatch end to end under mock sbatch, srun and scontrol (.ci/slurm-mock/): a
# coordinator and a worker per mock node on this machine (127.0.0.1, a port the OS picks)
# build a small set, which must equal a single-machine build byte for byte; the data
# directory must be keyed by the job id and the output file named by --output. Then
# deploy/slurm-sharded.sbatch: the same set built by 3 shards, 3 tasks of one mock node (they
# share its name, 127.0.0.1, so each listens on a port of its own: SHARD_PORT + its shard id),
# compared file by file (sha256) with the single-machine build.
#
# With TILEPDB_FAULT_CHECK=1, last, a fault: the sharded build again, shard 1's worker killed
# (SIGKILL) in the second table and started again by hand as deploy/README.md says (srun ...
# shard.sh 1: the same shard id and data directory), which restores it from its checkpoints;
# the set must be the same again (5 s to 10 s more). `.ci/run` runs it.
#
#   .ci/slurm.sh [PARTITION]          # default 15:5-5-5
#   TILEPDB_FAULT_CHECK=1 .ci/slurm.sh
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

# same_set DIR: the set in DIR/tables has the files of the single-machine build, with the same
# bytes (sha256).
same_set() {
  diff <(cd "single/$set_name" && sha256sum -- *) <(cd "$1/tables/$set_name" && sha256sum -- *)
}

# The sharded build. The shards' ports: SHARD_PORT and the next two, where nothing listens.
shard_port=
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 20000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
    ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null &&
    ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 2))") 2>/dev/null; then
    shard_port=$p
    break
  fi
done
[ -n "$shard_port" ] || { echo "slurm: no 3 free ports for the shards" >&2; exit 1; }
sharded_job=$((MOCK_SLURM_JOB_ID + 1))
# (a base of its own: in base/tables the set is there already, and would be kept)
if ! MOCK_SLURM_JOB_ID=$sharded_job TILEPDB_BASE=$work/sharded SHARD_LISTEN=127.0.0.1 SHARD_PORT=$shard_port \
  sbatch --nodes=1 --ntasks-per-node=3 --cpus-per-task=1 "$root/deploy/slurm-sharded.sbatch"; then
  cat "tilepdb-$sharded_job.out" >&2 || true
  echo "slurm: the sharded batch script failed" >&2
  exit 1
fi
output=tilepdb-$sharded_job.out
[ -s "$output" ] || { echo "slurm: no output file $output" >&2; exit 1; }
[ -d "sharded/jobs/$sharded_job" ] || { echo "slurm: no data directory sharded/jobs/$sharded_job" >&2; exit 1; }
if ! same_set sharded; then
  cat "$output" >&2
  echo "slurm: the tables of the sharded Slurm job differ from the single-machine build" >&2
  exit 1
fi
grep -q "on 3 shards" "$output" || { cat "$output" >&2; echo "slurm: the job did not build on 3 shards" >&2; exit 1; }
echo "slurm: $set_name from sharded job $sharded_job (3 shards, srun tasks of a mock node) equals the single-machine build"

[ "${TILEPDB_FAULT_CHECK:-0}" = 1 ] || exit 0
# The fault. No restart in the task (SHARD_RESTARTS=0): the task ends with its worker, the
# coordinator frees the shard after 2 s of silence (LEASE_TIMEOUT) and waits for a replacement,
# which is started by hand at once, in a step of its own.
fault_job=$((MOCK_SLURM_JOB_ID + 2))
data=$work/fault/jobs/$fault_job
log=$data/coordinator-$fault_job.log
output=tilepdb-$fault_job.out
# (set -m: the job a process group of its own, ended whole if the check fails)
set -m
MOCK_SLURM_JOB_ID=$fault_job TILEPDB_BASE=$work/fault SHARD_LISTEN=127.0.0.1 SHARD_PORT=$shard_port \
  LEASE_TIMEOUT=2 SHARD_RESTARTS=0 \
  sbatch --nodes=1 --ntasks-per-node=3 --cpus-per-task=1 "$root/deploy/slurm-sharded.sbatch" >/dev/null &
batch=$!
set +m
# fault_failed WHY: the end of the fault check, with the logs.
fault_failed() {
  kill -- -"$batch" 2>/dev/null || true
  cat "$output" replacement.log >&2 || true
  echo "slurm: fault check: $1" >&2
  exit 1
}
# The coordinator's progress record (its --data-dir): the job is in its second table.
in_table_1() {
  for _ in $(seq 600); do
    ! grep -qs '"table": 1,' "$data"/*.progress.json || return 0
    kill -0 "$batch" 2>/dev/null || break
    sleep 0.1
  done
  fault_failed "the job's progress record never reached table 1"
}
in_table_1
worker=$(sed -n 's/^tilepdb: shard 1 (worker pid \([0-9]*\)).*/\1/p' "$output" | head -n1)
[ -n "$worker" ] || fault_failed "no worker pid of shard 1 in $output"
kill -KILL "$worker" || fault_failed "shard 1 had exited before it was killed"
# Started at once: it is told the shard is taken and tries again until the coordinator frees it.
srun --jobid="$fault_job" --overlap --nodes=1 --ntasks=1 --nodelist=127.0.0.1 --cpus-per-task=1 \
  bash "$data/shard.sh" 1 2>replacement.log || fault_failed "the replacement of shard 1 failed"
wait "$batch" || fault_failed "the batch script failed"
same_set fault || fault_failed "the tables differ from the single-machine build"
grep -q "restoring lost shards" "$log" || fault_failed "shard 1 was not restored"
echo "slurm: $set_name from sharded job $fault_job, shard 1 killed in table 1 and started again with srun, equals the single-machine build"
