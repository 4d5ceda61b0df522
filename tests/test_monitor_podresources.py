"""Pods by name from the kubelet's pod-resources API (monitor/podresources.py): a real gRPC server in the test
speaks `v1.PodResourcesLister/List` on a unix socket, its replies built by the protobuf library from the v1 API's
message layout (kubelet pkg/apis/podresources/v1/api.proto: field numbers and types as there), independent of the
monitor's hand-written decoder. Needs grpcio and protobuf (optional dependencies); skipped without them."""

import os
import shutil
import tempfile
from concurrent import futures
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest
from conftest import OtherUser, a100

grpc = pytest.importorskip("grpc")
descriptor_pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
from google.protobuf import descriptor_pool, message_factory  # noqa: E402

from hosttune.monitor import jobs, podresources  # noqa: E402
from hosttune.monitor.config import MonitorConfig  # noqa: E402
from hosttune.monitor.daemon import Monitor  # noqa: E402
from hosttune.monitor.sinks import render_textfile  # noqa: E402

POD_UID = "5f1c2a9e-7b3d-4c1e-9a8f-0123456789ab"
GPUS = [a100(0, "3B"), a100(1, "5E"), a100(2, "86")]
F = descriptor_pb2.FieldDescriptorProto


def _classes() -> Dict[str, Any]:
    """The v1 API's messages (the fields the kubelet sends, cpu ids and topology included)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="hosttune_test_podresources.proto", package="v1", syntax="proto3")

    def msg(name: str, *spec: Any) -> None:
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, label, type_name in spec:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("NUMANode", ("ID", 1, F.TYPE_INT64, opt, None))
    msg("TopologyInfo", ("nodes", 1, F.TYPE_MESSAGE, rep, ".v1.NUMANode"))
    msg("ContainerDevices", ("resource_name", 1, F.TYPE_STRING, opt, None),
        ("device_ids", 2, F.TYPE_STRING, rep, None), ("topology", 3, F.TYPE_MESSAGE, opt, ".v1.TopologyInfo"))
    msg("ContainerMemory", ("memory_type", 1, F.TYPE_STRING, opt, None), ("size", 2, F.TYPE_UINT64, opt, None))
    msg("ContainerResources", ("name", 1, F.TYPE_STRING, opt, None),
        ("devices", 2, F.TYPE_MESSAGE, rep, ".v1.ContainerDevices"), ("cpu_ids", 3, F.TYPE_INT64, rep, None),
        ("memory", 4, F.TYPE_MESSAGE, rep, ".v1.ContainerMemory"))
    msg("PodResources", ("name", 1, F.TYPE_STRING, opt, None), ("namespace", 2, F.TYPE_STRING, opt, None),
        ("containers", 3, F.TYPE_MESSAGE, rep, ".v1.ContainerResources"))
    msg("ListPodResourcesResponse", ("pod_resources", 1, F.TYPE_MESSAGE, rep, ".v1.PodResources"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"v1.{m.name}"))
            for m in fdp.message_type}


M = _classes()


def reply(pods: List[Dict[str, Any]]) -> bytes:
    resp = M["ListPodResourcesResponse"]()
    for pod in pods:
        p = resp.pod_resources.add(name=pod["name"], namespace=pod["namespace"])
        for cname, devices in pod["containers"].items():
            c = p.containers.add(name=cname, cpu_ids=[0, 1, 17])
            c.memory.add(memory_type="memory", size=1 << 30)
            for resource, ids in devices:
                d = c.devices.add(resource_name=resource, device_ids=ids)
                d.topology.nodes.add(ID=1)
    return bytes(resp.SerializeToString())


PODS = [
    {"name": "trainer-0", "namespace": "ml", "containers": {"main": [("nvidia.com/gpu", [GPUS[0]["uuid"]])],
                                                              "sidecar": []}},
    {"name": "fpga-job", "namespace": "hw", "containers": {"c": [("example.com/fpga", ["fpga0"])]}},
    {"name": "mig-pod", "namespace": "ml", "containers": {"m": [("nvidia.com/mig-1g.10gb",
                                                                  ["MIG-4b4a6a5c-1f0e-5a2b-9e0c-5d5c0c5e5a5b"])]}},
]


@pytest.fixture
def kubelet() -> Iterator[Callable[[Any], str]]:
    """kubelet(answer) -> the socket of a gRPC server whose List returns `answer` (bytes, or a callable of the
    context). In a short directory of its own under /tmp: a unix socket's path must fit in 108 bytes."""
    d = tempfile.mkdtemp(prefix="ht-kubelet-", dir="/tmp")
    servers: List[Any] = []

    def start(answer: Any) -> str:
        sock = os.path.join(d, f"kubelet{len(servers)}.sock")

        def list_(request: bytes, context: Any) -> bytes:
            assert request == b""
            return answer(context) if callable(answer) else answer

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(list_)}),))
        server.add_insecure_port(f"unix://{sock}")
        server.start()
        servers.append(server)
        return sock

    try:
        yield start
    finally:
        for server in servers:
            server.stop(None)
        shutil.rmtree(d, ignore_errors=True)


def test_each_gpu_resource_is_mapped_to_its_pod_and_container(kubelet: Callable[[Any], str]) -> None:
    got = podresources.PodResources(kubelet(reply(PODS))).assignments()
    assert got == {GPUS[0]["uuid"]: {"namespace": "ml", "pod": "trainer-0", "container": "main"},
                   "MIG-4b4a6a5c-1f0e-5a2b-9e0c-5d5c0c5e5a5b": {"namespace": "ml", "pod": "mig-pod",
                                                               "container": "m"}}


def test_the_monitor_names_the_pod_in_place_of_its_uid(
        tmp_path: Path, kubelet: Callable[[Any], str], fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": GPUS})
    mon = Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), root=tmp_path)
    mon.pods = podresources.PodResources(kubelet(reply(PODS)))
    mon.open_sources()
    try:
        rec = mon.take()
    finally:
        mon.close()
    g0, g1, g2 = rec["gpus"]
    assert g0["jobs"] == [{"job": "ml/trainer-0", "kind": "kubernetes", "user": "", "container": "main"}]
    assert not g1.get("jobs") and not g2.get("jobs")  # NVML lists no process there, the kubelet no pod
    text = render_textfile(rec, {"samples": 1}, mon.gpus)
    assert (f'hosttune_job_info{{gpu="0",uuid="{GPUS[0]["uuid"]}",job="ml/trainer-0",kind="kubernetes",user=""}} 1'
            in text), text
    # what a process's cgroup said (the pod UID) gives way to the kubelet's name; a Slurm job on the GPU stays
    gpus = [{"index": 0, "uuid": GPUS[0]["uuid"], "jobs": [
        {"job": POD_UID, "kind": "kubernetes", "user": "alice"}, {"job": "12", "kind": "slurm", "user": "bob"}]}]
    jobs.add_pods(gpus, mon.pods.assignments())
    assert gpus[0]["jobs"] == [{"job": "12", "kind": "slurm", "user": "bob"},
                               {"job": "ml/trainer-0", "kind": "kubernetes", "user": "alice", "container": "main"}]


def _abort(context: Any) -> bytes:
    context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown service v1.PodResourcesLister")
    return b""


@pytest.mark.parametrize("answer, why", [
    (reply([{"name": "Trainer_0", "namespace": "ml", "containers": {"c": [("nvidia.com/gpu", ["GPU-1"])]}}]),
     "unexpected name"),
    (reply([{"name": "t", "namespace": "ml", "containers": {"c": [("nvidia.com/gpu", ["GPU-1\nx"])]}}]),
     "unexpected name"),
    (reply(PODS)[:-3], "past the end"),
    (b"\x0b\x00", "wire type 3"),
    (_abort, "unknown service"),
])
def test_a_reply_that_is_not_the_apis_names_nobody(kubelet: Callable[[Any], str], answer: Any, why: str) -> None:
    pods = podresources.PodResources(kubelet(answer))
    assert pods.assignments() is None
    assert why in (pods.problem or ""), pods.problem


def test_no_socket_is_no_pods_and_no_problem(tmp_path: Path) -> None:
    pods = podresources.PodResources(str(tmp_path / "none.sock"))
    assert pods.assignments() is None and pods.problem is None


def test_a_socket_in_another_users_directory_is_not_asked(
        kubelet: Callable[[Any], str], other_user: OtherUser) -> None:
    sock = Path(kubelet(reply(PODS)))
    os.chown(sock.parent, other_user.uid, other_user.gid)  # they could have put their own server there
    pods = podresources.PodResources(str(sock))
    assert pods.assignments() is None
    assert "owned by nobody" in (pods.problem or ""), pods.problem


def test_it_is_asked_at_most_every_refresh_period(kubelet: Callable[[Any], str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[int] = []

    def answer(context: Any) -> bytes:
        calls.append(1)
        return reply(PODS)

    now: List[float] = [1000.0]
    monkeypatch.setattr(podresources.time, "monotonic", lambda: now[0])
    pods = podresources.PodResources(kubelet(answer))
    first: Optional[Dict[str, Any]] = pods.assignments()
    assert first and pods.assignments() == first and len(calls) == 1
    now[0] += podresources.REFRESH_S
    assert pods.assignments() == first and len(calls) == 2
