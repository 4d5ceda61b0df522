"""Pin for mutation round 5's survivor in hosttune/launch/supervise.py (issue 21): a plain job whose memory binding
falls back to a numactl prefix (libnuma has no set_mempolicy) execs numactl, which then execs the program bound: the
program gets its own argv and the bind policy. The launch runs for real in a child interpreter (supervise.run execs,
which a pytest worker must not), on facts built from this process's own CPUs and memory nodes; the job reports its
argv and the first line of its real /proc/self/numa_maps."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hosttune
from hosttune.launch.procfs import parse_numa_maps_policy, self_mems_allowed

REPO = str(Path(hosttune.__file__).resolve().parent.parent)
NUMACTL = shutil.which("numactl")

JOB = ("import json, sys; "
       "print(json.dumps({'argv': sys.argv[1:], 'numa_maps': open('/proc/self/numa_maps').readline()}))")

DRIVER = textwrap.dedent("""
    import os, sys
    from hosttune.facts import Cpu, Facts, Numa, NumaNode, Tools
    from hosttune.launch import job, supervise
    from hosttune.launch.procfs import self_mems_allowed

    numactl, profile, *command = sys.argv[1:]
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    node = self_mems_allowed()[0]
    facts = Facts(cpu=Cpu(logical=len(cpus), physical=len(cpus), online=cpus, allowed_cpus=cpus,
                          cores=tuple((c,) for c in cpus)),
                  numa=Numa(nodes=(NumaNode(node, cpus, 1000),), allowed_mems=(node,)),
                  tools=Tools(numactl=numactl, libnuma="libm.so.6"))  # a real library without set_mempolicy
    launch = job.prepare(command, profile=profile, facts=facts, environ=dict(os.environ), measured=False)
    assert launch.kind == "plain" and launch.ranks[0].mem_policy == "bind", launch.to_dict()
    supervise.run(launch)  # execs: never returns
""")


@pytest.mark.integration
@pytest.mark.skipif(NUMACTL is None, reason="numactl is not installed")
@pytest.mark.skipif(not os.path.exists("/proc/self/numa_maps") or not self_mems_allowed(),
                    reason="no NUMA support in this kernel")
def test_a_numactl_prefix_is_what_runs_and_the_program_gets_its_own_argv_bound(tmp_path: Path) -> None:
    node = self_mems_allowed()[0]
    if subprocess.run([str(NUMACTL), f"--membind={node}", "--", "true"], capture_output=True, timeout=600).returncode:
        pytest.skip("numactl cannot set a memory policy here (a seccomp profile without CAP_SYS_NICE)")
    profile = tmp_path / "bind.yaml"
    profile.write_text("memory_policy: bind\nbinding: cores\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", DRIVER, str(NUMACTL), str(profile), sys.executable, "-c", JOB,
                           "first arg", "--second"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout, done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["argv"] == ["first arg", "--second"], out
    assert parse_numa_maps_policy(out["numa_maps"]) == ("bind", (node,)), out
