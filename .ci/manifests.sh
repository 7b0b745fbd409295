#!/usr/bin/env bash
# Every Kubernetes manifest in deploy/ validated offline against the Kubernetes API schemas
# (kubernetes-validate --strict: unknown fields are errors) and linted (yamllint).
#
#   pip install kubernetes-validate yamllint && .ci/manifests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t manifests < <(find deploy -name '*.yaml' | sort)
[ "${#manifests[@]}" -gt 0 ] || { echo "manifests: no manifest in deploy/" >&2; exit 1; }
yamllint --strict -c .yamllint.yaml "${manifests[@]}"
kubernetes-validate --strict --quiet "${manifests[@]}"
echo "manifests: ${#manifests[@]} file(s) valid (kubernetes-validate --strict) and lint-free (yamllint)"
