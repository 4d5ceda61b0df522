"""Pins of mutation round 4 (issue 21) on hosttune/monitor/podresources.py: protobuf's wire format decoded by hand
(varints at their byte edges, every wire type, a field at the exact end or one byte past it), the name rules at
their length edges, and which resources are GPUs. Pure: bytes in."""

from typing import Dict, List

import pytest

from hosttune.monitor import podresources as P
from hosttune.monitor.podresources import Malformed


def vint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def ld(number: int, payload: bytes) -> bytes:
    return vint(number << 3 | 2) + vint(len(payload)) + payload


def test_varint_edges() -> None:
    assert P._varint(b"\x00", 0) == (0, 1)
    assert P._varint(b"\x7f", 0) == (127, 1)
    assert P._varint(b"\x80\x01", 0) == (128, 2)
    assert P._varint(b"\xff\x7f", 0) == (16383, 2)
    assert P._varint(b"x\xac\x02", 1) == (300, 3)
    big = vint(2 ** 63 - 1)
    assert len(big) == 9 and P._varint(big, 0) == (2 ** 63 - 1, 9)
    assert P._varint(vint(2 ** 64 - 1), 0) == (2 ** 64 - 1, 10)  # the tenth byte is shift 63: still read
    for bad in (b"", b"\x80", b"\xff" * 11):
        with pytest.raises(Malformed, match="^truncated varint$"):
            P._varint(bad, 0)


def test_fields_by_wire_type() -> None:
    msg = (vint(1 << 3 | 0) + vint(300) + vint(2 << 3 | 1) + b"\x01" * 8 + vint(3 << 3 | 5) + b"\x02" * 4
           + ld(4, b"abc") + ld(4, b"") + ld(5, b"z"))
    assert P.fields(msg) == {4: [b"abc", b""], 5: [b"z"]}
    assert P.fields(b"") == {}
    assert P.fields(ld(1, b"xy")) == {1: [b"xy"]}  # a field ending exactly at the end
    for bad, why in ((vint(1 << 3 | 2) + vint(3) + b"xy", "field past the end"),
                     (vint(1 << 3 | 1) + b"\x00" * 7, "field past the end"),
                     (vint(1 << 3 | 5) + b"\x00" * 3, "field past the end"),
                     (vint(1 << 3 | 3), "wire type 3"), (vint(1 << 3 | 4), "wire type 4"),
                     (vint(1 << 3 | 7), "wire type 7"), (vint(1 << 3 | 0), "truncated varint")):
        with pytest.raises(Malformed, match=why):
            P.fields(bad)
    assert P.fields(vint(1 << 3 | 1) + b"\x00" * 8) == {}
    assert P.fields(vint(1 << 3 | 5) + b"\x00" * 4) == {}


def _reply(pods: List[Dict]) -> bytes:
    out = b""
    for pod in pods:
        body = ld(1, pod["name"]) + ld(2, pod["ns"])
        for c in pod["containers"]:
            cb = ld(1, c["name"])
            for res, ids in c["devices"]:
                cb += ld(2, ld(1, res) + b"".join(ld(2, i) for i in ids))
            body += ld(3, cb)
        out += ld(1, body)
    return out


def test_parse_list_maps_gpu_devices_only() -> None:
    reply = _reply([{"name": b"trainer-0", "ns": b"ml", "containers": [
        {"name": b"main", "devices": [(b"nvidia.com/gpu", [b"GPU-aa", b"GPU-bb"]), (b"example.com/nic", [b"nic0"]),
                                      (b"nvidia.com/mig-1g.5gb", [b"MIG-cc"])]}]},
        {"name": b"idle", "ns": b"default", "containers": [{"name": b"c", "devices": []}]}])
    assert P.parse_list(reply) == {
        "GPU-aa": {"namespace": "ml", "pod": "trainer-0", "container": "main"},
        "GPU-bb": {"namespace": "ml", "pod": "trainer-0", "container": "main"},
        "MIG-cc": {"namespace": "ml", "pod": "trainer-0", "container": "main"}}
    assert P.parse_list(b"") == {}


@pytest.mark.parametrize("name, ok", [
    (b"a", True), (b"a" * 253, True), (b"a" * 254, False), (b"a.b-c", True), (b"-a", False), (b"a-", False),
    (b"A", False), (b"a_b", False), (b"", False), (b"\xc3\xa9", False),
])
def test_pod_name_rule(name: bytes, ok: bool) -> None:
    reply = _reply([{"name": name, "ns": b"ns", "containers": [{"name": b"c", "devices": [(b"nvidia.com/gpu",
                                                                                         [b"GPU-1"])]}]}])
    if ok:
        assert P.parse_list(reply)["GPU-1"]["pod"] == name.decode()
    else:
        with pytest.raises(Malformed):
            P.parse_list(reply)


@pytest.mark.parametrize("dev, ok", [
    (b"GPU-1", True), (b"a" * 128, True), (b"a" * 129, False), (b"-a", False), (b"a b", False),
    (b"MIG-GPU-1/2/0", True), (b"a:b.c_d", True),
])
def test_device_id_rule(dev: bytes, ok: bool) -> None:
    reply = _reply([{"name": b"p", "ns": b"ns", "containers": [{"name": b"c", "devices": [(b"nvidia.com/gpu",
                                                                                        [dev])]}]}])
    if ok:
        assert list(P.parse_list(reply)) == [dev.decode()]
    else:
        with pytest.raises(Malformed):
            P.parse_list(reply)


def test_a_refused_name_is_quoted_short() -> None:
    with pytest.raises(Malformed) as exc:
        P._text(b"A" * 300, P._NAME)
    assert str(exc.value) == f"unexpected name {'A' * 40!r}"
    with pytest.raises(Malformed, match="^not ASCII$"):
        P._text(b"\xff", P._NAME)


def test_constants() -> None:
    assert (P.SOCKET, P.METHOD) == ("/var/lib/kubelet/pod-resources/kubelet.sock", "/v1.PodResourcesLister/List")
    assert (P.MAX_REPLY, P.TIMEOUT_S, P.REFRESH_S) == (16 << 20, 2.0, 15.0)
