"""doctor inside a container: the host's kernel settings (sysctls, transparent hugepages, cpufreq) are read-only
there, so their fix says to set them on the host instead of giving a command the container cannot run; the limits
come from the runtime, not limits.d; os.container reports what the container can and cannot see. Hand-built facts,
and `hosttune doctor --root` on a tree shaped like an unprivileged docker container."""

import os
from pathlib import Path

from _doctorhelp import R, cpu_host, doctor_json, kern, run_one, synthetic_root

from hosttune.doctor import Context
from hosttune.doctor.checks.os import check_container
from hosttune.facts import Container, Facts, Limits

DOCKER = Container(detected=True, runtime="docker", evidence=("/.dockerenv exists",), proc_sys_readonly=True,
                   sys_readonly=True, nvidia_devices=("nvidia0", "nvidiactl"), gpu_nodes=1, driver_gpus=8,
                   cgroup_limits=("2 CPUs (cpu quota)",))
PRIVILEGED = R(DOCKER, proc_sys_readonly=False, sys_readonly=False)
READ_ONLY = "read-only inside a container (docker): set it on the host"


def boxed(facts: Facts, container: Container = DOCKER) -> Facts:
    return R(facts, container=container)


def test_sysctl_fixes_say_set_it_on_the_host() -> None:
    f = run_one("os.swappiness", boxed(kern(swappiness=60)(cpu_host())))
    assert f.status == "warn"
    head, rest = f.fix.split("\n", 1)
    assert head.startswith(READ_ONLY) and "vm.swappiness is not a namespaced sysctl" in head
    assert rest.startswith("on the host:\n") and "sysctl -w vm.swappiness=10" in rest
    f = run_one("os.numa_balancing", boxed(kern(numa_balancing=1)(cpu_host())))
    assert f.fix.startswith(READ_ONLY) and "kernel.numa_balancing is not a namespaced sysctl" in f.fix


def test_sysfs_fixes_say_set_it_on_the_host() -> None:
    f = run_one("os.thp", boxed(kern(thp="always")(cpu_host())))
    assert f.status == "warn" and f.fix.startswith(READ_ONLY) and "/sys is the host's kernel" in f.fix
    assert "on the host:\nhosttune tune apply --only thp" in f.fix
    f = run_one("os.governor", boxed(kern(governors=("powersave",))(cpu_host())))
    assert f.fix.startswith(READ_ONLY) and "scaling_governor" in f.fix


def test_privileged_container_is_told_it_changes_the_host() -> None:
    f = run_one("os.swappiness", boxed(kern(swappiness=60)(cpu_host()), PRIVILEGED))
    assert "read-only" not in f.fix
    assert f.fix.startswith("inside a container (docker) /proc/sys is the host's: a change here changes it for "
                            "every container on the host")


def test_outside_a_container_the_fix_is_unchanged() -> None:
    plain = run_one("os.swappiness", kern(swappiness=60)(cpu_host()))
    assert plain.fix.startswith("hosttune tune apply --only swappiness") and "container" not in plain.fix


def test_limits_in_a_container_come_from_the_runtime() -> None:
    low = cpu_host(limits=Limits(nofile_soft=1024, nofile_hard=1024, memlock_soft=-1, memlock_hard=-1))
    f = run_one("cpu.nofile", boxed(low))
    assert f.status == "warn" and "--ulimit nofile=65536:1048576" in f.fix
    assert "limits.d" not in f.fix and "tune apply" not in f.fix
    nspawn = run_one("cpu.nofile", boxed(low, R(DOCKER, runtime="systemd-nspawn")))
    assert "systemd-nspawn --rlimit=RLIMIT_NOFILE=65536:1048576" in nspawn.fix


def test_container_report() -> None:
    f = check_container(Context(facts=boxed(cpu_host()), env={}))
    assert f.status == "pass"
    assert f.actual == ("docker (/.dockerenv exists); /proc/sys and /sys read-only: host settings are the host's to "
                        "change; limits from its cgroup: 2 CPUs (cpu quota); 1 GPU device nodes passed in of the "
                        "driver's 8")
    assert check_container(Context(facts=cpu_host(), env={})).actual == "not a container"


def test_doctor_root_of_a_docker_container(tmp_path: Path) -> None:
    mounts = ("600 500 0:60 / / rw,relatime - overlay overlay rw\n"
              "601 600 0:61 / /proc rw,relatime - proc proc rw\n"
              "602 601 0:61 /sys /proc/sys ro,relatime - proc proc rw\n"
              "603 600 0:62 / /sys ro,relatime - sysfs sysfs ro\n"
              "604 600 254:1 /var/lib/docker/containers/0123/hostname /etc/hostname rw - ext4 /dev/vda1 rw\n"
              "605 600 0:23 / /dev/shm rw,nosuid,nodev - tmpfs shm rw,size=65536k\n")
    root = synthetic_root(tmp_path / "host", {"proc/self/mountinfo": mounts, "proc/sys/vm/swappiness": "60\n",
                                              "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
                                              ".dockerenv": ""})
    found = doctor_json("--root", str(root), env=dict(os.environ))
    for cid in ("os.swappiness", "os.thp"):
        assert found[cid]["status"] == "warn", found[cid]
        assert found[cid]["fix"].startswith(READ_ONLY), found[cid]
