#!/usr/bin/env bash
# Every Kubernetes manifest in deploy/ validated offline against the Kubernetes API schemas
# (kubernetes-validate --strict: unknown fields are errors) and linted (yamllint); then the
# wiring of each sharded build (an Indexed Job of tilepdb-worker shards), which no schema
# sees and no local run tries (podman runs no Indexed Job): see check_sharded below.
#
#   pip install kubernetes-validate yamllint && .ci/manifests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t manifests < <(find deploy -name '*.yaml' | sort)
[ "${#manifests[@]}" -gt 0 ] || { echo "manifests: no manifest in deploy/" >&2; exit 1; }
yamllint --strict -c .yamllint.yaml "${manifests[@]}"
kubernetes-validate --strict --quiet "${manifests[@]}"

# check_sharded FILE...: deploy/ holds a sharded build, and every Job of tilepdb-worker shards
# (Indexed, or given TILEPDB_SHARD) is a whole one: an Indexed Job with restartPolicy Never
# (backoffLimitPerIndex needs it); completions = parallelism = TILEPDB_SHARDS = the --shards of
# the coordinator Job that TILEPDB_COORDINATOR reaches (a port of a Service of the same file
# selecting that Job, whose --listen port the Service targets); TILEPDB_SHARD from the
# completion index; the pods' subdomain a headless Service selecting this Job; TILEPDB_ADVERTISE
# the pod's DNS name, http://$(JOB_NAME)-$(TILEPDB_SHARD).<subdomain>:PORT (JOB_NAME from the
# job-name label), PORT that of TILEPDB_LISTEN and a container port; every $(VAR) defined above
# its use; the coordinator's --http-listen port (dashboard, metrics) a port of its Service. The data directories, from which a replacement restores what was lost: the shard's
# (TILEPDB_DATA_DIR or --data-dir) must be on a volume that outlives the pod (a
# PersistentVolumeClaim, ReadWriteMany if the claim is in the same file: the replacement may
# run on another node) and be the shard's own (the mount's subPathExpr, or the directory,
# names $(TILEPDB_SHARD)); the coordinator's --data-dir on a PersistentVolumeClaim too. Prints
# a line per sharded build.
check_sharded() {
  python3 - "$@" <<'PY'
import re, sys, yaml

JOB_LABEL = "batch.kubernetes.io/job-name"
errors, found = [], 0
for path in sys.argv[1:]:
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = lambda k: [d for d in docs if d["kind"] == k]
    services = {s["metadata"]["name"]: s for s in kinds("Service")}
    jobs = {j["metadata"]["name"]: j for j in kinds("Job")}
    claims = {c["metadata"]["name"]: c for c in kinds("PersistentVolumeClaim")}

    def fail(msg):
        errors.append(f"{path}: {msg}")

    def arg(args, flag):
        """The value of --flag VALUE or --flag=VALUE in args, if any."""
        for i, a in enumerate(args):
            if a == flag and i + 1 < len(args):
                return str(args[i + 1])
            if a.startswith(flag + "="):
                return a.partition("=")[2]
        return None

    def data_volume(pod, container, directory):
        """The mount under which directory lies (the longest mountPath holding it), and the
        PersistentVolumeClaim of its volume (None if the volume is not one)."""
        mounts = [m for m in container.get("volumeMounts", [])
                  if directory == m["mountPath"]
                  or directory.startswith(m["mountPath"].rstrip("/") + "/")]
        if not mounts:
            return None, None
        mount = max(mounts, key=lambda m: len(m["mountPath"]))
        volume = next((v for v in pod.get("volumes", []) if v["name"] == mount["name"]), {})
        claim = volume.get("persistentVolumeClaim", {}).get("claimName")
        return mount, claim

    for name, job in jobs.items():
        spec, pod = job["spec"], job["spec"]["template"]["spec"]
        shard = pod["containers"][0]
        indexed = spec.get("completionMode") == "Indexed"
        sharded = any(e["name"] == "TILEPDB_SHARD" for e in shard.get("env", []))
        if shard.get("command") != ["tilepdb-worker"] or not (indexed or sharded):
            continue
        found, before = found + 1, len(errors)
        if not indexed:
            fail(f"{name}: shard workers run as an Indexed Job (the index is the shard id)")
        env, defined = {}, set()
        for e in shard.get("env", []):
            for ref in re.findall(r"\$\((\w+)\)", str(e.get("value", ""))):
                if ref not in defined:
                    fail(f"{name}: env {e['name']} uses $({ref}) before it is defined")
            defined.add(e["name"])
            env[e["name"]] = e.get("value", e.get("valueFrom"))
        shards = spec.get("completions")
        if not (shards == spec.get("parallelism") == int(env.get("TILEPDB_SHARDS", -1))):
            fail(f"{name}: completions, parallelism and TILEPDB_SHARDS differ")
        if pod.get("restartPolicy") != "Never":
            fail(f"{name}: restartPolicy must be Never (backoffLimitPerIndex)")
        index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        if env.get("TILEPDB_SHARD") != {"fieldRef": {"fieldPath": index}}:
            fail(f"{name}: TILEPDB_SHARD is not the completion index")
        if env.get("JOB_NAME") != {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_LABEL}']"}}:
            fail(f"{name}: JOB_NAME is not the job-name label")
        sub = pod.get("subdomain")
        headless = services.get(sub, {}).get("spec", {})
        if headless.get("clusterIP") != "None" or headless.get("selector") != {JOB_LABEL: name}:
            fail(f"{name}: subdomain {sub!r} is not a headless Service selecting this Job")
        port = str(env.get("TILEPDB_LISTEN", "")).rpartition(":")[2]
        if env.get("TILEPDB_ADVERTISE") != f"http://$(JOB_NAME)-$(TILEPDB_SHARD).{sub}:{port}":
            fail(f"{name}: TILEPDB_ADVERTISE is not the pod's DNS name on the listening port")
        if port not in [str(p["containerPort"]) for p in shard.get("ports", [])]:
            fail(f"{name}: the listening port {port} is not a container port")
        m = re.fullmatch(r"http://([\w-]+):(\d+)", str(env.get("TILEPDB_COORDINATOR")))
        front = services.get(m.group(1), {}).get("spec", {}) if m else {}
        coordinator = jobs.get(front.get("selector", {}).get(JOB_LABEL))
        if not coordinator or m.group(2) not in [str(p["port"]) for p in front["ports"]]:
            fail(f"{name}: TILEPDB_COORDINATOR is not a Service port of a coordinator Job")
            continue
        served = coordinator["spec"]["template"]["spec"]["containers"][0]
        args, ports = served["args"], {p["name"]: p["containerPort"] for p in served["ports"]}
        if "--shards" not in args or int(args[args.index("--shards") + 1]) != shards:
            fail(f"{name}: its coordinator does not serve --shards {shards}")
        target = next(p["targetPort"] for p in front["ports"] if str(p["port"]) == m.group(2))
        listen = args[args.index("--listen") + 1] if "--listen" in args else ""
        if listen.rpartition(":")[2] != str(ports.get(target, target)):
            fail(f"{name}: its coordinator does not --listen on the Service's target port")
        # The dashboard and metrics: --http-listen on a container port that a port of the
        # coordinator's Service targets.
        http = (arg(args, "--http-listen") or "").rpartition(":")[2]
        if not http:
            fail(f"{name}: its coordinator has no --http-listen (no dashboard, no metrics)")
        elif http not in [str(ports.get(p["targetPort"], p["targetPort"])) for p in front["ports"]]:
            fail(f"{name}: its coordinator's --http-listen port {http} is not a port of its "
                 "Service")
        # The shard's data directory: on a volume that outlives the pod, the shard's own.
        directory = env.get("TILEPDB_DATA_DIR") or arg(shard.get("args", []), "--data-dir")
        if not isinstance(directory, str) or not directory:
            fail(f"{name}: no data directory for the shards (TILEPDB_DATA_DIR or --data-dir): "
                 "a replacement could not restore its shard")
        else:
            mount, claim = data_volume(pod, shard, directory)
            if not claim:
                fail(f"{name}: the shards' data directory {directory} is not on a "
                     "PersistentVolumeClaim (it must outlive the pod)")
            else:
                per_shard = mount.get("subPathExpr", "") + directory
                if "$(TILEPDB_SHARD)" not in per_shard:
                    fail(f"{name}: the shards' data directory {directory} is not the shard's "
                         "own (name $(TILEPDB_SHARD) in the mount's subPathExpr or in it)")
                for ref in re.findall(r"\$\((\w+)\)", mount.get("subPathExpr", "")):
                    if ref not in defined:
                        fail(f"{name}: subPathExpr of {mount['name']} uses $({ref}), not in env")
                modes = claims.get(claim, {}).get("spec", {}).get("accessModes")
                if modes is not None and "ReadWriteMany" not in modes:
                    fail(f"{name}: claim {claim} of the shards' data directories is not "
                         "ReadWriteMany (a replacement may run on another node)")
        # The coordinator's data directory, from which a restarted coordinator takes the job up.
        served_pod = coordinator["spec"]["template"]["spec"]
        control = arg(args, "--data-dir")
        if not control:
            fail(f"{name}: its coordinator has no --data-dir (a restarted one could not take "
                 "the job up)")
        elif not data_volume(served_pod, served, control)[1]:
            fail(f"{name}: its coordinator's --data-dir {control} is not on a "
                 "PersistentVolumeClaim")
        else:
            served_env = {e["name"] for e in served.get("env", [])}
            for ref in re.findall(r"\$\((\w+)\)", control):
                if ref not in served_env:
                    fail(f"{name}: its coordinator's --data-dir uses $({ref}), not in its env")
        if len(errors) == before:
            print(f"manifests: {path}: {shards} shards of Indexed Job {name}, coordinator "
                  f"{coordinator['metadata']['name']}: wired together, data directories "
                  f"{directory} (per shard) and {control}")
if not found:
    errors.append("no sharded build (an Indexed Job of tilepdb-worker shards) in deploy/")
for e in errors:
    print(f"manifests: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}
check_sharded "${manifests[@]}"
echo "manifests: ${#manifests[@]} file(s) valid (kubernetes-validate --strict) and lint-free (yamllint)"
