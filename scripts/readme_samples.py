#!/usr/bin/env python3
"""Regenerate the README's samples from real runs of this checkout's hosttune on this machine.

    python3 scripts/readme_samples.py                  # every sample (the training and --deep take minutes)
    python3 scripts/readme_samples.py facts doctor     # only these
    python3 scripts/readme_samples.py --list           # the sample names

Each sample sits in README.md between `<!-- sample: NAME -->` and `<!-- /sample -->`; everything between the two
markers is replaced by a fenced block holding the commands (`$ ...`) and what they printed. Nothing else in the
README changes, and nothing is written when a command crashes (a traceback) or a sample comes out in an unexpected
shape: the script stops with one line naming the sample.

The runs never touch hosttune's real directories: HOSTTUNE_RUNTIME_DIR, _STATE_DIR, _LOG_DIR, _ETC_DIR, HOME and the
XDG directories point into one temporary directory (under build/, so that as root every directory above it is
root's, as /root and /etc are: a HOME under /tmp would be refused by the trust rule and change what facts prints).
In what is written to the README those places are printed as the ones they stand for (/run/hosttune,
/var/lib/hosttune, /var/log/hosttune, /etc/hosttune, your real HOME), and this checkout as ~/hosttune, so the README
holds neither temporary names nor the checkout's path. `hosttune tune` runs only `verify` on the live host (it
changes nothing); `apply` and `revert` run on a `facts --capture` of this host (`--root`).

Measured samples (the training, `doctor --deep`) start with a comment line saying how loaded the machine was. Two
things are left out, each said where it happens: `facts` rows of mounts under the temporary directory (a test's
leftover bind mount is not part of the host), and the doctor rows an excerpt does not pick (`...`).
Python 3.9; standard library only (torch is imported only by the runs themselves, in their own processes).
tests/test_readme.py checks the samples' structure against the CLI without running this script.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BEGIN = re.compile(r"^( *)<!-- sample: ([a-z0-9-]+) -->$", re.M)  # indented inside a list item: the block is too
END = "<!-- /sample -->"
RACY_S = 2  # hosttune.execcache.RACY_NS: an entry is recorded only when nothing it read changed in the last 2 s
# What a fresh shell on a fresh machine does not have: inherited settings that would change the samples.
SCRUB_PREFIXES = ("HOSTTUNE_", "OMP_", "MKL_", "KMP_", "PYTORCH_", "NCCL_", "TORCH_")
SCRUB = ("LD_PRELOAD", "MALLOC_CONF", "CUDA_VISIBLE_DEVICES", "XDG_RUNTIME_DIR", "PYTHONPATH", "SLURM_JOB_ID",
         "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE")


class SampleError(Exception):
    pass


class Sandbox:
    """hosttune's directories, HOME and a job directory, all inside one temporary directory."""

    def __init__(self) -> None:
        parent = REPO / "build"
        parent.mkdir(exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="readme-samples-", dir=str(parent)))
        os.chmod(self.root, 0o755)  # a rank that drops privileges must still reach the job directory
        self.real_home = os.path.expanduser("~")
        d = {name: self.root / name for name in ("run", "state", "log", "etc", "home")}
        for p in d.values():
            p.mkdir(mode=0o700 if p.name == "run" else 0o755)
        self.home = d["home"]
        self.job = self.home / "job"
        self.job.mkdir()
        for xdg_dir in (".config", ".cache"):  # present and private, as a login's are (else facts says so)
            (self.home / xdg_dir).mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if k not in SCRUB and not k.startswith(SCRUB_PREFIXES)}
        env.update(HOSTTUNE_RUNTIME_DIR=str(d["run"]), HOSTTUNE_STATE_DIR=str(d["state"]),
                   HOSTTUNE_LOG_DIR=str(d["log"]), HOSTTUNE_ETC_DIR=str(d["etc"]), HOME=str(self.home),
                   XDG_CONFIG_HOME=str(self.home / ".config"), XDG_CACHE_HOME=str(self.home / ".cache"),
                   COLUMNS="120", LC_ALL="C.UTF-8")
        if os.geteuid() != 0:  # a user's runtime directory: their own, inside the sandbox too
            xdg = self.root / "xdg-runtime"
            xdg.mkdir(mode=0o700)
            env["XDG_RUNTIME_DIR"] = str(xdg)
        if not _runs_this_checkout(env):
            env["PYTHONPATH"] = str(REPO)
        self.env = env
        self.places = [(env["XDG_RUNTIME_DIR"], f"/run/user/{os.geteuid()}")] if "XDG_RUNTIME_DIR" in env else []
        self.places += [(str(d["run"]), "/run/hosttune"), (str(d["state"]), "/var/lib/hosttune"),
                       (str(d["log"]), "/var/log/hosttune"), (str(d["etc"]), "/etc/hosttune"),
                       (str(self.home), self.real_home), (str(REPO), os.path.join(self.real_home, "hosttune"))]

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def shown(self, text: str) -> str:
        """`text` with the sandbox's places printed as the ones they stand for."""
        for real, shown in sorted(self.places, key=lambda p: -len(p[0])):
            text = text.replace(real, shown)
        return text

    def run(self, args: Sequence[str], extra: Optional[Dict[str, str]] = None, rcs: Tuple[int, ...] = (0,),
            merge: bool = False, timeout: float = 600) -> Tuple[int, str]:
        """`hosttune ARGS` in the job directory: (exit status, output). stdout, or stdout and stderr together."""
        env = dict(self.env, **(extra or {}))
        proc = subprocess.run([sys.executable, "-m", "hosttune", *args], cwd=str(self.job), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                              text=True, timeout=timeout)
        out = proc.stdout + ("" if merge else proc.stderr)
        if "Traceback (most recent call last)" in out or proc.returncode not in rcs:
            raise SampleError(f"`hosttune {' '.join(args)}` exited {proc.returncode}:\n{out[-3000:]}")
        return proc.returncode, out.rstrip("\n")


def _runs_this_checkout(env: Dict[str, str]) -> bool:
    out = subprocess.run([sys.executable, "-c", "import hosttune; print(hosttune.__file__)"], cwd="/", env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return out.strip() == str(REPO / "hosttune" / "__init__.py")


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().split()[0]


def _context(took: float) -> str:
    """The comment line of a measured sample: the machine and how busy it was."""
    return (f"# {os.cpu_count()} CPUs, load average {_load()} when it ended; {took:.0f} s in all"
            f" (generated by scripts/readme_samples.py)")


def _block(lines: List[str], lang: str = "") -> str:
    return "```" + lang + "\n" + "\n".join(lines) + "\n```"


# --- the samples, in the order they run (a demo's order: facts, doctor, then the profile, then training) ---------

def sample_facts(sb: Sandbox) -> str:
    _, out = sb.run(["facts"])
    rows = out.splitlines()
    # A mount left behind under the temporary directory (a test's bind mount, say) is not part of the host: its row
    # is dropped and the labels are aligned again as `hosttune facts` aligns them (label, two spaces, value).
    tmp = tempfile.gettempdir().rstrip("/") + "/"
    parsed = [re.match(r"^(\S.*?)\s{2,}(.*)$", r) for r in rows]
    if not all(parsed):
        raise SampleError(f"facts: a row that is not `label  value`: {rows}")
    kept = [(m.group(1), m.group(2)) for m in parsed if m and not m.group(1).startswith("storage " + tmp)]
    width = max(len(k) for k, _ in kept)
    text = "\n".join(f"{k.ljust(width)}  {v}" for k, v in kept)
    return _block(["$ hosttune facts"] + sb.shown(text).splitlines())


def sample_capture(sb: Sandbox) -> str:
    _, out = sb.run(["facts", "--capture", "node7.tar.gz"], merge=True)
    return _block(["$ hosttune facts --capture node7.tar.gz"] + sb.shown(out).splitlines())


DOCTOR_SHOWN = ("os.thp", "os.governor", "cpu.cgroup_limit", "storage.shm", "tools.allocator", "nvidia.driver",
                "nvidia.persistence", "torch.version")


def _doctor_rows(out: str) -> List[List[str]]:
    """The table's rows, each with its fix lines; the summary is the last row."""
    rows: List[List[str]] = []
    for line in out.splitlines():
        if line.startswith(" ") and rows:
            rows[-1].append(line)
        elif line.strip():
            rows.append([line])
    return rows


def sample_doctor(sb: Sandbox) -> str:
    _, out = sb.run(["doctor"], rcs=(0, 1))
    rows = _doctor_rows(out)
    keep = [r for r in rows[:-1] if r[0].split()[1] in DOCTOR_SHOWN or r[0].split()[0] in ("WARN", "FAIL")]
    lines = ["$ hosttune doctor          # excerpt: every row that warns or fails, and a few others"]
    lines += [line for r in keep for line in r] + ["...", "", rows[-1][0]]
    return _block(sb.shown("\n".join(lines)).splitlines())


def sample_doctor_deep(sb: Sandbox) -> str:
    data = sb.root / "bench-data.bin"
    with open(data, "wb") as f:  # 128 MiB that is not all zeros (a compressing filesystem would read it too fast)
        block = os.urandom(1 << 20)
        for _ in range(128):
            f.write(block)
    start = time.monotonic()
    _, out = sb.run(["doctor", "--deep", "--data", str(data)], rcs=(0, 1), timeout=900)
    took = time.monotonic() - start
    rows = _doctor_rows(out)
    keep = [r for r in rows[:-1] if ".deep_" in r[0].split()[1]]
    if not keep:
        raise SampleError("doctor --deep printed no measured finding")
    lines = [_context(took), "$ hosttune doctor --deep --data /var/tmp/bench-data.bin", "..."]
    lines += [line for r in keep for line in r] + ["", rows[-1][0]]
    return _block(sb.shown("\n".join(lines).replace(str(data), "/var/tmp/bench-data.bin")).splitlines())


def sample_profile(sb: Sandbox) -> str:
    _, generated = sb.run(["profile", "generate"])
    _, env = sb.run(["env", "--local-rank", "1", "--local-world-size", "2"])
    lines = ["$ hosttune profile generate"] + generated.splitlines()
    lines += ["$ hosttune env --local-rank 1 --local-world-size 2"] + env.splitlines()
    return _block(sb.shown("\n".join(lines)).splitlines())


def sample_env_kept(sb: Sandbox) -> str:
    _, env = sb.run(["env", "--local-rank", "1", "--local-world-size", "2"], extra={"OMP_NUM_THREADS": "4"})
    picked = [line for line in env.splitlines() if re.search(r"kept|MKL|OMP", line)]
    if not any("kept" in line for line in picked):
        raise SampleError(f"env-kept: OMP_NUM_THREADS=4 was not reported as kept:\n{env}")
    return _block(["$ OMP_NUM_THREADS=4 hosttune env --local-rank 1 --local-world-size 2 | grep -E 'kept|MKL|OMP'"]
                  + sb.shown("\n".join(picked)).splitlines())


def sample_exec_dry_run(sb: Sandbox) -> str:
    """A launcher hosttune binds for (whole), and one that binds itself (its first lines)."""
    lines = []
    for cmd, head in ((["python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use-env", "train.py"], 0),
                      (["mpirun", "-np", "2", "--bind-to", "core", "python", "train.py"], 3)):
        _, out = sb.run(["exec", "--dry-run", "--", *cmd])
        shown = out.splitlines()
        lines += ["$ hosttune exec --dry-run -- " + " ".join(cmd)] + (shown[:head] + ["..."] if head else shown)
    return _block(sb.shown("\n".join(lines)).splitlines())


EXPLAIN = "hosttune: exec cache: "


def _cache_run(sb: Sandbox) -> str:
    _, out = sb.run(["exec", "--profile", "p.yaml", "--", "true"], extra={"HOSTTUNE_EXEC_CACHE": "explain"})
    return out


def sample_exec_cache(sb: Sandbox) -> str:
    """The start-up cache on a host that has never run hosttune exec: the first run records nothing, the run
    RACY_S later records, the next replays, and an edit of an input makes the entry stale."""
    for _ in range(3):  # another program changing one of the inputs (a checkout being edited) spoils a sequence
        fresh = Sandbox()
        try:
            shown = _cache_sequence(fresh)
        finally:
            fresh.close()
        if shown is not None:
            return shown
    raise SampleError("exec-cache: three sequences in a row did not record, replay and go stale")


def _cache_sequence(sb: Sandbox) -> Optional[str]:
    (sb.job / "p.yaml").write_text("base: throughput\n", encoding="utf-8")
    first = _cache_run(sb)
    time.sleep(RACY_S + 0.5)
    second = _cache_run(sb)
    third = _cache_run(sb)
    with open(sb.job / "p.yaml", "a", encoding="utf-8") as f:
        f.write("# edited\n")
    fourth = _cache_run(sb)
    if not ("recorded " in second and "replayed " in third and "stale: " in fourth and "recorded " not in first):
        return None
    cmd = "hosttune exec --profile p.yaml -- true"
    lines = ["$ export HOSTTUNE_EXEC_CACHE=explain",
             f"$ {cmd}                       # the first run on this host"] + first.splitlines()
    lines += [f"$ sleep {RACY_S}; {cmd}            # nothing it reads changed in the last {RACY_S} s"]
    lines += second.splitlines() + [f"$ {cmd}"] + third.splitlines()
    lines += [f"$ echo '# edited' >> p.yaml; {cmd}"] + fourth.splitlines()
    return _block(sb.shown("\n".join(lines)).splitlines())


def sample_tune_verify(sb: Sandbox) -> str:
    rc, out = sb.run(["tune", "verify"], rcs=(0, 1))
    return _block(["# hosttune tune verify"] + sb.shown(out).splitlines() + ["# echo $?", str(rc)], "console")


def sample_tune_root(sb: Sandbox) -> str:
    """apply, apply again, revert and a typo, on a capture of this host (`--root`): nothing live changes."""
    lines = []
    steps = [(["facts", "--capture", "node"], (0,), "# this host's files, as --root reads them"),
             (None, (0,), "# as if THP were `always`"),
             (["tune", "apply", "--root", "node", "--only", "thp"], (0,), ""),
             (["tune", "apply", "--root", "node", "--only", "thp"], (0,), ""),
             (["tune", "revert", "--root", "node"], (0,), ""),
             (["tune", "apply", "--root", "node", "--only", "thpp"], (2,), "")]
    for args, rcs, note in steps:
        if args is None:
            thp = "node/sys/kernel/mm/transparent_hugepage/enabled"
            (sb.job / thp).write_text("[always] madvise never\n", encoding="ascii")
            lines.append(f"# echo '[always] madvise never' > {thp}   {note}")
            continue
        _, out = sb.run(args, rcs=rcs, merge=True)
        lines.append(f"# hosttune {' '.join(args)}" + (f"   {note}" if note else ""))
        lines += out.splitlines()
    return _block(sb.shown("\n".join(lines)).splitlines(), "console")


def sample_demo(sb: Sandbox) -> str:
    """`make demo`'s last step as it runs there: the summary line, and the context it was measured in."""
    start = time.monotonic()
    _, out = sb.run(["train", "--nproc", "2", "--preset", "gpt-tiny"], merge=True, timeout=1800)
    took = time.monotonic() - start
    done = [line for line in out.splitlines() if " done: " in line]
    if len(done) != 1:
        raise SampleError(f"demo: no single `done:` line in the training's output:\n{out[-3000:]}")
    return _block([_context(took), "$ hosttune train --nproc 2 --preset gpt-tiny 2>&1 | tail -n 1",
                   sb.shown(done[0])])


def sample_train_short(sb: Sandbox) -> str:
    args = ["train", "--python", sys.executable, "--nproc", "2", "--preset", "gpt-tiny", "--set", "steps=40",
            "--set", "log_interval=20"]
    start = time.monotonic()
    _, out = sb.run(args, merge=True, timeout=1800)
    took = time.monotonic() - start
    lines = [line for line in out.splitlines() if line.startswith("hosttune.engine: ")]
    return _block([_context(took), f"$ hosttune {' '.join(args)} 2>&1 | cat"] + sb.shown("\n".join(lines)).splitlines())


SAMPLES: Dict[str, Callable[[Sandbox], str]] = {
    "facts": sample_facts,
    "doctor": sample_doctor,
    "capture": sample_capture,
    "profile": sample_profile,
    "env-kept": sample_env_kept,
    "exec-dry-run": sample_exec_dry_run,
    "exec-cache": sample_exec_cache,
    "tune-verify": sample_tune_verify,
    "tune-root": sample_tune_root,
    "demo": sample_demo,
    "train-short": sample_train_short,
    "doctor-deep": sample_doctor_deep,
}


def blocks(text: str) -> Dict[str, Tuple[int, int, str]]:
    """Each sample's (start, end, indentation) in `text`: the span between its two markers."""
    out: Dict[str, Tuple[int, int, str]] = {}
    for m in BEGIN.finditer(text):
        indent, name = m.group(1), m.group(2)
        end = text.find("\n" + indent + END, m.end())
        if end < 0:
            raise SampleError(f"README.md: sample {name!r} has no {END}")
        if name in out:
            raise SampleError(f"README.md: sample {name!r} twice")
        out[name] = (m.end(), end, indent)
    return out


def replace(text: str, new: Dict[str, str]) -> str:
    spans = blocks(text)
    for name in sorted(new, key=lambda n: -spans[n][0]):  # from the end: earlier spans keep their offsets
        start, end, indent = spans[name]
        body = "\n".join((indent + line).rstrip() if line else "" for line in new[name].splitlines())
        text = text[:start] + "\n" + body + text[end:]
    return text


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help="samples to regenerate (default: all)")
    ap.add_argument("--list", action="store_true", help="print the sample names and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(SAMPLES))
        return 0
    unknown = [n for n in args.names if n not in SAMPLES]
    if unknown:
        print(f"readme_samples: no sample {', '.join(unknown)} (samples: {', '.join(SAMPLES)})", file=sys.stderr)
        return 2
    text = README.read_text(encoding="utf-8")
    try:
        missing = [n for n in SAMPLES if n not in blocks(text)]
        if missing:
            raise SampleError(f"README.md has no marker for {', '.join(missing)}")
        sb = Sandbox()
        new: Dict[str, str] = {}
        try:
            for name, make in SAMPLES.items():  # always in this order: later samples need the profile generated
                if name in ("profile",) or not args.names or name in args.names:
                    t0 = time.monotonic()
                    new[name] = make(sb)
                    print(f"readme_samples: {name} ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
        finally:
            sb.close()
        if args.names:
            new = {n: v for n, v in new.items() if n in args.names}
    except (SampleError, subprocess.TimeoutExpired) as exc:
        print(f"readme_samples: {exc}", file=sys.stderr)
        return 1
    text = README.read_text(encoding="utf-8")  # again: the README may have been edited while the samples ran
    tmp = README.with_name(".README.md.tmp")
    try:
        tmp.write_text(replace(text, new), encoding="utf-8")
    except SampleError as exc:
        print(f"readme_samples: {exc}", file=sys.stderr)
        return 1
    os.replace(tmp, README)
    print(f"readme_samples: wrote {len(new)} sample(s) into README.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
