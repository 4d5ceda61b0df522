"""Pin for mutation round 5's survivor in hosttune/launch/torchrun.py (issue 21): `shim_argv(python, root=...)` starts
the rank's shim with `python -I` exactly when `root` says so, whoever runs the test (root or a user); without `root`
it asks whether this process is root. -I is what keeps a root launch from importing modules out of the caller's
directory or PYTHONPATH before the shim has checked them."""

import os

from hosttune.launch.torchrun import shim_argv

PY = "/opt/train/bin/python3"


def test_root_true_adds_minus_I_and_root_false_leaves_it_out_whoever_we_are() -> None:
    as_root = shim_argv(PY, root=True)
    as_user = shim_argv(PY, root=False)
    assert as_root[:3] == [PY, "-I", "-c"] and len(as_root) == 4, as_root
    assert as_user[:2] == [PY, "-c"] and len(as_user) == 3 and "-I" not in as_user, as_user
    assert as_root[-1] == as_user[-1] and "hosttune.shim" in as_user[-1]  # the same bootstrap either way


def test_without_root_it_follows_this_process() -> None:
    assert ("-I" in shim_argv(PY)) is (os.geteuid() == 0)
