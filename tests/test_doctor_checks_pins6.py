"""Each doctor check module held word for word to the ~230 hand-built hosts of test_doctor_checks_pins4 (issue 21).

That table pins every finding (status, actual, expected, fix) of every check, but it names only the doctor package,
so a mutation round (bench/mutation_sample.py: a module's tests are the files that name it) never runs it against a
change in hosttune/doctor/checks/*.py. Here the same hosts run one check module at a time, each row compared with
the pinned one: a changed threshold, an inverted condition or a dropped clause of a fix in hosttune.doctor.checks.os
(or .cpu, .gpu, .nvidia, .storage, .tools, .topology, .torch, .tunables, .hosttune) fails the row of that module.
"""

from typing import Callable, Dict, List

import pytest
import test_doctor_checks_pins4 as P4  # the hosts and their pinned findings

from hosttune import doctor
from hosttune.doctor import Context, run_checks
from hosttune.doctor.checks import cpu as cpu_checks
from hosttune.doctor.checks import gpu as gpu_checks
from hosttune.doctor.checks import hosttune as hosttune_checks
from hosttune.doctor.checks import nvidia as nvidia_checks
from hosttune.doctor.checks import os as os_checks
from hosttune.doctor.checks import storage as storage_checks
from hosttune.doctor.checks import tools as tools_checks
from hosttune.doctor.checks import topology as topology_checks
from hosttune.doctor.checks import torch as torch_checks
from hosttune.doctor.checks import tunables as tunables_checks
from hosttune.facts import Facts

MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (
    cpu_checks, gpu_checks, hosttune_checks, nvidia_checks, os_checks, storage_checks, tools_checks, topology_checks,
    torch_checks, tunables_checks)}


def _checks_of(module: str) -> List[doctor.Check]:
    name = MODULES[module].__name__
    return [c for c in P4.CHECKS if c.run.__module__ == name]


def _findings(module: str, host: Callable[..., Facts], change: Callable[[Facts], Facts],
              env: Dict[str, str]) -> Dict[str, P4.Row]:
    facts = change(host())
    ctx = Context(facts=facts, env=dict(env), live=True, cwd="/srv/train", profile=P4.NO_PROFILE, python=None,
                  probe=P4.Probe(facts))
    return {r.id: (r.status, r.actual, r.expected, r.fix) for r in run_checks(ctx, checks=_checks_of(module)).results}


@pytest.mark.parametrize("name,host,change,env", P4.HOSTS, ids=[h[0] for h in P4.HOSTS])
def test_each_check_module_gives_its_pinned_findings(name: str, host: Callable[..., Facts],
                                                      change: Callable[[Facts], Facts], env: Dict[str, str]) -> None:
    pinned = P4._expected(name, host)
    for module in sorted(MODULES):
        want = {k: v for k, v in pinned.items() if k in {c.id for c in _checks_of(module)}}
        got = _findings(module, host, change, env)
        assert sorted(got) == sorted(want), module
        for check_id, row in want.items():
            assert got[check_id] == row, (module, check_id)


def test_every_check_but_the_decoder_belongs_to_one_module_here() -> None:
    owned = [c.id for m in MODULES for c in _checks_of(m)]
    assert sorted(owned) == sorted(c.id for c in P4.CHECKS)
    assert {m for m in MODULES if _checks_of(m)} >= {"os", "cpu", "gpu", "nvidia", "storage", "torch", "tunables"}
