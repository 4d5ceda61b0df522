"""Shared test fixtures: captured hosts from ../shared/fixtures, a scrubbed environment, the fake NVML."""

import contextlib
import inspect
import json
import os
import re
import shutil
import signal
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
HWLOC = SHARED / "fixtures" / "hwloc-linux"
DISTROS = SHARED / "fixtures" / "distros"
FAKES = Path(__file__).resolve().parent / "fakes"
PROBES = Path(__file__).resolve().parent / "probes"  # rank probe scripts for the exec tests

# No test may exec in the pytest process itself: a hosttune change that lets an in-process CLI test (run_cli) reach a
# plain job's exec would replace the test run with the job (`true` exits 0: pytest "passes" with most tests unrun, and
# a mutation round counts the change as survived). A forked child (another pid) execs as usual.
_PYTEST_PID = os.getpid()
_REAL_EXECVE = os.execve


def _execve_outside_pytest(path: Any, args: Any, env: Any) -> None:
    if os.getpid() == _PYTEST_PID:
        raise AssertionError(f"os.execve({path!r}, ...) in the pytest process itself: it would replace the test run")
    _REAL_EXECVE(path, args, env)


os.execve = _execve_outside_pytest  # type: ignore[assignment]

# Per-CPU sysfs folders nothing in hosttune reads: skipping them halves the extraction (about 24,000 files).
_UNREAD = re.compile(r"/sys/devices/system/cpu/cpu\d+/(cache|cpuidle|power|microcode|hotplug)/|/cpufreq/stats/")

HWLOC_NAMES = sorted(p.name[: -len(".tar.gz")] for p in HWLOC.glob("*.tar.gz"))


# ---- anyversion: tests that exercise nothing version-specific ---------------------------------------------------
# They check repository text (the README against the CLI's own tables, docs, manifests, packaging scripts run by
# /bin/sh, the architecture's static rules, boundary.py's rows against the source's syntax trees, the test
# scheduler): the answer is the same under any interpreter, so the Python 3.9 pass (Makefile pytest-py39) leaves
# them to the 3.11 pass (issue 21: "cut duplicate runs between the 3.9 and 3.11 passes"). Whole modules by file
# name, or single tests as "file::function" (every parametrized case of it). Not here: anything that runs hosttune
# code for its behaviour (its CLI, planner, detectors, launchers), or imports a module to see what it imports.
ANYVERSION = frozenset({
    "test_readme.py",  # README's claims and samples; the manifests' and the image's hosttune runs on 3.11
    "test_k8s_manifests.py",  # contrib/kubernetes: run by the container image (Debian 12's Python 3.11)
    "test_packaging_pins2.py",  # the .deb/.rpm maintainer scripts, run by /bin/sh
    "test_pyproject.py",
    "test_xdist_sched.py",  # the test scheduler (tests/_xdist_sched.py), fed with synthetic scopes
    "test_architecture.py::test_import_contracts_hold",
    "test_architecture.py::test_import_contracts_catch_an_upward_import_and_torch_outside_the_engine",
    "test_architecture.py::test_no_module_is_over_600_lines_but_the_listed_ones_and_they_do_not_grow",
    "test_architecture.py::test_no_function_is_over_60_lines_but_the_listed_ones_and_they_do_not_grow",
    "test_architecture.py::test_the_ratchet_fails_a_new_offender_a_grown_entry_and_a_stale_one",
    "test_architecture.py::test_function_length_counts_code_not_its_docstring_or_literal_tables",
    "test_boundary.py::test_every_row_is_complete_and_unique",
    "test_boundary.py::test_every_row_names_a_test_that_exists",
    "test_boundary.py::test_every_hosttune_variable_has_a_row",
    "test_boundary.py::test_every_dangerous_call_site_has_a_row",
    "test_boundary.py::test_the_scans_see_each_kind_of_call_and_ignore_exceptions",
    "test_boundary.py::test_fake_nvml_is_read_by_no_module_of_hosttune",
    "test_boundary.py::test_every_test_security_md_names_exists",
    "test_boundary.py::test_every_gateway_a_row_names_exists",
})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        name = Path(str(item.fspath)).name
        if name in ANYVERSION or f"{name}::{getattr(item, 'originalname', item.name)}" in ANYVERSION:
            item.add_marker(pytest.mark.anyversion)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` hands out the heaviest modules first (tests/_xdist_sched.py: issue 21's pass times)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from _xdist_sched import LongestFirstScheduling

    return LongestFirstScheduling(config, log)


def _hwloc_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this run's hwloc trees go: under pytest-xdist the run's own directory that all its workers share
    (basetemp's parent, pytest-N/: new for every run, so two runs at once never meet), else this session's."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = tmp_path_factory.getbasetemp().parent / "hwloc-shared"
        base.mkdir(mode=0o700, exist_ok=True)
        return base
    return tmp_path_factory.mktemp("hwloc")


def extract_hwloc(base: Path, name: str) -> Path:
    """base/<name>: the archive extracted once for all of this run's workers (issue 21: each worker unpacked every
    archive again, ~11 CPU-s a worker). One worker extracts under an exclusive lock into a private directory and
    renames it into place; the others wait for the lock and find the finished tree (never a half-written one)."""
    import fcntl

    final = base / name
    with open(base / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not final.is_dir():
            part = base / f".{name}.part-{os.getpid()}"
            shutil.rmtree(part, ignore_errors=True)
            with tarfile.open(HWLOC / f"{name}.tar.gz") as tar:
                members = [m for m in tar.getmembers() if not _UNREAD.search(m.name)]
                if sys.version_info >= (3, 12):
                    tar.extractall(part, members=members, filter="tar")
                else:
                    tar.extractall(part, members=members)
            os.rename(part / name, final)
            shutil.rmtree(part)
    return final


@pytest.fixture(scope="session")
def hwloc_tree(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """hwloc_tree(name) -> the extracted root of ../shared/fixtures/hwloc-linux/<name>.tar.gz (once per run, shared
    by its xdist workers). The trees are read-only inputs: a test that changes one copies it first."""
    base = _hwloc_base(tmp_path_factory)
    done: Dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            done[name] = extract_hwloc(base, name)
        return done[name]

    return get


def hwloc_expected(name: str) -> Dict[str, Any]:
    return json.loads((HWLOC / f"{name}.expected.json").read_text())  # type: ignore[no-any-return]


def build_tree(root: Path, files: Dict[str, str], links: Optional[Dict[str, str]] = None) -> Path:
    """Write a host tree: files (host path -> text) and symbolic links (host path -> target, as on the host)."""
    for rel, text in files.items():
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for rel, target in (links or {}).items():
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(target)
    return root


class Result:
    """What a CLI run gave: exit status, stdout and stderr apart."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_cli(args: List[str], env: Optional[Dict[str, str]] = None) -> Result:
    """The real CLI in-process (click's runner: the machine is shared and an interpreter start costs ~1 s there)."""
    from hosttune.cli import cli

    res = cli_runner().invoke(cli, args, env=env, catch_exceptions=False)
    return Result(res.exit_code, res.stdout, res.stderr)


def job_processes(marker: str) -> List[int]:
    """Every process (but this one) whose environment carries `marker` ("KEY=value"), read from /proc (one inside
    execve, whose environment reads empty for a moment, is waited for: procfs.environ_holders)."""
    from hosttune.launch import procfs

    return procfs.environ_holders(marker)


def boot_in_nspawn(tmp_path: Path, out: Path, units: Path, binds: List[str], after: str = "basic.target",
                   timeout: int = 120, units_writable: bool = False) -> Tuple[Dict[str, str], str]:
    """Boot systemd in a container (this host's /usr, a volatile tmpfs root, no network, /etc read-only) with
    `units` as /etc/systemd/system, and run /mnt/out/test.sh (`out`) as ht-test.service after `after`. Returns the
    key=value lines the script wrote to /mnt/out/result and its output; skips when nspawn could not boot here.
    `units_writable`: /etc/systemd/system is bound read-write (for `systemctl enable` in there)."""
    import subprocess

    nspawn = shutil.which("systemd-nspawn")
    if nspawn is None or os.geteuid() != 0:
        pytest.skip("needs systemd-nspawn and root")
    units_bind = f"--bind{'' if units_writable else '-ro'}={units}:/etc/systemd/system"
    (units / "ht-test.service").write_text(
        f"[Unit]\nAfter={after}\n[Service]\nType=oneshot\nExecStart=/bin/sh /mnt/out/test.sh\n"
        "StandardOutput=file:/mnt/out/test.log\nStandardError=inherit\n")
    root = tmp_path / "root"
    (root / "usr").mkdir(parents=True)
    # The host's /usr under the container's root, bound read-only inside a mount namespace of its own: it is gone
    # when that namespace ends, however the test ends (a bind left in the host's namespace, after a killed run, put
    # the real /usr under pytest's temporary directory, which pytest deletes a few runs later).
    bind_usr = 'mount --bind /usr "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    res = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", bind_usr, "sh", str(root / "usr"),
         "timeout", str(timeout), nspawn, "--quiet", f"--directory={root}", "--volatile=yes", "--register=no",
         "--keep-unit", "--link-journal=no", f"--uuid={os.urandom(16).hex()}", "--private-network",
         "--bind-ro=/etc", *binds, units_bind, f"--bind={out}:/mnt/out",
         "--boot", "systemd.unit=ht-test.service"],
        capture_output=True, text=True, timeout=timeout + 30)
    assert not any(line.split()[1] == str(root / "usr") for line in Path("/proc/self/mounts").read_text().splitlines()
                   if len(line.split()) > 1), "the container's /usr bind leaked into this mount namespace"
    if not (out / "result").exists():
        pytest.skip(f"systemd-nspawn --boot did not run here (rc {res.returncode}): {res.stderr[-800:]}")
    result = dict(line.split("=", 1) for line in (out / "result").read_text().splitlines() if "=" in line)
    log = (out / "test.log").read_text() if (out / "test.log").exists() else ""
    return result, log


def cli_runner() -> Any:
    """A click CliRunner whose results keep stderr apart: click < 8.2 mixes it in unless told (Debian 11/EL9 ship
    click 7.1), click 8.2 removed the switch and always keeps it apart."""
    from click.testing import CliRunner

    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return CliRunner(mix_stderr=False)
    return CliRunner()


# What a test must not inherit from the shell that started pytest: hosttune's own settings, thread counts and the
# allocator/device settings a profile plans (`eval "$(hosttune env)"` or `hosttune exec make test` would set them).
_INHERITED = ("LD_PRELOAD", "MALLOC_CONF", "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
              "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE")


def scrub_env(mp: pytest.MonkeyPatch, base: Path) -> None:
    """Point HOME, the XDG directories and hosttune's four directories under `base` (not created: hosttune makes
    them as on a fresh host) and drop every inherited HOSTTUNE_*/OMP/MKL/KMP/allocator setting (flask's CliRunner
    style): nothing reads or writes the host's /etc/hosttune, /run/hosttune, /var/lib/hosttune, /var/log/hosttune or
    the user's cache, so two test runs at once (or a real hosttune in use) do not meet."""
    for key in list(os.environ):
        if key.startswith(("HOSTTUNE_", "OMP_", "MKL_", "KMP_")) or key in _INHERITED:
            mp.delenv(key, raising=False)
    home = base / "home"
    home.mkdir(exist_ok=True)
    mp.setenv("HOME", str(home))
    mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    mp.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # the exec cache, a user's plain-job handoffs
    # As root the runtime directory must pass the trust rule: `base` and every directory above it are root's and not
    # group/other-writable (pytest makes its directories 0700; /tmp above them is sticky), see
    # test_the_per_test_directories_pass_the_trust_rule.
    mp.setenv("HOSTTUNE_ETC_DIR", str(base / "etc-hosttune"))
    mp.setenv("HOSTTUNE_RUNTIME_DIR", str(base / "run-hosttune"))
    mp.setenv("HOSTTUNE_STATE_DIR", str(base / "state-hosttune"))
    mp.setenv("HOSTTUNE_LOG_DIR", str(base / "log-hosttune"))
    if os.geteuid() == 0:
        # root's handoffs go to its runtime directory (as under sudo, which drops XDG_RUNTIME_DIR), not to a login's
        # /run/user/0 shared by every test run on the machine
        mp.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        xdg = base / "xdg-run"  # a login's runtime directory: the user's alone, 0700
        xdg.mkdir(mode=0o700, exist_ok=True)
        xdg.chmod(0o700)
        mp.setenv("XDG_RUNTIME_DIR", str(xdg))


@pytest.fixture(scope="session", autouse=True)
def _scrub_session_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same scrub for the whole session, under directories of the session's own: module- and session-scoped
    fixtures (one training run shared by a module's tests, `facts --capture`, a profile loaded once) are set up
    before any test's own `_scrub_env`, and would otherwise run hosttune with the shell's environment and the host's
    real directories (issue 21: a test's result must not depend on the machine's state or the caller's shell)."""
    with pytest.MonkeyPatch.context() as mp:
        scrub_env(mp, tmp_path_factory.mktemp("session-env"))
        yield


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's tmp_path as pytest makes it (a new 0700 directory under the run's base temporary directory, named
    after the test), by mkdtemp: pytest's own lists the whole base directory to number each test's directory, and
    every test's is in there, so a worker's n-th test read n entries first (issue 21: 2,580 empty tests, a make
    check worker's share, took 11 CPU-seconds in one process, 6 this way; 40 modules' 828 tests 32 -> 25). The name
    is as long as pytest's (22 characters of the test's and mkdtemp's 8 for its 30 and a number): sockets made in
    there keep their room under the 108-byte limit."""
    name = re.sub(r"\W", "_", request.node.name)[:22]
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path_factory.getbasetemp()))


_PYTEST_OWN = "PYTEST_CURRENT_TEST"  # pytest's own, set for each phase of each test
# Set in their own process by libraries a test uses, on first use (torch._inductor's cache_dir(), deepspeed's
# import): put back like any other, without failing the test that happened to be first.
_LIBRARIES_OWN = ("TORCHINDUCTOR_CACHE_DIR", "PYTORCH_NVML_BASED_CUDA_CHECK")


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # a test removed the directory it had moved into
        return "(removed)"


@contextlib.contextmanager
def process_kept() -> Iterator[None]:
    """What runs inside leaves this process's environment, working directory, umask and CPU affinity as it found
    them: what it changed is put back, then pytest.fail names it (not what _LIBRARIES_OWN lists)."""
    before = dict(os.environ)
    cwd, mask, cpus = _cwd(), os.umask(0o022), os.sched_getaffinity(0)
    os.umask(mask)
    yield
    after = dict(os.environ)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and k != _PYTEST_OWN)
    left = [k for k in changed if k not in _LIBRARIES_OWN]
    if changed:
        os.environ.clear()
        os.environ.update(before)
        os.environ.pop(_PYTEST_OWN, None)
        if _PYTEST_OWN in after:
            os.environ[_PYTEST_OWN] = after[_PYTEST_OWN]
    if _cwd() != cwd:
        left.append(f"the working directory {_cwd()}")
        os.chdir(cwd if os.path.isabs(cwd) else "/")
    now = os.umask(mask)
    if now != mask:
        left.append(f"umask {now:04o}")
    if os.sched_getaffinity(0) != cpus:
        left.append("the CPU affinity")
        os.sched_setaffinity(0, cpus)
    if left:
        pytest.fail(f"the test left its process changed (use monkeypatch): {' '.join(left)}", pytrace=False)


@pytest.fixture(autouse=True)
def _process_kept() -> Iterator[None]:
    """Each test runs in process_kept(): a test that changes the process by hand (not through monkeypatch) fails,
    in every order the tests run (a product call that sets a variable in-process, hook.py's HOSTTUNE_JOB_CPUS,
    leaked into a module fixture of a later test on the same worker only in some orders: CI failed at a0f1d7c with
    SEED=54665510). Set up before the monkeypatch of _scrub_env (its first argument), so it compares after every
    monkeypatch undo."""
    with process_kept():
        yield


@pytest.fixture(autouse=True)
def _scrub_env(_process_kept: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test gets its own HOME and hosttune directories (under its tmp_path) and no inherited settings."""
    scrub_env(monkeypatch, tmp_path)


_DISPOSITIONS = tuple(getattr(signal, n) for n in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2",
                                                   "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGALRM"))


@pytest.fixture(autouse=True)
def _keep_signal_dispositions() -> Iterator[None]:
    """What a test leaves in this process's signal handling is put back: a CLI run in-process (the monitor ignores
    SIGHUP until its log is open) would otherwise leave SIG_IGN, which every child a later test starts inherits
    across exec (a test's result must not depend on the tests before it)."""
    saved = {s: signal.getsignal(s) for s in _DISPOSITIONS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    for s, how in saved.items():
        if how is not None and signal.getsignal(s) != how:
            signal.signal(s, how)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[Any], Dict[str, str]]]:
    """fake_nvml(scenario) installs tests/fakes/pynvml.py for this process and returns the env for subprocesses.

    The scenario is also written to a JSON file named by $HOSTTUNE_FAKE_NVML, so a `hosttune` child process (with
    the returned PYTHONPATH) sees the same fake host; rewrite that file to change the host under a running process.
    """
    monkeypatch.syspath_prepend(str(FAKES))
    saved = sys.modules.pop("pynvml", None)
    import pynvml  # the fake, now first on sys.path

    assert Path(pynvml.__file__).parent == FAKES

    def configure(scenario: Any) -> Dict[str, str]:
        path = tmp_path / "nvml-scenario.json"
        path.write_text(json.dumps(scenario))
        monkeypatch.setenv("HOSTTUNE_FAKE_NVML", str(path))
        pynvml.fake_configure(scenario)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
        return env

    yield configure
    sys.modules.pop("pynvml", None)
    if saved is not None:
        sys.modules["pynvml"] = saved


def a100(index: int, bus: str, numa: int = 0, **over: Any) -> Dict[str, Any]:
    """One healthy datacenter GPU for fake NVML scenarios."""
    dev = {
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": f"GPU-{index:08x}-1111-2222-3333-444444444444",
        "pci_bus_id": f"00000000:{bus}:00.0",
        "memory_total_mb": 81920,
        "memory_used_mb": 512,
        "persistence_mode": 1,
        "ecc": [1, 1],
        "temperature_c": 38,
        "utilization": [0, 0],
        "power_mw": 65000,
        "power_limit_mw": 400000,
        "clocks": {"sm": 1410, "mem": 1593, "graphics": 1410},
        "clock_event_reasons": 0x1,
        "ecc_uncorrected_volatile": 0,
        "retired_pages_pending": 0,
        "remapped_rows": [0, 0, 0, 0],
        "pcie": {"gen": 4, "gen_max": 4, "width": 16, "width_max": 16},
        "numa_node": numa,
    }
    dev.update(over)
    return dev


def checkout_env(**extra: str) -> Dict[str, str]:
    """This environment with this checkout first on PYTHONPATH (a child `python -m hosttune` or a rank importing
    hosttune gets this checkout's code from any directory), plus `extra`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def torchrun_env(**extra: str) -> Dict[str, str]:
    """checkout_env for a 2-rank job on this 2-core machine: one OpenMP thread per rank, plus `extra`."""
    return checkout_env(**{"OMP_NUM_THREADS": "1", **extra})


@pytest.fixture
def probe_env(tmp_path: Path) -> Dict[str, str]:
    """The environment for a job of tests/probes/: each rank writes its report into $PROBE_OUT. `python -m hosttune`
    with it runs this checkout's hosttune from any directory (tests/probes/, a tmp_path), never whichever checkout a
    `pip install -e` on this machine last pointed at (two clones tested at once)."""
    out = tmp_path / "out"
    out.mkdir()
    return checkout_env(PROBE_OUT=str(out), PROBE_PYTHON=sys.executable)


# ---- the other user on the box -------------------------------------------------------------------------------
# Root-safety tests play a second, unprivileged local user: they plant files as that user (setpriv, real uid/gid
# changes, no capabilities) and then run hosttune as root, which must refuse or ignore what was planted.
OTHER_UID = 65534  # nobody
OTHER_GID = 65534  # nogroup


class OtherUser:
    """`nobody`, with a directory of their own under /tmp (world-traversable, as a user's home or /tmp dir is)."""

    uid = OTHER_UID
    gid = OTHER_GID

    def __init__(self, home: Path) -> None:
        self.home = home

    def run(self, argv: Any, **kw: Any) -> "Any":
        """Run argv as the other user (setpriv: real+effective uid/gid, no supplementary groups)."""
        import subprocess

        cmd = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 60)
        return subprocess.run(cmd, check=False, **kw)

    def hosttune(self, *args: str, cwd: Optional[Path] = None) -> "Any":
        """`python3 -m hosttune ARGS` as the other user, on the distro's /usr/bin/python3 (they cannot enter a pyenv or
        venv under /root) with a copy of this checkout's package in their home (the checkout itself may sit in a
        directory only root can enter, as a `mktemp -d` clone does). Skips without /usr/bin/python3."""
        import shutil

        py = "/usr/bin/python3"
        if not os.path.exists(py):
            pytest.skip(f"running hosttune as another user needs {py}")
        src = self.home / ".hosttune-src"
        if not src.exists():
            shutil.copytree(REPO / "hosttune", src / "hosttune", ignore=shutil.ignore_patterns("__pycache__"))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "PYTHONPATH": str(src),
               "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8"}
        return self.run([py, "-m", "hosttune", *args], env=env, cwd=str(cwd or self.home))

    def write(self, rel: str, content: Any, mode: int = 0o644) -> Path:
        """A file the other user owns (created by them, so every directory they made on the way is theirs)."""
        path = self.home / rel
        done = self.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"', "sh", str(path),
                         f"{mode:o}"], input=content if isinstance(content, str) else content.decode())
        assert done.returncode == 0, done.stderr
        return path


@pytest.fixture
def handed() -> Iterator[str]:
    """A handoff file (hosttune/launch/handoff.py) of a 1-rank torchrun job, as `hosttune exec` writes it for the
    shim; removed afterwards."""
    from hosttune.launch import handoff
    from hosttune.launch.job import prepare

    job = prepare(["torchrun", "--nproc_per_node=1", "t.py"])
    path = handoff.write(handoff.payload(job, "m"))
    try:
        yield path
    finally:
        handoff.remove(path)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where a planted program would leave its mark if it ran (a private directory: only the test writes there)."""
    d = tmp_path / "markers"
    d.mkdir(mode=0o700)
    return d / "ran"


@pytest.fixture
def other_user() -> Iterator[OtherUser]:
    """The second, unprivileged user. Needs root (to become them) and setpriv; skipped otherwise."""
    import shutil
    import subprocess
    import tempfile

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("playing another user needs root and setpriv")
    home = Path(tempfile.mkdtemp(prefix="hosttune-other-", dir="/tmp"))
    os.chown(home, OTHER_UID, OTHER_GID)
    os.chmod(home, 0o755)
    try:
        yield OtherUser(home)
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(home)], check=False)
