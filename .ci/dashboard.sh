#!/usr/bin/env bash
# The live dashboard in a real browser: a coordinator (`serve --http-listen --keep-serving`)
# and two worker processes build a set on 127.0.0.1 while headless Chromium loads the page.
# During the build its DOM must show a table in progress and both workers; after the job
# (still served) every table written with its histogram and the states of each of its layers
# (as /api/status has them, none missing or 0). Screenshots of both moments are kept
# in $TILEPDB_ARTIFACTS (default target/test-artifacts): dashboard-during.png,
# dashboard-after.png.
#
#   .ci/dashboard.sh [JOB ARGUMENTS]     # default: --partition 15:6-6-3 --blank aware
#
# Needs chromium (Debian: apt-get install chromium) and python3. The programs come from
# TILEPDB_BIN if set, else from a release build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then set -- --partition 15:6-6-3 --blank aware; fi
if [ -n "${TILEPDB_BIN:-}" ]; then
  bin=$(cd "$TILEPDB_BIN" && pwd)
else
  (cd "$root" && cargo build --release -q -p tilepdb-coordinator -p tilepdb-worker)
  bin=${CARGO_TARGET_DIR:-$root/target}/release
fi
artifacts=${TILEPDB_ARTIFACTS:-$root/target/test-artifacts}
mkdir -p "$artifacts"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export TILEPDB_TOKEN=dashboard-test-token RUST_LOG=info

"$bin/tilepdb-coordinator" serve "$@" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --keep-serving --data-dir "$work/data" --out "$work/out" --address-file "$work/address" \
  2>"$work/log" &
pids+=($!)
# The addresses bound, from the file serve writes whole once it listens.
http=
grpc=
for _ in $(seq 300); do
  if [ -s "$work/address" ]; then
    grpc=$(awk '$1 == "grpc" { print $2 }' "$work/address")
    http=$(awk '$1 == "http" { print $2 }' "$work/address")
    break
  fi
  sleep 0.1
done
[ -n "$http" ] || { cat "$work/log" >&2; echo "dashboard: no address file" >&2; exit 1; }
for i in 1 2; do
  "$bin/tilepdb-worker" --coordinator "http://$grpc" --threads 1 --name "dashboard-worker-$i" \
    2>/dev/null &
  pids+=($!)
done

# Waits until the status JSON satisfies a Python expression over `s`.
wait_status() {
  python3 - "$http" "$1" <<'PY'
import json, sys, time, urllib.request
addr, condition = sys.argv[1], sys.argv[2]
deadline = time.time() + 600
while time.time() < deadline:
    s = json.load(urllib.request.urlopen(f"http://{addr}/api/status", timeout=10))
    if eval(condition, {"s": s}):
        sys.exit(0)
    time.sleep(0.2)
sys.exit(f"dashboard: the status never satisfied {condition}")
PY
}

browser() {
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$(mktemp -d)" \
    --hide-scrollbars --window-size=1280,1100 --virtual-time-budget=5000 "$@" 2>/dev/null
}

wait_status 'any(t["state"] == "building" and 0.05 < t["fraction"] < 0.9 for t in s["tables"]) and sum(w["alive"] for w in s["workers"]) >= 2'
browser --dump-dom "http://$http/" >"$work/during.html"
browser --screenshot="$artifacts/dashboard-during.png" "http://$http/"
grep -q 'class="badge building"' "$work/during.html" || { echo "dashboard: no table shown building" >&2; exit 1; }
grep -q 'dashboard-worker-1' "$work/during.html" && grep -q 'dashboard-worker-2' "$work/during.html" ||
  { echo "dashboard: the page does not show both workers" >&2; exit 1; }
grep -q 'data-done="no"' "$work/during.html" || { echo "dashboard: the page did not render a status" >&2; exit 1; }

wait_status 's["done"]'
browser --dump-dom "http://$http/" >"$work/after.html"
browser --screenshot="$artifacts/dashboard-after.png" "http://$http/"
tables=$(python3 -c 'import json,sys,urllib.request; print(len(json.load(urllib.request.urlopen(f"http://{sys.argv[1]}/api/status"))["tables"]))' "$http")
grep -q 'data-done="yes"' "$work/after.html" || { echo "dashboard: the page does not show the job done" >&2; exit 1; }
histograms=$(grep -o 'data-table="[0-9]*"' "$work/after.html" | wc -l)
[ "$histograms" = "$tables" ] || { echo "dashboard: $histograms histogram(s) shown for $tables table(s)" >&2; exit 1; }
# Every layer of every table, as the coordinator recorded it (none 0, however fast the layer),
# in /api/status and on the page.
python3 - "$http" "$work/after.html" <<'PY' || exit 1
import html, json, re, sys, urllib.request
addr, page = sys.argv[1], open(sys.argv[2]).read()
s = json.load(urllib.request.urlopen(f"http://{addr}/api/status", timeout=10))
for t in s["tables"]:
    layers = t["layers"]
    if len(layers) < 2 or 0 in layers or sum(layers) != t["states_found"]:
        sys.exit(f"dashboard: table {t['index'] + 1}'s layers {layers} are not every layer's states ({t['states_found']} found)")
    cell = re.search(rf'data-layers="{t["index"]}">([^<]*)<', page)
    shown = html.unescape(cell.group(1)) if cell else None
    want = " · ".join(f"{n:,}" for n in layers)
    if shown != want:
        sys.exit(f"dashboard: table {t['index'] + 1}'s layers shown as {shown!r}, not {want!r}")
PY
echo "dashboard: during the build a table in progress and both workers, after it $tables histograms and every layer's states; screenshots in $artifacts"
