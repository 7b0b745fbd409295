#!/usr/bin/env bash
# Writes coordinator/link/function-order.txt: the functions of `tilepdb-coordinator` that a
# single-machine build runs, the most run first, as valgrind's callgrind counts them in the
# build of the 24-puzzle 6-tile zero-aware byte table with its proof (about 20 minutes under
# callgrind). `coordinator/build.rs` hands the file to the linker, which places these
# functions first. Run it again after a change to the code a build runs or a compiler upgrade
# (symbols' hashes change; names that no longer match are ignored), then build the release
# program again.
#
#   coordinator/link/order-functions.sh [BIN]
#
# BIN: the release program to profile (default: target/release/tilepdb-coordinator), built
# alone (`cargo build --release -p tilepdb-coordinator`, as the README's first command builds
# it): built beside other packages, dependencies get other features and symbols other hashes.
# Needs valgrind (`apt-get install valgrind`) and python3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-$here/../../target/release/tilepdb-coordinator}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$bin" build --puzzle 24 --pattern 1,2,5,6,7,12 --blank zero-aware --threads 2 \
    --out "$work/tables" >"$work/log" 2>&1 || { tail -20 "$work/log" >&2; exit 1; }

python3 - "$work/callgrind.out" "$bin" >"$here/function-order.txt" <<'EOF'
import re
import sys

out, program = sys.argv[1], sys.argv[2]
objects, functions = {}, {}
cost = {}
current = None
in_program = False
skip_call_cost = False
name = re.compile(r"^(ob|cob|fn|cfn|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$")
for line in open(out, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    m = name.match(line)
    if m:
        kind, number, text = m.groups()
        if kind in ("ob", "cob") and text:
            objects[number] = text
        if kind in ("fn", "cfn") and text:
            # A recursion depth marker ('2) is callgrind's, not the symbol's.
            functions[number] = re.sub(r"'\d+$", "", text)
        if kind == "ob":
            in_program = objects.get(number) == program
        if kind == "fn":
            current = functions[number] if in_program else None
            if current is not None:
                cost.setdefault(current, 0)
        continue
    if line.startswith("calls="):
        skip_call_cost = True
        continue
    if skip_call_cost:
        skip_call_cost = False
        continue
    parts = line.split()
    if current is not None and len(parts) >= 2 and re.match(r"^([+-]?\d+|\*)$", parts[0]):
        cost[current] += int(parts[1])
for function, _ in sorted(cost.items(), key=lambda kv: (-kv[1], kv[0])):
    # Addresses without a symbol and valgrind's own entries ("(below main)") are no names.
    if not function.startswith(("0x", "(")):
        print(function)
EOF
echo "$(wc -l <"$here/function-order.txt") functions in $here/function-order.txt"
