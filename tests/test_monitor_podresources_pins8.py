"""Pins (issue 21, round 8 practice) for hosttune/monitor/podresources.py: when the kubelet stops answering, the
next refresh gives no assignments (and says why) instead of the last answer, and the answer after that counts again.
Needs grpcio and protobuf (test_monitor_podresources's fake kubelet); skipped without them."""

import os
from typing import Any, Callable, List

import pytest

pytest.importorskip("grpc")
from test_monitor_podresources import GPUS, PODS, _abort, kubelet, reply  # noqa: E402, F401 (kubelet: a fixture)

from hosttune.monitor import podresources  # noqa: E402


def test_a_failed_refresh_is_no_assignments_not_the_last_answer(kubelet: Callable[[Any], str],  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    answers: List[Any] = [reply(PODS), _abort, reply(PODS)]

    def answer(context: Any) -> bytes:
        given = answers.pop(0)
        return given(context) if callable(given) else given

    now: List[float] = [1000.0]
    monkeypatch.setattr(podresources.time, "monotonic", lambda: now[0])
    pods = podresources.PodResources(kubelet(answer))
    first = pods.assignments()
    assert first == {GPUS[0]["uuid"]: {"namespace": "ml", "pod": "trainer-0", "container": "main"},
                     "MIG-4b4a6a5c-1f0e-5a2b-9e0c-5d5c0c5e5a5b": {"namespace": "ml", "pod": "mig-pod",
                                                                 "container": "m"}}
    assert pods.problem is None
    now[0] += podresources.REFRESH_S
    assert pods.assignments() is None
    assert pods.problem == f"{pods.socket}: unknown service v1.PodResourcesLister"
    now[0] += podresources.REFRESH_S
    assert pods.assignments() == first and pods.problem is None and answers == []


def test_a_socket_gone_after_a_failure_is_no_problem_any_more(kubelet: Callable[[Any], str],  # noqa: F811
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubelet's socket answers with an error (a problem, said), then is gone (no kubelet on this host any
    more): no assignments and no problem, not the old one."""
    now: List[float] = [1000.0]
    monkeypatch.setattr(podresources.time, "monotonic", lambda: now[0])
    sock = kubelet(_abort)
    pods = podresources.PodResources(sock)
    assert pods.assignments() is None
    assert pods.problem == f"{sock}: unknown service v1.PodResourcesLister"
    os.unlink(sock)
    now[0] += podresources.REFRESH_S
    assert pods.assignments() is None and pods.problem is None
