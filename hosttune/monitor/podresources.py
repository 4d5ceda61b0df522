"""Which Kubernetes pod each GPU is assigned to, by name: the kubelet's pod-resources API (gRPC,
`v1.PodResourcesLister/List` on /var/lib/kubelet/pod-resources/kubelet.sock, Kubernetes >= 1.20), the way
dcgm-exporter maps GPUs to pods. The NVIDIA device plugin's device ids are the GPUs' UUIDs (`GPU-...`, or
`MIG-...` for a MIG instance, which names its parent GPU's index in the monitor only through NVML, so it is kept
as the id the kubelet gave); the monitor then says `namespace/name` instead of the pod UID it reads from a
process's cgroup (monitor/jobs.py), and names pods that NVML lists no process for.

Optional: it needs grpcio (python3-grpcio; not a package dependency), a socket, and the right to connect to it (root:
the kubelet makes the directory 0750 root's). Without any of those `PodResources.assignments()` is None and the
monitor keeps the pod UIDs. The reply is root's kubelet's, still read as data: at most MAX_REPLY bytes, the three
messages' few fields decoded by hand from protobuf's wire format (no generated code, no protobuf dependency), every
name checked against Kubernetes' own rules (RFC 1123 labels and subdomains, at most 253 characters) and a
device id against the characters a UUID has. Asked at most every REFRESH_S seconds (one call lists every pod on
the node).
"""

import os
import re
import time
from typing import Dict, List, Optional, Tuple

from hosttune import trust

SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
METHOD = "/v1.PodResourcesLister/List"
MAX_REPLY = 16 << 20  # a node's every pod, container and device id: far below this
TIMEOUT_S = 2.0
REFRESH_S = 15.0
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/mig-")  # the device plugin's resource names (mig-1g.5gb, ...)
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # RFC 1123 subdomain (pods) and label (namespaces)
_DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}")


class Malformed(ValueError):
    pass


def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise Malformed("truncated varint")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields(buf: bytes) -> Dict[int, List[bytes]]:
    """A protobuf message's length-delimited fields (strings, bytes, sub-messages) by number; varint and fixed
    fields are skipped (none of the fields read here is one). Raises Malformed."""
    out: Dict[int, List[bytes]] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = _varint(buf, i)
            if i + size > len(buf):
                raise Malformed("field past the end")
            out.setdefault(number, []).append(buf[i:i + size])
            i += size
        else:
            raise Malformed(f"wire type {wire}")
        if i > len(buf):
            raise Malformed("field past the end")
    return out


def _text(raw: bytes, pattern: "re.Pattern[str]") -> str:
    try:
        value = raw.decode("ascii")
    except UnicodeDecodeError:
        raise Malformed("not ASCII") from None
    if not pattern.fullmatch(value):
        raise Malformed(f"unexpected name {value[:40]!r}")
    return value


def parse_list(reply: bytes) -> Dict[str, Dict[str, str]]:
    """ListPodResourcesResponse -> {device id: {"namespace", "pod", "container"}} for the GPU resources. Raises
    Malformed (the whole reply is then not used)."""
    out: Dict[str, Dict[str, str]] = {}
    for pod in fields(reply).get(1, []):  # repeated PodResources pod_resources = 1
        p = fields(pod)
        name = _text(p.get(1, [b""])[-1], _NAME)  # string name = 1
        namespace = _text(p.get(2, [b""])[-1], _NAME)  # string namespace = 2
        for container in p.get(3, []):  # repeated ContainerResources containers = 3
            c = fields(container)
            cname = _text(c.get(1, [b""])[-1], _NAME)
            for devices in c.get(2, []):  # repeated ContainerDevices devices = 2
                d = fields(devices)
                resource = d.get(1, [b""])[-1].decode("ascii", "replace")  # string resource_name = 1
                if not resource.startswith(GPU_RESOURCES):
                    continue
                for dev in d.get(2, []):  # repeated string device_ids = 2
                    out[_text(dev, _DEVICE)] = {"namespace": namespace, "pod": name, "container": cname}
    return out


class PodResources:
    """The kubelet's GPU assignments, asked at most every REFRESH_S seconds."""

    def __init__(self, socket: str = SOCKET) -> None:
        self.socket = socket
        self.problem: Optional[str] = None  # why the last ask gave nothing (None: it answered, or no socket)
        self._last: Optional[Dict[str, Dict[str, str]]] = None
        self._asked = float("-inf")

    def assignments(self) -> Optional[Dict[str, Dict[str, str]]]:
        """{GPU UUID (or MIG device id): {"namespace", "pod", "container"}}, or None when the API cannot be asked."""
        now = time.monotonic()
        if now - self._asked >= REFRESH_S:
            self._asked = now
            self._last = self._ask()
        return self._last

    def _ask(self) -> Optional[Dict[str, Dict[str, str]]]:
        if not os.path.exists(self.socket):
            self.problem = None
            return None
        _real, why = trust.problem(os.path.dirname(self.socket), kind="dir")
        if why is not None:  # a socket in a directory another user controls is not the kubelet's
            self.problem = f"{self.socket}: {why}"
            return None
        try:
            import grpc
        except ImportError:
            self.problem = "grpcio is not installed: pods are named by their UID"
            return None
        try:
            with grpc.insecure_channel(f"unix://{self.socket}",
                                       options=[("grpc.max_receive_message_length", MAX_REPLY)]) as channel:
                call = channel.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
                reply = call(b"", timeout=TIMEOUT_S)  # ListPodResourcesRequest has no fields
            found = parse_list(reply)
        except (grpc.RpcError, Malformed) as exc:
            self.problem = f"{self.socket}: {_short(exc)}"
            return None
        self.problem = None
        return found


def _short(exc: Exception) -> str:
    details = getattr(exc, "details", None)
    text = details() if callable(details) else str(exc)
    return (text or type(exc).__name__).splitlines()[0][:200]
