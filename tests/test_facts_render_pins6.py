"""`hosttune facts` text, the rows test_facts_cli leaves out (issue 21): what a container can see, tmpfs mounts other
than /dev/shm, and the option combinations the command refuses (hosttune.commands.facts)."""

from conftest import run_cli

from hosttune.commands.facts import render
from hosttune.facts import Container, Facts, Mount


def _rows(f: Facts) -> dict:
    out: dict = {}
    for line in render(f).splitlines():
        key, _, value = line.partition("  ")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_a_docker_container_with_gpus_draws_its_rows() -> None:
    c = Container(detected=True, runtime="docker", evidence=("/.dockerenv exists", "/proc/1/cgroup: /docker/ab"),
                  proc_sys_readonly=True, sys_readonly=False, nvidia_devices=("nvidia0", "nvidiactl"), gpu_nodes=1,
                  driver_gpus=8, cgroup_limits=("cpus 0-3", "2 CPUs", "4096 MiB"),
                  host_values=("memory is the host's", "kernel settings are the host's"))
    lines = render(Facts(root="/captured", hostname="c1", container=c)).splitlines()
    assert lines[-6:] == [
        "container          docker (/.dockerenv exists; /proc/1/cgroup: /docker/ab)",
        "container limits   cpus 0-3, 2 CPUs, 4096 MiB",
        "container host fs  /proc/sys read-only",
        "container gpus     1 passed in of 8 the driver has  (nvidia0 nvidiactl)",
        "host's             memory is the host's",
        "host's             kernel settings are the host's",
    ]
    assert lines[0] == "host               c1 (/captured)"


def test_a_bare_container_draws_unknowns_and_writable_host_fs() -> None:
    c = Container(detected=True, driver_gpus=2, gpu_nodes=0)
    rows = _rows(Facts(container=c))
    assert rows["container"] == ["unknown ()"]
    assert rows["container limits"] == ["none in its cgroup"]
    assert rows["container host fs"] == ["/proc/sys and /sys writable"]
    assert rows["container gpus"] == ["0 passed in of 2 the driver has  (no /dev/nvidia*)"]
    both = _rows(Facts(container=Container(detected=True, runtime="podman", proc_sys_readonly=True,
                                           sys_readonly=True, nvidia_devices=("nvidia3",), gpu_nodes=1)))
    assert both["container host fs"] == ["/proc/sys and /sys read-only"]
    assert both["container gpus"] == ["1 passed in  (nvidia3)"]
    assert "container gpus" not in _rows(Facts(container=Container(detected=True, runtime="lxc")))


def test_no_container_rows_outside_one() -> None:
    rows = _rows(Facts(container=Container(detected=False, runtime="docker", host_values=("x",))))
    assert not {"container", "container limits", "container host fs", "container gpus", "host's"} & set(rows)


def test_only_dev_shm_of_the_tmpfs_mounts_is_drawn() -> None:
    f = Facts(storage=(Mount("/run/user/1000", "tmpfs", "tmpfs", None, "tmpfs", size_mb=64),
                       Mount("/dev/shm", "tmpfs", "tmpfs", None, "tmpfs", size_mb=0),
                       Mount("/srv", "xfs", "/dev/sdb1", "sdb", "hdd", size_mb=None),
                       Mount("/x", "overlay", "overlay", None, "unknown", size_mb=12)))
    lines = [ln for ln in render(f).splitlines() if ln.startswith("storage")]
    assert lines == ["storage /dev/shm  tmpfs (tmpfs)  0 MiB", "storage /srv      hdd (xfs, sdb)",
                     "storage /x        unknown (overlay)  12 MiB"]


def test_capture_with_root_and_force_without_capture_are_refused(tmp_path: object) -> None:
    done = run_cli(["facts", "--capture", "/tmp/x-never-made", "--root", "/"])
    assert done.returncode == 2 and done.stdout == ""
    assert "--capture and --root: --capture records this host, not a captured one" in done.stderr
    done = run_cli(["facts", "--force"])
    assert done.returncode == 2 and done.stdout == ""
    assert "--force goes with --capture DEST.tar.gz (it replaces an existing archive)" in done.stderr


def test_a_driver_with_no_gpus_is_still_named() -> None:
    rows = _rows(Facts(container=Container(detected=True, nvidia_devices=("nvidiactl",), gpu_nodes=0, driver_gpus=0)))
    assert rows["container gpus"] == ["0 passed in of 0 the driver has  (nvidiactl)"]
