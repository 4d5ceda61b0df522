"""contrib/kubernetes: the manifests build with kustomize (`kubectl kustomize`), validate offline against the
Kubernetes API schemas (kubernetes-validate, strict: an unknown field fails), and are wired together (Service ->
pods, ServiceMonitor -> Service, Prometheus annotations -> the exporter's port, each hosttune command line accepted
by hosttune's own CLI, the NPD plugin config the same as contrib/node-problem-detector's).

No cluster is reachable here: what a real node adds (the NVIDIA runtime class, NVML, node-problem-detector's
binary, the Prometheus Operator's CRDs) is not exercised. The ServiceMonitor has no schema offline (a CRD): its
selector and port are checked against the Service instead. Each check is shown to fail on a broken copy."""

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import REPO, cli_runner

from hosttune.cli import cli

K8S = REPO / "contrib" / "kubernetes"
TREES = ("", "tune-apply", "tune-revert")  # the kustomizations: the node daemons, and the two Jobs
VERSIONS = ("1.28.0", None)  # the oldest Kubernetes still common on GPU clusters, and kubernetes-validate's latest


def _kustomize(where: Path) -> List[Dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: `kubectl kustomize` builds contrib/kubernetes")
    res = subprocess.run([kubectl, "kustomize", str(where)], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise AssertionError(f"kubectl kustomize {where} failed: {res.stderr.strip()[-2000:]}")
    return [doc for doc in yaml.safe_load_all(res.stdout) if doc]


def _validator() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        pytest.skip("kubernetes-validate is not installed (pip install kubernetes-validate): it carries the "
                    "Kubernetes API schemas and validates offline")
    return kubernetes_validate


def _schema_problems(docs: List[Dict[str, Any]]) -> List[str]:
    """Every resource against the schemas of each version in VERSIONS, strictly; the CRD kinds are left to
    _wiring_problems. Empty when all pass."""
    kv = _validator()
    problems = []
    for doc in docs:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            continue
        for version in VERSIONS:
            try:
                kv.validate(doc, version or kv.latest_version(), strict=True)
            except kv.ValidationError as exc:
                problems.append(f"{doc['kind']}/{doc['metadata']['name']} ({version or 'latest'}): {exc.message}")
            except (kv.SchemaNotFoundError, kv.InvalidSchemaError) as exc:
                problems.append(f"{doc['kind']}/{doc['metadata']['name']} ({version or 'latest'}): {exc}")
    return problems


def _by_kind(docs: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _pod(doc: Dict[str, Any]) -> Dict[str, Any]:
    return doc["spec"]["template"]  # type: ignore[no-any-return]


def _cli_accepts(args: List[str]) -> str:
    """'' when hosttune's CLI parses `args` (with --help added, it stops before running anything), else why."""
    res = cli_runner().invoke(cli, [*args, "--help"])
    return "" if res.exit_code == 0 else f"hosttune {' '.join(args)}: {res.output.strip()[-300:]}"


def _monitor_problems(docs: List[Dict[str, Any]]) -> List[str]:
    problems = []
    ds = {d["metadata"]["name"]: d for d in _by_kind(docs, "DaemonSet")}
    pod = _pod(ds["hosttune-monitor"])
    spec = pod["spec"]
    if not spec.get("hostPID") or spec.get("runtimeClassName") != "nvidia":
        problems.append("the monitor needs hostPID and runtimeClassName nvidia")
    monitor = next(c for c in spec["containers"] if c["name"] == "monitor")
    env = {e["name"]: e.get("value") for e in monitor.get("env", [])}
    if env.get("NVIDIA_VISIBLE_DEVICES") != "all":
        problems.append("the monitor container needs NVIDIA_VISIBLE_DEVICES=all")
    problems += [p for p in [_cli_accepts(monitor["args"])] if p]
    ports = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
    notes = pod["metadata"].get("annotations", {})
    if notes.get("prometheus.io/scrape") != "true" or int(notes.get("prometheus.io/port", -1)) != ports.get("metrics"):
        problems.append(f"prometheus.io annotations {notes} do not name the metrics port {ports}")
    textfile = next(a.split("=", 1)[1] for c in spec["containers"] for a in c.get("args", [])
                    if a.startswith("--collector.textfile.directory="))
    given = monitor["args"][monitor["args"].index("--textfile-dir") + 1]
    if textfile != given:
        problems.append(f"node_exporter reads {textfile}, the monitor writes {given}")
    svc = _by_kind(docs, "Service")[0]
    labels = pod["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in svc["spec"]["selector"].items()):
        problems.append(f"Service selector {svc['spec']['selector']} selects no monitor pod ({labels})")
    if not any(p.get("targetPort") in ports or p.get("targetPort") in ports.values() for p in svc["spec"]["ports"]):
        problems.append("the Service's targetPort is no port of the monitor pod")
    for sm in _by_kind(docs, "ServiceMonitor"):
        want = sm["spec"]["selector"]["matchLabels"]
        if any(svc["metadata"]["labels"].get(k) != v for k, v in want.items()):
            problems.append(f"ServiceMonitor selects {want}, the Service has {svc['metadata']['labels']}")
        names = {p["name"] for p in svc["spec"]["ports"]}
        problems += [f"ServiceMonitor port {e.get('port')} is not the Service's" for e in sm["spec"]["endpoints"]
                     if e.get("port") not in names]
    return problems


def _npd_problems(docs: List[Dict[str, Any]], tree: Path) -> List[str]:
    problems = []
    spec = _pod(next(d for d in _by_kind(docs, "DaemonSet") if d["metadata"]["name"] == "hosttune-npd"))["spec"]
    cms = {d["metadata"]["name"]: d for d in _by_kind(docs, "ConfigMap")}
    volume = next(v for v in spec["volumes"] if "configMap" in v)
    if volume["configMap"]["name"] not in cms:
        problems.append(f"the NPD config volume names ConfigMap {volume['configMap']['name']}, not made")
        return problems
    plugin = json.loads(cms[volume["configMap"]["name"]]["data"]["hosttune-doctor.json"])
    if plugin != json.loads((tree.parent / "node-problem-detector" / "hosttune-doctor.json").read_text()):
        problems.append("hosttune-doctor.json differs from contrib/node-problem-detector's")
    for rule in plugin["rules"]:
        problems += [p for p in [_cli_accepts(rule["args"])] if p]
    sas = {d["metadata"]["name"] for d in _by_kind(docs, "ServiceAccount")}
    if spec.get("serviceAccountName") not in sas:
        problems.append("the NPD pod's service account is not made")
    return problems


def _job_problems(apply: List[Dict[str, Any]], revert: List[Dict[str, Any]]) -> List[str]:
    problems = []
    (a,), (r,) = _by_kind(apply, "Job"), _by_kind(revert, "Job")
    ca, cr = _pod(a)["spec"]["containers"][0], _pod(r)["spec"]["containers"][0]
    if ca["args"][:2] != ["tune", "apply"] or cr["args"][:2] != ["tune", "revert"]:
        problems.append(f"the Jobs run {ca['args']} and {cr['args']}")
    problems += [p for p in (_cli_accepts(ca["args"]), _cli_accepts(cr["args"])) if p]
    for job, c in ((a, ca), (r, cr)):
        if not c.get("securityContext", {}).get("privileged") or not _pod(job)["spec"].get("hostPID"):
            problems.append(f"{job['metadata']['name']} must be privileged in the host's PID namespace")
    same = ("volumes", "hostPID", "hostNetwork", "hostIPC", "nodeName")
    if any(_pod(a)["spec"].get(k) != _pod(r)["spec"].get(k) for k in same) or ca["volumeMounts"] != cr["volumeMounts"]:
        problems.append("the revert Job does not see the node as the apply Job does")
    return problems


def _all_problems(tree: Path) -> List[str]:
    built = {name: _kustomize(tree / name) for name in TREES}
    problems: List[str] = []
    for docs in built.values():
        problems += _schema_problems(docs)
        # the API server requires what the schema leaves optional (a controller's template may be filled in later)
        problems += [f"{d['kind']}/{d['metadata']['name']}: container {c['name']} has no image" for d in docs
                     if "template" in d.get("spec", {})
                     for c in _pod(d)["spec"].get("initContainers", []) + _pod(d)["spec"]["containers"]
                     if not c.get("image")]
    problems += _monitor_problems(built[""]) + _npd_problems(built[""], tree)
    problems += _job_problems(built["tune-apply"], built["tune-revert"])
    return problems


# ---- the tests ---------------------------------------------------------------------------------------------------
def test_the_manifests_build_validate_and_fit_together() -> None:
    _validator()
    assert _all_problems(K8S) == []


def test_the_image_is_hosttunes_and_kustomize_can_point_it_elsewhere(tmp_path: Path) -> None:
    for name in TREES:
        images = {c["image"] for d in _kustomize(K8S / name) if "template" in d.get("spec", {})
                  for c in _pod(d)["spec"].get("initContainers", []) + _pod(d)["spec"]["containers"]}
        assert "localhost/hosttune:latest" in images, (name, images)
    tree = tmp_path / "k8s"
    shutil.copytree(K8S.parent, tree)  # contrib/, so that the node-problem-detector sibling comes along
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources:\n  - ../k8s/kubernetes\nimages:\n  - name: localhost/hosttune\n"
        "    newName: registry.example.com/gpu/hosttune\n    newTag: 1.2.3\n")
    images = {c["image"] for d in _kustomize(overlay) if "template" in d.get("spec", {})
              for c in _pod(d)["spec"].get("initContainers", []) + _pod(d)["spec"]["containers"]}
    assert "registry.example.com/gpu/hosttune:1.2.3" in images and not any("localhost/" in i for i in images)


def _breakage(tree: Path, rel: str, old: str, new: str) -> None:
    path = tree / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("rel, old, new, expect", [
    # a misspelt field: valid YAML, but no such field (strict schema)
    ("monitor-daemonset.yaml", "hostPID: true", "hostPid: true", "hostPid"),
    # a wrong type
    ("monitor-daemonset.yaml", "containerPort: 9835", "containerPort: nine", "'nine' is not of type 'integer'"),
    # a Job's container without an image (the schema allows it, the API server does not)
    ("tune-revert/job.yaml", "          image: hosttune\n", "", "has no image"),
    # a misspelt field in a Job's security context
    ("tune-apply/job.yaml", "privileged: true", "privilegd: true", "privilegd"),
    # the Prometheus annotation naming another port than the exporter's
    ("monitor-daemonset.yaml", 'prometheus.io/port: "9835"', 'prometheus.io/port: "9400"', "prometheus.io"),
    # the ServiceMonitor selecting nothing
    ("servicemonitor.yaml", "      app.kubernetes.io/name: hosttune-monitor", "      app: other", "ServiceMonitor"),
    # a hosttune option that does not exist
    ("tune-apply/job.yaml", '"--root", "/host"', '"--rooot", "/host"', "--rooot"),
    # the revert Job on another mount than the apply Job
    ("tune-revert/job.yaml", "mountPath: /host", "mountPath: /node", "revert Job"),
])
def test_a_broken_copy_fails_the_same_checks(tmp_path: Path, rel: str, old: str, new: str, expect: str) -> None:
    _validator()
    tree = tmp_path / "contrib" / "kubernetes"
    shutil.copytree(K8S.parent, tree.parent)
    _breakage(tree, rel, old, new)
    problems = _all_problems(tree)
    assert any(expect in p for p in problems), problems


def test_a_manifest_kustomize_cannot_read_fails(tmp_path: Path) -> None:
    tree = tmp_path / "contrib" / "kubernetes"
    shutil.copytree(K8S.parent, tree.parent)
    (tree / "monitor-service.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: [broken\n")
    with pytest.raises(AssertionError, match="kustomize"):
        _kustomize(tree)
