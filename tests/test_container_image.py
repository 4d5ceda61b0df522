"""The container image (issue 27): contrib/container/Containerfile built with podman from the project's own .deb on
a Debian 12 base made from Debian's packages (mmdebstrap, then `podman import`: no image is pulled), then its root
file system (`podman image mount`) run under systemd-nspawn, read-only as contrib/kubernetes runs it: `hosttune
doctor --json` and `hosttune monitor --once --json` as root and as uid 65534 (nobody, the monitor DaemonSet's user).

`podman run` cannot work in this sandbox (it refuses setrlimit); `podman build --isolation chroot` does. Podman's
storage is the module's own (vfs, no mounts, under a temporary directory with its own runroot, tmpdir and config
files) and is removed afterwards. The .deb is the package tests' build and the base's tarball is cached like their
roots (tests/test_packages.py's helpers). Needs root, podman, mmdebstrap and systemd-nspawn (skipped with the reason
when one is missing) and the Debian mirror for the first mmdebstrap; warm cache about 1.5 min.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
import test_packages
from test_packages import REPO, root_tarball, sh

pytestmark = [pytest.mark.integration]
pkgs = test_packages.pkgs  # the fixture: the package tests' .deb and .rpm, built once for this module too

CONTAINERFILE = REPO / "contrib" / "container" / "Containerfile"
BASE = "localhost/hosttune-test-base:latest"
IMAGE = "localhost/hosttune:test"
NOBODY = 65534  # contrib/kubernetes/monitor-daemonset.yaml's runAsUser
# a non-root user as Kubernetes starts one: that uid and gid, no supplementary groups, the user's own environment
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--reset-env", "--"]


@pytest.fixture(scope="module")
def tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("the image test needs root (podman's storage, systemd-nspawn)")
    missing = [t for t in ("podman", "mmdebstrap", "systemd-nspawn") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the image test needs {', '.join(missing)} (apt-get install podman mmdebstrap "
                    "systemd-container)")


# podman keeps a blob-info cache in /var/lib/containers/cache as root, whatever --root says: each podman runs in a
# mount namespace of its own where /var/lib is an empty tmpfs (the storage is vfs: no mount has to outlive it).
PRIVATE_VAR_LIB = 'mount -t tmpfs -o mode=0755,size=16m hosttune-test-podman /var/lib && exec "$@"'


class Podman:
    """podman with storage, runroot, tmpdir and configuration of its own under `base`: no image, layer, container,
    cache, event or setting of this machine's (or of another test run's) is read or written."""

    def __init__(self, base: Path) -> None:
        self.base = base
        for d in ("storage", "tmp"):
            (base / d).mkdir(parents=True)
        # podman refuses a runroot longer than 50 characters, and pytest's temporary directories grow with xdist
        # (popen-gwN) and the test's name: the runroot is a short directory of its own, removed with the rest.
        self.run = Path(tempfile.mkdtemp(prefix="htpod-", dir="/tmp"))
        (base / "containers.conf").write_text(
            f'[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\ntmp_dir = "{base / "tmp"}"\n')
        (base / "storage.conf").write_text(
            f'[storage]\ndriver = "vfs"\ngraphroot = "{base / "storage"}"\nrunroot = "{self.run}"\n')
        (base / "registries.conf").write_text("unqualified-search-registries = []\n")
        self.env = dict(os.environ, CONTAINERS_CONF=str(base / "containers.conf"),
                        CONTAINERS_STORAGE_CONF=str(base / "storage.conf"),
                        CONTAINERS_REGISTRIES_CONF=str(base / "registries.conf"), TMPDIR=str(base / "tmp"))

    def __call__(self, *args: str, check: bool = True, timeout: float = 900) -> "subprocess.CompletedProcess[str]":
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_VAR_LIB, "sh",
                "podman", "--root", str(self.base / "storage"), "--runroot", str(self.run),
                "--storage-driver", "vfs", "--tmpdir", str(self.base / "tmp"), *args]
        return sh(argv, check=check, timeout=timeout, env=self.env)

    def remove_all(self) -> None:
        self("image", "unmount", "--all", check=False)
        self("system", "reset", "--force", check=False)
        shutil.rmtree(str(self.base), ignore_errors=True)
        shutil.rmtree(str(self.run), ignore_errors=True)


def deb_dependencies(deb: Path) -> List[str]:
    """The package names in the .deb's Depends and Recommends (first of each alternative, no versions)."""
    fields = sh(["dpkg-deb", "-f", str(deb), "Depends", "Recommends"]).stdout
    names = []
    for line in fields.splitlines():
        for dep in line.split(":", 1)[1].split(","):
            names.append(re.sub(r"\s*\(.*\)", "", dep.split("|")[0]).strip())
    return sorted(n for n in names if n)


class Image:
    def __init__(self, rootfs: Path, config: Dict[str, object], build_log: str) -> None:
        self.rootfs = rootfs
        self.config = config
        self.build_log = build_log


@pytest.fixture(scope="module")
def image(tools: None, pkgs: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    """The image built from the Containerfile and the .deb on the imported base; its root file system mounted (a
    directory of the vfs storage, run read-only by `nspawn`)."""
    deb = Path(pkgs["deb"])
    # The base: Debian 12 minbase from Debian's packages with the .deb's dependencies, so that the build installs
    # with no package lists and no download (the Containerfile's first try).
    tarball = root_tarball("bookworm", deb_dependencies(deb))
    work = tmp_path_factory.mktemp("image")
    podman = Podman(work / "podman")
    try:
        podman("import", str(tarball), BASE)
        context = work / "context"
        context.mkdir()
        shutil.copy2(str(deb), str(context / deb.name))
        build = podman("build", "--isolation", "chroot", "--pull=never", "--build-arg", f"BASE={BASE}",
                       "-f", str(CONTAINERFILE), "-t", IMAGE, str(context))
        config = json.loads(podman("image", "inspect", IMAGE).stdout)[0]
        size = int(config.get("Size", 0))
        print(f"\nimage {IMAGE}: {size / 1e6:.0f} MB, built on {BASE} from {deb.name}")
        rootfs = Path(podman("image", "mount", IMAGE).stdout.strip())
        yield Image(rootfs, config, build.stdout + build.stderr)
    finally:
        podman.remove_all()


def nspawn(image: Image, argv: List[str], user: Optional[List[str]] = None) -> "subprocess.CompletedProcess[str]":
    """`argv` in the image's root file system under systemd-nspawn: the root read-only (readOnlyRootFilesystem in
    contrib/kubernetes), no network of the host's, as root or through `user` (AS_NOBODY)."""
    machine = f"hosttune-image-{os.getpid()}"
    cmd = ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--pipe", "--read-only", "--private-network",
           f"--machine={machine}", f"--directory={image.rootfs}", *(user or []), *argv]
    try:
        return sh(["timeout", "120", *cmd], check=False, timeout=180)
    finally:
        propagate = Path("/run/systemd/nspawn/propagate") / machine
        if propagate.is_dir() and not any(propagate.iterdir()):
            propagate.rmdir()


def entrypoint(image: Image) -> List[str]:
    return list(image.config["Config"]["Entrypoint"])  # type: ignore[index]


def test_image_is_the_deb_installed_offline(image: Image, pkgs: Dict[str, Path]) -> None:
    """The image has the .deb installed (dpkg's record, byte-compiled), nothing left of the build (the .deb, package
    lists), hosttune as its entrypoint and `doctor` as its command; the install downloaded nothing."""
    config = image.config["Config"]
    assert isinstance(config, dict)
    assert config["Entrypoint"] == ["/usr/bin/hosttune"] and config["Cmd"] == ["doctor"], config
    assert config["Labels"]["org.opencontainers.image.title"] == "hosttune", config["Labels"]
    assert f"hosttune {pkgs['version']}" in image.build_log.splitlines(), image.build_log[-3000:]
    fetched = re.findall(r"^(?:Get|Hit|Ign|Err):\d+ (\S+)", image.build_log, flags=re.M)
    assert fetched == [f"/tmp/hosttune/{Path(pkgs['deb']).name}"], image.build_log[-3000:]  # apt took only the .deb
    status = (image.rootfs / "var/lib/dpkg/status").read_text()
    entry = re.search(r"^Package: hosttune\n(?:[^\n]+\n)*", status, flags=re.M)
    assert entry and "Status: install ok installed\n" in entry.group(0), entry
    assert f"Version: {pkgs['version']}\n" in entry.group(0)
    site = image.rootfs / "usr/lib/python3/dist-packages/hosttune"
    assert list(site.glob("__pycache__/cli.*.pyc")), "postinst's py3compile did not run"
    assert not (image.rootfs / "tmp/hosttune").exists()
    assert not [p for p in (image.rootfs / "var/lib/apt/lists").iterdir() if p.name != "partial"]


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_image_doctor_and_monitor_under_nspawn(image: Image, who: str) -> None:
    """The image's root file system, read-only, under systemd-nspawn: the entrypoint's `doctor --json` gives its
    findings (exit 0 or 1: a check fails) and `monitor --once --json` one sample of the host metrics (no NVIDIA driver
    in the image: NVML is said to be missing), as root and as uid 65534, without a traceback."""
    user = AS_NOBODY if who == "nobody" else None
    whoami = nspawn(image, ["id", "-u"], user)
    assert whoami.returncode == 0 and whoami.stdout.strip() == ("0" if user is None else str(NOBODY)), \
        whoami.stdout + whoami.stderr
    doctor = nspawn(image, entrypoint(image) + ["doctor", "--json"], user)
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stdout + doctor.stderr
    report = json.loads(doctor.stdout)
    assert report["findings"] and report["summary"], report
    assert all(f["status"] in ("pass", "warn", "fail", "skip") for f in report["findings"]), report["findings"]
    ids = {f["id"] for f in report["findings"]}
    assert {"os.distro", "cpu.nofile"} <= ids, sorted(ids)
    monitor = nspawn(image, entrypoint(image) + ["monitor", "--once", "--json"], user)
    assert monitor.returncode == 0 and "Traceback" not in monitor.stderr, monitor.stdout + monitor.stderr
    sample = json.loads(monitor.stdout)
    assert sample["nvml"] == "library_not_found" and sample["gpus"] == [], sample
    assert sample["host"]["mem_total_bytes"] > 0 and sample["host"]["load1"] >= 0, sample["host"]
    assert "NVML unavailable" in monitor.stderr, monitor.stderr
    print(f"\n{who}: doctor exit {doctor.returncode}, {len(report['findings'])} findings "
          f"({report['summary']}); monitor sample keys {sorted(sample)}, host keys {sorted(sample['host'])[:6]}...")
