"""tests/_xdist_sched.py, the longest-first scheduler that `make test` and `make check` hand test modules out with
(issue 21): heavy modules first by their expected seconds, the light ones in the random collection order, no scope
prefetched while a worker still has more than its last test to run, every test run exactly once. Driven with fake
workers in a simulated clock (no real xdist workers are started)."""

import re
from types import SimpleNamespace
from typing import Any, Dict, List, Tuple

import pytest

pytest.importorskip("xdist")

import _xdist_sched as sched_mod  # noqa: E402
from xdist.scheduler import LoadScopeScheduling  # noqa: E402


class FakeNode:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: List[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: List[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def fake_config(workers: int) -> Any:
    return SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"] if name == "tx" else None,
                           option=SimpleNamespace(loadscopereorder=True))


# Quick modules, two medium ones with many tests, and a heavy one with two long tests (a 2-rank training each). Stock
# xdist sorts scopes by their test count: the medium ones first, the heavy one last, and one worker runs it alone.
COLLECTION = (
    [f"tests/test_light_a.py::test_{i}" for i in range(40)]
    + [f"tests/test_many_a.py::test_{i}" for i in range(60)]
    + [f"tests/test_light_b.py::test_{i}" for i in range(30)]
    + ["tests/test_heavy.py::test_train", "tests/test_heavy.py::test_resume"]
    + [f"tests/test_light_c.py::T::test_{i}" for i in range(50)]
    + [f"tests/test_many_b.py::test_{i}" for i in range(50)]
    + [f"tests/test_light_d.py::test_{i}" for i in range(3)]
)
WEIGHTS = {"tests/test_heavy.py::test_train": 150.0, "tests/test_heavy.py::test_resume": 40.0,
           **{f"tests/test_many_a.py::test_{i}": 1.5 for i in range(60)},
           **{f"tests/test_many_b.py::test_{i}": 2.0 for i in range(50)}}


class QuietLog:
    def __getattr__(self, name: str) -> "QuietLog":
        return self

    def __call__(self, *args: Any) -> None:
        pass


def simulate(scheduler_cls: Any, workers: int = 2) -> Tuple[float, Dict[str, List[str]], List[str]]:
    """Run COLLECTION through the scheduler on fake workers; returns the makespan, the tests each worker ran in
    order, and the order in which scopes were first handed out."""
    sched = scheduler_cls(fake_config(workers), QuietLog())
    nodes = [FakeNode(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, list(COLLECTION))
    sched.schedule()
    clock = {node: 0.0 for node in nodes}
    done = {node: 0 for node in nodes}
    ran: Dict[str, List[str]] = {node.gateway.id: [] for node in nodes}
    handed: List[str] = []
    while True:
        for node in nodes:
            for idx in node.sent:
                scope = sched._split_scope(COLLECTION[idx])
                if scope not in handed:
                    handed.append(scope)
        busy = [n for n in nodes if done[n] < len(n.sent)]
        if not busy:
            break
        node = min(busy, key=lambda n: (clock[n] + sched_mod.expected_seconds(COLLECTION[n.sent[done[n]]]),
                                        n.gateway.id))
        idx = node.sent[done[node]]
        clock[node] += sched_mod.expected_seconds(COLLECTION[idx])
        ran[node.gateway.id].append(COLLECTION[idx])
        done[node] += 1
        sched.mark_test_complete(node, idx)
    assert all(node.shutting_down for node in nodes)
    assert not sched.has_pending
    return max(clock.values()), ran, handed


@pytest.fixture
def weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sched_mod, "WEIGHTS", dict(WEIGHTS))


@pytest.mark.usefixtures("weights")
def test_heavy_scopes_go_first_by_weight_and_light_ones_keep_the_collection_order() -> None:
    _, ran, handed = simulate(sched_mod.LongestFirstScheduling)
    assert handed == ["tests/test_heavy.py", "tests/test_many_b.py", "tests/test_many_a.py",  # 190, 100, 90 s
                      "tests/test_light_a.py", "tests/test_light_b.py", "tests/test_light_c.py::T",
                      "tests/test_light_d.py"]  # as collected
    every = sorted(t for tests in ran.values() for t in tests)
    assert every == sorted(COLLECTION)  # each test once
    for tests in ran.values():  # a scope stays whole on one worker, its tests in collection order
        for scope in {t.rsplit("::", 1)[0] for t in tests}:
            mine = [t for t in tests if t.rsplit("::", 1)[0] == scope]
            assert mine == [t for t in COLLECTION if t.rsplit("::", 1)[0] == scope]


@pytest.mark.usefixtures("weights")
def test_the_pass_ends_sooner_than_with_stock_loadscope() -> None:
    ours, _, _ = simulate(sched_mod.LongestFirstScheduling)
    stock, _, _ = simulate(LoadScopeScheduling)
    total = sum(sched_mod.expected_seconds(t) for t in COLLECTION)
    assert ours <= total / 2 + 5.0  # about an even split: heavy | many_b + many_a + the light ones
    assert stock >= 260.0  # both medium modules first, the 190 s one last


@pytest.mark.usefixtures("weights")
def test_no_scope_is_handed_to_a_worker_with_more_than_its_last_test_to_run() -> None:
    sched = sched_mod.LongestFirstScheduling(fake_config(2), QuietLog())
    gw0, gw1 = FakeNode("gw0"), FakeNode("gw1")
    for node in (gw0, gw1):
        sched.add_node(node)
        sched.add_node_collection(node, list(COLLECTION))
    sched.schedule()
    assert sorted(COLLECTION[i] for i in gw0.sent) == ["tests/test_heavy.py::test_resume",
                                                       "tests/test_heavy.py::test_train"]
    assert len(gw1.sent) == 50  # test_many_b, nothing prefetched behind it
    for idx in gw1.sent[:48]:
        sched.mark_test_complete(gw1, idx)
    assert len(gw1.sent) == 50  # two still to run: the next scope waits for whichever worker frees first
    sched.mark_test_complete(gw0, gw0.sent[0])
    assert len(gw0.sent) == 2 + 60  # gw0 is down to its last test (and would block on it): test_many_a now
    sched.mark_test_complete(gw1, gw1.sent[48])
    assert len(gw1.sent) == 50 + 40  # and the next one in the queue, test_light_a, for gw1


def test_unknown_tests_count_the_default_and_parametrize_ids_share_their_functions_weight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sched_mod, "WEIGHTS", {"tests/test_x.py::test_run": 30.0})
    assert sched_mod.expected_seconds("tests/test_x.py::test_run[fsdp-2]") == 30.0
    assert sched_mod.expected_seconds("tests/test_x.py::test_run") == 30.0
    assert sched_mod.expected_seconds("tests/test_x.py::test_running") == sched_mod.DEFAULT_S


def test_conftest_picks_it_for_loadscope_only() -> None:
    import conftest

    assert isinstance(conftest.pytest_xdist_make_scheduler(_Cfg("loadscope"), None),
                      sched_mod.LongestFirstScheduling)
    assert conftest.pytest_xdist_make_scheduler(_Cfg("load"), None) is None


class _Cfg:
    def __init__(self, dist: str) -> None:
        self.dist = dist
        self.option = SimpleNamespace(loadscopereorder=True)

    def getvalue(self, name: str) -> Any:
        return {"dist": self.dist, "tx": ["2*popen"]}.get(name)


def test_the_table_is_written_from_durations_output_per_function(tmp_path: Any) -> None:
    log = ["============ slowest durations ============",
           "30.00s call     tests/test_x.py::test_run[a]",
           "2.00s setup    tests/test_x.py::test_run[a]",
           "10.00s call     tests/test_x.py::test_run[b]",
           "1.50s call     tests/test_x.py::test_quick",
           "0.01s teardown tests/test_x.py::test_quick"]
    table = sched_mod.table_from_durations(log)
    assert table == "21.0 tests/test_x.py::test_run\n"  # (30 + 2 + 10) / 2 cases; test_quick under 2 s
    path = tmp_path / "w.txt"
    path.write_text("# header\n" + table)
    assert sched_mod.load_weights(path) == {"tests/test_x.py::test_run": 21.0}
    assert sched_mod.load_weights(tmp_path / "absent.txt") == {}


def test_the_committed_table_names_test_functions() -> None:
    weights = sched_mod.load_weights()
    assert weights and all(s > 0 for s in weights.values())
    assert all(re.fullmatch(r"tests/test_\w+\.py::(\w+::)?test_\w+", key) for key in weights), weights
