"""The one unpickler (hosttune/unpickle.py, issue 22 item 1): exact (module, name) pairs only, no dotted names, no
persistent ids, no import-name translation, bounded regular files. Stdlib only: no torch needed."""

import collections
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from hosttune import unpickle

ALLOWED = unpickle.allow([("collections", "OrderedDict")])


def text(s: str) -> bytes:
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b  # SHORT_BINUNICODE


def stack_global_call(module: str, name: str, arg: str) -> bytes:
    """Protocol 4: STACK_GLOBAL(module, name)(arg)."""
    return b"\x80\x04" + text(module) + text(name) + b"\x93" + text(arg) + b"\x85R."


def test_an_allowed_pair_loads() -> None:
    data = pickle.dumps(collections.OrderedDict(a=1), protocol=4)
    assert unpickle.loads(data, ALLOWED, "test data") == {"a": 1}


def test_a_dotted_name_is_refused_even_from_an_allowed_module(tmp_path: Path) -> None:
    """`shutil` imports `os`: with protocol 4, ("shutil", "os.system") walked to os.system under a module rule."""
    marker = tmp_path / "ran"
    data = stack_global_call("shutil", "os.system", f"touch {marker}")
    allowed = unpickle.allow([("shutil", "copyfile"), ("collections", "OrderedDict")])
    with pytest.raises(unpickle.Refused, match=r"shutil\.os\.system is not allowed in test data"):
        unpickle.loads(data, allowed, "test data")
    assert not marker.exists()


def test_an_allow_list_cannot_name_a_dotted_attribute() -> None:
    with pytest.raises(ValueError, match="exact module and attribute name only"):
        unpickle.allow([("os", "path.join")])


@pytest.mark.parametrize("module, name", [("posix", "system"), ("os", "system"), ("builtins", "eval"),
                                          ("subprocess", "Popen"), ("collections", "Counter")])
def test_anything_not_listed_is_refused(module: str, name: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(unpickle.Refused, match=f"{module}.{name} is not allowed"):
        unpickle.loads(stack_global_call(module, name, f"touch {marker}"), ALLOWED, "test data")
    assert not marker.exists()


def test_protocol_0_names_are_not_translated() -> None:
    """fix_imports off: ("__builtin__", "set") is not quietly read as ("builtins", "set")."""
    data = b"c__builtin__\nset\n(tR."
    with pytest.raises(unpickle.Refused, match="__builtin__.set"):
        unpickle.loads(data, unpickle.allow([("builtins", "set")]), "test data")


def test_persistent_ids_are_refused() -> None:
    data = b"\x80\x04" + text("x") + b"Q."  # BINPERSID
    with pytest.raises(unpickle.Refused, match="persistent ids"):
        unpickle.loads(data, ALLOWED, "test data")


def test_files_are_bounded_regular_and_optionally_not_links(tmp_path: Path) -> None:
    good = tmp_path / "good.pkl"
    good.write_bytes(pickle.dumps({"a": [1, 2]}, protocol=4))
    assert unpickle.load_file(good, ALLOWED, "test data") == {"a": [1, 2]}
    with pytest.raises(OSError, match="larger than 4 bytes"):
        unpickle.load_file(good, ALLOWED, "test data", limit=4)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        unpickle.load_file(fifo, ALLOWED, "test data")  # refused at once, never blocks
    link = tmp_path / "link"
    link.symlink_to(good)
    with pytest.raises(OSError):
        unpickle.load_file(link, ALLOWED, "test data", nofollow=True)


def test_the_gateway_imports_no_torch() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, hosttune.unpickle; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.strip() == "False"
