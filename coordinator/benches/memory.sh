#!/usr/bin/env bash
# Peak resident memory and CPU of the builds of issue 24, one after the other, in one run:
# each build under `/usr/bin/time -v`, its files' sha256 and its `inspect --plan` figure.
#
#   coordinator/benches/memory.sh BIN OUT [--zib GENPDB] [--heavy] [--only NAME]...
#
# BIN: a release `tilepdb-coordinator`; OUT: a scratch directory (each build's tables go in
# OUT/NAME, removed after its sha256 is taken); --zib: the ZIB code's `genpdb` (built from a
# snapshot of github:clausecker/24puzzle with `make CC=gcc`), run on the same 24-puzzle 6-tile
# table; --heavy: also the 15-puzzle 7-8 sets and the 24-puzzle 7-tile minimized table (several
# GB and minutes each); --only NAME: only the rows named (repeatable). Builds run one at a time
# with two threads. One line per row:
#
#   NAME  peak-RSS-MiB  user+sys-s  wall  plan-MiB  sha256-of-the-files (first 16 hex digits)
#
# The figures and the date they were taken are recorded in docs/benchmarks.md.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,16p' "$0"
    exit 2
fi
BIN=$(realpath "$1")
OUT=$2
shift 2
ZIB=""
HEAVY=0
ONLY=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --zib) ZIB=$(realpath "$2"); shift 2 ;;
        --heavy) HEAVY=1; shift ;;
        --only) ONLY+=("$2"); shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

wanted() {
    [[ ${#ONLY[@]} -eq 0 ]] && return 0
    local n
    for n in "${ONLY[@]}"; do [[ $n == "$1" ]] && return 0; done
    return 1
}

# measure NAME DIR CMD...: runs CMD under /usr/bin/time -v in DIR; prints the peak (MiB), the
# CPU (user + sys) and the wall time.
measure() {
    local name=$1 dir=$2
    shift 2
    local log="$OUT/$name.time"
    (cd "$dir" && /usr/bin/time -v "$@" >"$OUT/$name.out" 2>"$log") || {
        echo "$name: the command failed, see $OUT/$name.out and $log" >&2
        return 1
    }
    awk -F': ' '
        /Maximum resident set size/ { rss = $2 }
        /User time/ { user = $2 }
        /System time/ { sys = $2 }
        /Elapsed \(wall clock\)/ { wall = $2 }
        END { printf "%.1f MiB\t%.1f + %.1f s\t%s", rss / 1024, user, sys, wall }' "$log"
}

# row NAME ARGS...: `build ARGS --out OUT/NAME --threads 2`, measured, with its plan and the
# sha256 of its files.
row() {
    local name=$1
    shift
    wanted "$name" || return 0
    local dir="$OUT/$name"
    rm -rf "$dir"
    mkdir -p "$dir"
    local figures plan sums
    figures=$(measure "$name" "$dir" "$BIN" build "$@" --out "$dir" --threads 2 --rebuild)
    local key=build_memory_bytes args=()
    local a
    for a in "$@"; do
        if [[ $a == --no-proof ]]; then key=build_memory_no_proof_bytes; else args+=("$a"); fi
    done
    plan=$("$BIN" inspect --plan "${args[@]}" --json |
        sed -n "s/.*\"$key\": *\([0-9]*\).*/\1/p" | head -1)
    sums=$(cd "$dir" && find . -name '*.pdb' | sort | xargs sha256sum | sha256sum | cut -c1-16)
    printf '%s\t%s\tplan %.1f MiB\t%s\n' "$name" "$figures" "$(echo "${plan:-0} / 1048576" | bc -l)" "$sums"
    rm -rf "$dir"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $("$BIN" --version 2>/dev/null || echo "$BIN"), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# How many names of the order the release program is linked in are still its symbols: a change
# to the code a build runs changes their hashes (coordinator/link/order-functions.sh makes the
# file again).
order="$(dirname "$0")/../link/function-order.txt"
if command -v nm >/dev/null && [[ -f $order ]]; then
    echo "# function order: $(nm "$BIN" | awk '{print $NF}' | sort -u | comm -12 - <(sort -u "$order") | wc -l) of $(wc -l <"$order") names of $order in the program"
fi
row 15-663-minimized
row 15-555-zero-aware-byte --partition 15:5-5-5 --blank zero-aware
row 15-555-zero-aware-1bit --partition 15:5-5-5 --blank zero-aware --encoding 1-bit
row 24-6-zero-aware-byte --puzzle 24 --pattern 1,2,5,6,7,12 --blank zero-aware
row 24-6-zero-aware-1bit --puzzle 24 --pattern 1,2,5,6,7,12 --blank zero-aware --encoding 1-bit
row 24-6-zero-aware-1bit-no-proof --puzzle 24 --pattern 1,2,5,6,7,12 --blank zero-aware --encoding 1-bit --no-proof
row 24-6-minimized --puzzle 24 --pattern 1,2,5,6,7,12
# Two tables in one process: the second must not peak above the first (what the first frees
# goes back to the system).
row 24-6-6-zero-aware-1bit --puzzle 24 --pattern 1,2,5,6,7,12 --pattern 3,4,8,9,13,14 --blank zero-aware --encoding 1-bit
if [[ -n $ZIB ]] && wanted zib-24-6; then
    mkdir -p "$OUT/zib"
    figures=$(measure zib-24-6 "$OUT/zib" "$ZIB" -j 2 -t 0,1,2,5,6,7,12 -f z.pdb)
    printf 'zib-24-6\t%s\t-\t%s\n' "$figures" "$(sha256sum "$OUT/zib/z.pdb" | cut -c1-16)"
    rm -rf "$OUT/zib"
fi
if [[ $HEAVY == 1 ]]; then
    row 15-78-minimized --partition 15:7-8
    row 24-7-minimized --puzzle 24 --pattern 1,2,5,6,7,10,11
    row 15-78-aware-mod3 --partition 15:7-8 --blank aware --encoding mod3
fi
