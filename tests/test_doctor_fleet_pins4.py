"""hosttune.doctor.fleet's pure parts pinned (issue 21): the verdict line at its exact length limit, failures before
warnings, a crashed check as "unknown", NPD's exit codes, `scontrol -o show node` parsing and the node's state."""

import pytest

from hosttune.doctor import fleet
from hosttune.doctor.model import Report, Result


def res(id_: str, status: str, actual: str = "") -> Result:
    return Result(id_, id_.split(".")[0], status, "t", "e", actual, "f")


def test_first_failure_before_warnings_and_the_count() -> None:
    rep = Report((res("os.thp", "warn", "always"), res("cpu.x", "fail", "bad  \n value"), res("os.y", "pass", "ok"),
                  res("os.z", "fail", "second")))
    v = fleet.verdict(rep)
    assert v == fleet.Verdict(False, "hosttune: cpu.x: bad value (+1 more)", False)
    assert fleet.verdict(rep, "warn").line == "hosttune: cpu.x: bad value (+2 more)"
    only_warn = Report((res("os.thp", "warn", "always"),))
    assert fleet.verdict(only_warn).healthy is True
    assert fleet.verdict(only_warn, "warn") == fleet.Verdict(False, "hosttune: os.thp: always")
    assert fleet.verdict(Report((res("a.b", "fail", ""),))).line == "hosttune: a.b: fail"


def test_healthy_summary_and_crashed_is_unknown() -> None:
    rep = Report((res("a.a", "pass"), res("a.b", "pass"), res("a.c", "warn"), res("a.d", "skip", "no gpu")))
    assert fleet.verdict(rep) == fleet.Verdict(True, "hosttune: ok: 2 pass, 1 warn, 1 skip", False)
    crashed = Report((res("a.a", "pass"), res("a.e", "skip", "check crashed: KeyError: 'x'")))
    v = fleet.verdict(crashed)
    assert v == fleet.Verdict(True, "hosttune: a.e: check crashed: KeyError: 'x'", True)
    assert fleet.npd_exit(v) == 2 and fleet.npd_exit(fleet.verdict(rep)) == 0
    assert fleet.npd_exit(fleet.Verdict(False, "x")) == 1
    assert fleet.verdict(Report(())).line == "hosttune: ok: 0 pass, 0 warn, 0 skip"


def test_the_line_fits_the_limit_and_keeps_id_and_count() -> None:
    long = "x" * 300
    rep = Report((res("nvidia.ecc", "fail", long), res("b.b", "fail", "y")))
    line = fleet.verdict(rep).line
    assert len(line) == fleet.SLURM_REASON_MAX == 200
    assert line.startswith("hosttune: nvidia.ecc: xxx") and line.endswith("x... (+1 more)")
    npd = fleet.verdict(rep, limit=fleet.NPD_MAX_OUTPUT).line
    assert len(npd) == 80 and npd.endswith("... (+1 more)")
    head = "hosttune: nvidia.ecc: "
    exact = "z" * (80 - len(head) - len(" (+1 more)"))
    fits = fleet.verdict(Report((res("nvidia.ecc", "fail", exact), res("b.b", "fail"))), limit=80).line
    assert fits == head + exact + " (+1 more)" and len(fits) == 80
    over = fleet.verdict(Report((res("nvidia.ecc", "fail", exact + "z"), res("b.b", "fail"))), limit=80).line
    assert over == head + exact[:-3] + "... (+1 more)" and len(over) == 80
    assert fleet._fit("abc", "defgh", "ij", 4) == "abc."


def test_fit_when_the_head_alone_is_too_long() -> None:
    assert fleet._fit("headhead", "body", "", 5) == "headh"
    assert fleet._fit("ab", "cdef", "", 6) == "abcdef"
    assert fleet._fit("ab", "cdefg", "", 6) == "abc..."


def test_control_characters_are_escaped_in_the_line() -> None:
    line = fleet.verdict(Report((res("a.b", "fail", "evil\x1b[31m red\tand\nmore"),))).line
    assert "\x1b" not in line and "\n" not in line and "\t" not in line
    assert line.startswith("hosttune: a.b: evil") and line.endswith("red and more")


@pytest.mark.parametrize("text,node", [
    ("NodeName=gpu01 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=2 Reason=hosttune: nvidia.ecc: 3 errors "
     "[root@2024-05-01T10:00:00] Comment=x", fleet.SlurmNode("gpu01", "IDLE+DRAIN", "hosttune: nvidia.ecc: 3 errors")),
    ("NodeName=n2 State=MIXED Reason=(null)", fleet.SlurmNode("n2", "MIXED", "")),
    ("NodeName=n3 State=DOWN+NOT_RESPONDING Reason=Not responding", fleet.SlurmNode("n3", "DOWN+NOT_RESPONDING",
                                                                                    "Not responding")),
    ("NodeName=n4 State=IDLE Reason=none", fleet.SlurmNode("n4", "IDLE", "")),
    ("NodeName=n5 State=IDLE", fleet.SlurmNode("n5", "IDLE", "")),
    ("junk\nNodeName=n6 CPUs=4 State=ALLOCATED Reason=x=y z [slurm@now]", fleet.SlurmNode("n6", "ALLOCATED", "x=y z")),
    ("NodeName=n7 CPUs=4", None),
    ("Node n8 not found", None),
])
def test_parse_show_node(text: str, node: object) -> None:
    assert fleet.parse_show_node(text) == node


@pytest.mark.parametrize("state,offline", [("IDLE", False), ("MIXED", False), ("IDLE+DRAIN", True),
                                           ("mixed+drain", True), ("DOWN", True), ("FAIL", True),
                                           ("ALLOCATED+FAILING", True), ("ALLOCATED+COMPLETING", False)])
def test_offline_states(state: str, offline: bool) -> None:
    assert fleet.SlurmNode("n", state, "").offline is offline


def test_ours_is_the_prefix() -> None:
    assert fleet.SlurmNode("n", "IDLE+DRAIN", "hosttune: x").ours
    assert not fleet.SlurmNode("n", "IDLE+DRAIN", "NHC: x").ours
    assert not fleet.SlurmNode("n", "IDLE+DRAIN", " hosttune: x").ours


def test_node_name() -> None:
    assert fleet.node_name({"SLURMD_NODENAME": "gpu07"}) == "gpu07"
    import socket

    assert fleet.node_name({}) == socket.gethostname().split(".")[0]
    assert "." not in fleet.node_name({"SLURMD_NODENAME": ""})
