"""Pins for hosttune/launch/torchrun.py (issue 21, round 6): the one-line errors for a torchrun command line torchrun
itself would refuse, word for word, and what the split keeps (the launcher, its options, the script and its
arguments)."""

from typing import Dict, List

import pytest

from hosttune.errors import UserError
from hosttune.launch.torchrun import parse_torchrun


@pytest.mark.parametrize("argv,environ,msg", [
    (["torchrun", "-m", "--no-python", "x"], {},
     "torchrun: -m/--module cannot be combined with --no-python (torchrun refuses it too)"),
    (["torchrun", "--module", "x"], {"PET_NO_PYTHON": "1"},
     "torchrun: -m/--module cannot be combined with --no-python (torchrun refuses it too)"),
    (["torchrun"], {}, "torchrun: no training script given (torchrun [OPTIONS] SCRIPT [ARGS...])"),
    (["torchrun", "--nnodes", "2"], {}, "torchrun: no training script given (torchrun [OPTIONS] SCRIPT [ARGS...])"),
    (["torchrun", "--"], {}, "torchrun: no training script given (torchrun [OPTIONS] SCRIPT [ARGS...])"),
    (["torchrun", "--nnodes"], {}, "torchrun: option --nnodes needs a value"),
    (["torchrun", "--standalone=1", "t.py"], {}, "torchrun: option --standalone takes no value"),
    (["torchrun", "--bogus", "t.py"], {}, "torchrun: unknown option --bogus"),
    (["torchrun", "-x", "t.py"], {}, "torchrun: unknown option -x"),
    (["torchrun", "--rdzv", "t.py"], {}, "torchrun: ambiguous option --rdzv"),
])
def test_refusals_word_for_word(argv: List[str], environ: Dict[str, str], msg: str) -> None:
    with pytest.raises(UserError) as e:
        parse_torchrun(argv, environ)
    assert str(e.value) == msg


def test_the_split() -> None:
    t = parse_torchrun(["torchrun", "--nproc-per-node=2", "-r3", "--nnodes", "1", "-m", "pkg.train", "--lr", "1"], {})
    assert t is not None
    assert t.launcher == ("torchrun",) and t.options == ("--nproc-per-node=2", "-r3", "--nnodes", "1")
    assert dict(t.values) == {"nproc_per_node": "2", "redirects": "3", "nnodes": "1"}
    assert t.flags == frozenset({"module"}) and t.mode == "module"
    assert t.script == "pkg.train" and t.script_args == ("--lr", "1") and t.launcher_python is None
    py = parse_torchrun(["python3", "-u", "-m", "torch.distributed.run", "--", "t.py", "a"], {})
    assert py is not None and py.launcher == ("python3", "-u", "-m", "torch.distributed.run")
    assert py.launcher_python == "python3" and py.script == "t.py" and py.script_args == ("a",)
    assert parse_torchrun(["torchrun", "--help"], {}) is None
    assert parse_torchrun(["python3", "-m", "torch.distributed.launch", "t.py"], {}) is None
