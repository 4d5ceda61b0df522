"""parse_torchrun: an option given twice takes its last value, as torchrun's argparse does."""

from types import SimpleNamespace

import pytest

from hosttune.launch.torchrun import nproc_per_node, parse_torchrun

ENV = {"PATH": "/usr/bin:/bin"}
FACTS = SimpleNamespace(cpu=SimpleNamespace(online=tuple(range(8))), gpus=())


@pytest.mark.parametrize("argv, n", [
    (["torchrun", "--nproc-per-node", "2", "--nproc-per-node", "3", "t.py"], 3),
    (["torchrun", "--nproc_per_node=3", "--nproc_per_node=2", "t.py"], 2),
    (["python3", "-m", "torch.distributed.run", "--nproc-per-node=1", "--nproc_per_node", "4", "t.py"], 4),
])
def test_repeated_nproc_per_node_takes_the_last_value(argv: list, n: int) -> None:
    t = parse_torchrun(argv, ENV)
    assert t is not None
    assert nproc_per_node(t, ENV, FACTS) == n
    assert t.options == tuple(argv[len(t.launcher):-1])  # both still reach torchrun, which takes the last too


def test_repeated_numa_binding_takes_the_last_value() -> None:
    t = parse_torchrun(["torchrun", "--numa-binding", "node", "--numa-binding=socket", "t.py"], ENV)
    assert t is not None and t.value("numa_binding", ENV, "") == "socket"
