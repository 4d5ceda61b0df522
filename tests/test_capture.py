"""`hosttune facts --capture`: the files `--root` reads, nothing else (no secrets), links kept as links; `facts --root`
of a capture equals the live `facts` except the fields listed in capture.LIVE_ONLY."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import run_cli

from hosttune import capture

REPO = Path(__file__).resolve().parents[1]


def hosttune(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)


def masked(facts: Dict[str, Any]) -> Dict[str, Any]:
    """`facts` without the LIVE_ONLY fields ("a.b", "a[].b": field b of every item of list a)."""
    out = json.loads(json.dumps(facts))
    for field in capture.LIVE_ONLY:
        head, _, rest = field.partition(".")
        if head.endswith("[]"):
            for item in out.get(head[:-2]) or []:
                item.pop(rest, None)
        elif rest:
            (out.get(head) or {}).pop(rest, None)
        else:
            out.pop(head, None)
    return out


def differences(a: Any, b: Any, path: str = "") -> List[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: live {a!r} != replay {b!r}"]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("cap") / "host"
    done = hosttune("facts", "--capture", str(dest))
    assert done.returncode == 0, done.stderr
    assert f"hosttune facts --root {dest}" in done.stdout
    return dest


def test_facts_root_of_a_capture_equals_live_facts(captured: Path) -> None:
    # facts.json is the live `facts --json` taken by the capture itself: a `facts` run later could see a mount that
    # another process made in between
    live = json.loads((captured / "facts.json").read_text())
    replay = json.loads(run_cli(["facts", "--root", str(captured), "--json"]).stdout)  # reads files: in-process
    assert replay["root"] == str(captured) and live["root"] == "/"
    assert differences(masked(live), masked(replay)) == []
    # the comparison is not empty: the facts that matter for a plan came back
    assert replay["cpu"]["logical"] == os.cpu_count() and replay["cpu"]["online"]
    assert replay["cpu"]["allowed_cpus"] == sorted(os.sched_getaffinity(0))
    assert replay["numa"]["nodes"] and replay["distro"]["id"] == live["distro"]["id"] != ""
    assert replay["kernel"]["thp"] == live["kernel"]["thp"] is not None
    manifest = json.loads((captured / "capture.json").read_text())
    assert manifest["schema"] == capture.SCHEMA and manifest["files"] > 10 and not manifest["truncated"]
    assert manifest["live_only"] == capture.LIVE_ONLY
    now = json.loads(hosttune("facts", "--json").stdout)  # facts.json is what `facts --json` says
    assert now["cpu"] == live["cpu"] and now["distro"] == live["distro"] and now["schema"] == live["schema"]


def test_only_allowed_paths_and_no_secrets(captured: Path) -> None:
    top = sorted(p.name for p in captured.iterdir())
    assert set(top) <= set(capture.ALLOWED_TOP) | {"capture.json", "facts.json"}, top
    for dirpath, dirnames, filenames in os.walk(captured):
        for name in dirnames + filenames:
            host = os.path.join(dirpath, name)[len(str(captured)):]
            if host in ("/capture.json", "/facts.json"):
                continue
            assert capture.refused(host) is None, host
            st = os.lstat(os.path.join(dirpath, name))
            assert st.st_size <= capture.READ_LIMIT
    assert not (captured / "etc" / "shadow").exists() and not (captured / "root").exists()
    # links stay links, so --root resolves them inside the tree as on the host
    if os.path.islink("/proc/self"):
        assert (captured / "proc" / "self").is_symlink()
    pci = Path("/sys/bus/pci/devices")
    if pci.is_dir() and any(pci.iterdir()):
        first = sorted(pci.iterdir())[0]
        assert (captured / str(first).lstrip("/")).is_symlink()
        assert os.readlink(captured / str(first).lstrip("/")) == os.readlink(first)


@pytest.mark.parametrize("host,why", [
    ("/etc/shadow", "secret"), ("/etc/gshadow-", "secret"), ("/etc/ssh/ssh_host_ed25519_key", "secret"),
    ("/etc/munge/munge.key", "secret"), ("/etc/ssl/private/x", "secret"), ("/etc/krb5.keytab", "secret"),
    ("/etc/sudoers.d/admins", "secret"), ("/opt/app/server.pem", "secret"),
    ("/root/.bashrc", "outside"), ("/home/u/.ssh/id_rsa", "outside"), ("/tmp/x", "outside"), ("/var/lib/x", "outside"),
    ("/proc/self/environ", "per-process"), ("/proc/1234/cmdline", "per-process"), ("/proc/self/mem", "per-process"),
    ("/etc/os-release", None), ("/proc/self/mountinfo", None), ("/proc/1234/comm", None), ("/proc/cpuinfo", None),
    ("/sys/devices/system/node/node0/cpulist", None), ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", None),
])
def test_refused(host: str, why: Optional[str]) -> None:
    got = capture.refused(host)
    assert (got is None) if why is None else (got is not None and why in got), got


def test_a_probe_asking_for_a_secret_gets_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "cap"
    dest.mkdir()
    cap = capture.Capture(dest)
    cap.add("read", "/etc/shadow")
    cap.add("read", "/proc/self/environ")
    cap.add("list", "/etc/ssh")
    cap.add("read", "/proc/self/status")
    assert "/etc/shadow" in cap.refused and "/etc/ssh" in cap.refused
    assert [p for p in cap.refused if p.startswith("/proc/") and p.endswith("/environ")]  # after /proc/self -> pid
    assert not (dest / "etc" / "shadow").exists() and not (dest / "etc" / "ssh").exists()
    assert not list(dest.glob("proc/*/environ"))
    status = dest / "proc" / "self" / "status"
    assert status.read_bytes().startswith(b"Name:")  # read through the recreated /proc/self link


def test_archive_round_trip(tmp_path: Path, captured: Path) -> None:
    out = tmp_path / "node7.tar.gz"
    done = hosttune("facts", "--capture", str(out))
    assert done.returncode == 0, done.stderr
    assert "tar xzf node7.tar.gz && hosttune facts --root node7" in done.stdout
    assert oct(out.stat().st_mode & 0o777) == "0o600" and not list(tmp_path.glob(".hosttune-capture-*"))
    with tarfile.open(out) as tar:
        names = tar.getnames()
        assert all(n == "node7" or n.startswith("node7/") for n in names)
        if sys.version_info >= (3, 12):
            tar.extractall(tmp_path / "x", filter="tar")
        else:
            tar.extractall(tmp_path / "x")
    tree = tmp_path / "x" / "node7"
    replay = masked(json.loads(run_cli(["facts", "--root", str(tree), "--json"]).stdout))  # reads files: in-process
    assert differences(masked(json.loads((tree / "facts.json").read_text())), replay) == []


@pytest.mark.parametrize("setup,args,message", [
    ("nonempty", [], "exists and is not an empty directory"),
    ("link", [], "exists and is not an empty directory"),
    ("none", ["--root", "/"], "--capture and --root"),
])
def test_bad_capture_usage_exits_2(tmp_path: Path, setup: str, args: List[str], message: str) -> None:
    dest = tmp_path / "dest"
    if setup == "nonempty":
        dest.mkdir()
        (dest / "x").write_text("")
    elif setup == "link":
        (tmp_path / "elsewhere").mkdir()
        dest.symlink_to(tmp_path / "elsewhere")
    done = run_cli(["facts", "--capture", str(dest), *args])  # in-process: refused before anything is read
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    if setup == "link":
        assert not list((tmp_path / "elsewhere").iterdir())  # nothing written through the link


# ---- issue 22, Low: `facts --capture X.tar.gz` never replaces a file silently ----------------------------------------
@pytest.mark.parametrize("existing", ["file", "link"])
def test_capture_refuses_to_replace_an_existing_archive_in_one_line(existing: str, tmp_path: Path) -> None:
    """Was: the existing file (a support bundle sent earlier, or anything of that name) silently replaced."""
    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    if existing == "file":
        out.write_bytes(b"earlier bundle\n")
    else:
        out.symlink_to(keep)
    done = run_cli(["facts", "--capture", str(out)])  # in-process: refused before anything is read
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"hosttune: error: --capture {out}: exists; name a new file, or add --force to " \
                                  f"replace it", done.stderr
    assert keep.read_bytes() == b"earlier bundle\n" and os.path.lexists(out)
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz", "keep"]  # no work directory left


def test_capture_force_replaces_the_archive_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--force replaces it (through the atomic writer: a new file, never written through a link at the name);
    the capture itself is the one test_capture.py runs, here a one-file tree."""
    def small_tree(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        (dest / "capture.json").write_text("{}\n")
        return {"files": 1, "bytes": 3, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", small_tree)
    d = tmp_path / "d"
    d.mkdir()
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    out = d / "bundle.tgz"
    out.symlink_to(keep)
    with pytest.raises(capture.UserError, match="add --force"):
        capture.capture(str(out))
    capture.capture(str(out), force=True)
    assert not out.is_symlink() and keep.read_bytes() == b"earlier bundle\n"
    with tarfile.open(out) as tar:
        assert tar.getnames() == ["bundle", "bundle/capture.json"]
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tgz", "keep"]


def test_force_without_capture_is_one_line() -> None:
    done = run_cli(["facts", "--force"])
    assert done.returncode == 2 and done.stderr.strip() == \
        "hosttune: error: --force goes with --capture DEST.tar.gz (it replaces an existing archive)", done.stderr


def test_capture_never_replaces_an_archive_that_appeared_while_it_ran(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"

    def tree_then_someone_writes_the_archive(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        out.write_bytes(b"theirs\n")
        return {"files": 0, "bytes": 0, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", tree_then_someone_writes_the_archive)
    with pytest.raises(capture.UserError, match="exists; name a new file, or add --force"):
        capture.capture(str(out))
    assert out.read_bytes() == b"theirs\n" and sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz"]


def test_capture_into_a_directory_it_cannot_read_is_one_line(other_user: Any) -> None:
    """Was: os.lstat/os.listdir outside the try, so an existing directory the user cannot read (EACCES, as the user
    running hosttune; root reads any) gave a PermissionError traceback. Now one line naming it, exit 2."""
    locked = other_user.home / "locked"
    done = other_user.run(["mkdir", "-m", "000", str(locked)])
    assert done.returncode == 0, done.stderr
    done = other_user.hosttune("facts", "--capture", str(locked))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == f"hosttune: error: --capture {locked}: cannot read: Permission denied", done.stderr
    assert not list(other_user.home.joinpath("locked").iterdir())  # nothing written (root reads it)
