"""hosttune/launch/torchrun.py's parse_torchrun: the whole split of each form, an option given twice takes its last
value (as torchrun's argparse does), the PET_* mode variables, and the lines torchrun would refuse."""

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


def _whole(argv: list, env: dict = ENV) -> tuple:
    t = parse_torchrun(argv, env)
    assert t is not None
    return (t.launcher, t.options, dict(t.values), sorted(t.flags), t.script, t.script_args, t.launcher_python)


def test_the_whole_split_of_each_form() -> None:
    """Every field of the split: the launcher, the options kept for torchrun (the mode flags dropped), values,
    flags, script and its arguments, and the interpreter of `python -m torch.distributed.run`."""
    assert _whole(["torchrun", "--standalone", "-m", "--nproc=2", "-r3", "pkg.x", "-m", "y"]) == (
        ("torchrun",), ("--standalone", "--nproc=2", "-r3"), {"nproc_per_node": "2", "redirects": "3"},
        ["module", "standalone"], "pkg.x", ("-m", "y"), None)
    assert _whole(["/v/bin/python3", "-u", "-m", "torch.distributed.run", "--run-path", "--tee", "1", "t.py"]) == (
        ("/v/bin/python3", "-u", "-m", "torch.distributed.run"), ("--tee", "1"), {"tee": "1"}, ["run_path"],
        "t.py", (), "/v/bin/python3")
    assert _whole(["torchrun", "--no_python", "--", "--weird", "a"]) == (
        ("torchrun",), (), {}, ["no_python"], "--weird", ("a",), None)
    assert _whole(["torchrun", "-", "a"])[4:6] == ("-", ("a",))


def test_pet_mode_variables_count_when_a_nonzero_integer() -> None:
    for raw, on in (("1", True), ("-2", True), ("0", False), ("yes", False), ("", False), (" 3 ", True)):
        env = dict(ENV, PET_RUN_PATH=raw)
        assert ("run_path" in _whole(["torchrun", "t.py"], env)[3]) is on, raw


@pytest.mark.parametrize("argv, message", [
    (["torchrun", "--nproc_per_node=2", "--"], "no training script"),
    (["torchrun", "--rdzv", "x", "t.py"], "ambiguous option --rdzv"),
    (["torchrun", "-x", "t.py"], "unknown option -x"),
    (["torchrun", "-t"], "option -t needs a value"),
])
def test_lines_torchrun_would_refuse(argv: list, message: str) -> None:
    from hosttune.errors import UserError

    with pytest.raises(UserError, match=message):
        parse_torchrun(argv, ENV)


@pytest.mark.parametrize("argv, env, want", [
    (["torchrun", "--nnodes", "2", "--node-rank", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n0:29400",
      "t.py"], {}, ("n0", "torchrun --rdzv-endpoint", 2, False)),
    (["torchrun", "--nnodes=1:4", "--rdzv-backend=c10d", "--rdzv-endpoint=[fd00::1]:29400", "--local-addr", "10.0.0.2",
      "t.py"], {}, ("fd00::1", "torchrun --rdzv-endpoint", 4, True)),
    (["torchrun", "--nnodes", "2", "--master-addr", "10.1.2.3", "--master-port", "29500", "t.py"], {},
     ("10.1.2.3", "torchrun --master-addr", 2, False)),
    (["torchrun", "--nproc-per-node", "2", "t.py"], {}, ("127.0.0.1", "torchrun --master-addr", 1, False)),
    (["torchrun", "--rdzv-backend", "c10d", "t.py"], {"PET_RDZV_ENDPOINT": "head:1234", "PET_NNODES": "3",
                                                       "PET_LOCAL_ADDR": "10.9.9.9"},
     ("head", "torchrun --rdzv-endpoint", 3, True)),
])
def test_endpoint_is_where_torchrun_meets_its_nodes(argv: list, env: dict, want: tuple) -> None:
    from hosttune.launch.torchrun import endpoint

    t = parse_torchrun(argv, {**ENV, **env})
    assert t is not None
    ep = endpoint(t, {**ENV, **env})
    assert ep is not None and ep.torchrun
    assert (ep.host, ep.source, ep.nodes, ep.local_addr) == want


def test_standalone_and_an_empty_c10d_endpoint_name_no_endpoint() -> None:
    from hosttune.launch.torchrun import endpoint

    for argv in (["torchrun", "--standalone", "--nproc-per-node", "2", "t.py"],
                 ["torchrun", "--rdzv-backend", "c10d", "t.py"]):
        t = parse_torchrun(argv, ENV)
        assert t is not None and endpoint(t, ENV) is None
