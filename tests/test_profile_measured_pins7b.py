"""Pins of mutation round 7 (issue 21) on hosttune/profile/measured.py: with a measured overlay applied, the settings
it changes say they come from the overlay, and every other setting keeps where it came from in the profile in use
(what `profile show`/`explain` print), not the overlay file's lines."""

import dataclasses
import sys
from pathlib import Path

from hosttune import profile
from hosttune.profile import measured

JOB = [sys.executable, "pins7b_train.py", "--batch", "8"]
FP = "0123456789abcdef"


def test_an_applied_overlay_keeps_the_provenance_of_what_it_does_not_change(tmp_path: Path) -> None:
    base = dataclasses.replace(profile.load("throughput"), fingerprint=FP)
    winner = dataclasses.replace(base, env={**base.env, "OMP_WAIT_POLICY": "PASSIVE"})
    top = measured.overlay(base, winner, command=JOB, fingerprint=FP, candidate="omp-passive", ratio=1.25, lo=1.2,
                           hi=1.3, rounds=4)
    path = profile.write(top, measured.save_path(JOB), force=True)
    laid, line = measured.apply(base, JOB, FP)
    assert line is not None and line.startswith("measured overlay applied: omp-passive (env.OMP_WAIT_POLICY)")
    assert laid.env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert laid.provenance["env.OMP_WAIT_POLICY"].startswith(f"{path}: measured ")
    unchanged = {k: v for k, v in laid.provenance.items() if k != "env.OMP_WAIT_POLICY"}
    assert unchanged == base.provenance
    assert base.provenance["malloc_conf"] and str(path) not in base.provenance["malloc_conf"]
