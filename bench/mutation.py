#!/usr/bin/env python3
"""Mutation run (issue 21; a bench, not CI): plants the semantic changes catalogued in bench/mutants.py one at a
time into a fresh clone of this checkout's HEAD, runs each mutant's own tests there, and counts what they catch.

    python3 bench/mutation.py                      # every mutant, a table at the end
    python3 bench/mutation.py --json out.json      # the same, plus the results as JSON ("-" for stdout)
    python3 bench/mutation.py --only execcache-    # the mutants whose id starts with any of these prefixes
    python3 bench/mutation.py --check              # only check every snippet is found exactly once (no tests)
    python3 bench/mutation.py --list               # the catalogue

The working tree this script lives in is never touched: the run clones HEAD (`git clone -q`, so only committed code
and tests count) into a temporary directory, sets PYTHONPATH to the clone (a child `python -m hosttune` or a rank
started by a test imports the clone's code from any directory), checks that `import hosttune` there resolves to the
clone, and runs the sanity mutant first (it must be caught, else the run stops: the tests are not seeing the
mutants). Each mutant: its snippet must occur exactly once in its file (else it is refused, status "refused"),
the file is rewritten, `python3 -m pytest -q -x -p no:randomly -p no:cacheprovider <its tests>` runs from the
clone's root under a per-mutant timeout (its process group killed when over), then the file is restored
byte-for-byte. Mutants run serially, one pytest at a time.

Statuses: caught (pytest exit 1: a test failed), survived (exit 0; or 5: its tests select nothing), timeout (over
the limit: counted as caught, as a hang is noticed), error (any other exit: a collection error, ...; not counted),
refused (snippet not found exactly once; not counted), equivalent (the catalogue marks it as no behaviour change;
not counted).
A mutant's `pins` (the tests written for it after a run it survived) run first, its catalogue tests only when the
pins let it through; --no-pins measures the catalogue's tests alone (the score before pinning). After every mutant
ran, each selection that caught one is re-run on the unmutated clone: where the same test fails there too, the
catch is an error (--no-baseline skips this; tests that fail in any fresh clone, e.g. test_plan's recorded fixture,
show up here). --json is rewritten after every mutant, so a run stopped early keeps what it
measured; --resume FILE keeps an earlier run's rows whose mutant is unchanged (same snippet, tests and pins), and
its caught rows whose planted change is unchanged (pins added later cannot uncatch them).
Score = (caught + timeout) / (caught + timeout + survived).

    python3 bench/mutation.py --no-pins --json before.json     # the suite's own tests
    python3 bench/mutation.py --resume before.json --json after.json   # re-runs only mutants whose pins changed
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from mutants import MUTANTS, Mutant  # noqa: E402

# Plugins no test here uses are left out: under load they double the start-up of a short pytest (19 s -> 10 s).
PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
          "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:random_order"]


def clone(repo: Path, rev: str, dest: Path) -> None:
    subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True)
    if rev != "HEAD":
        subprocess.run(["git", "-C", str(dest), "checkout", "-q", rev], check=True)


def clone_env(root: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a restored file must never be shadowed by a stale mutated .pyc
    return env


def check_import(root: Path, env: Dict[str, str]) -> Optional[str]:
    """None when `import hosttune` from the clone (and from a foreign directory) resolves to the clone."""
    want = str((root / "hosttune" / "__init__.py").resolve())
    for cwd in (root, Path(tempfile.gettempdir())):
        out = subprocess.run([sys.executable, "-c", "import hosttune;print(hosttune.__file__)"], cwd=cwd, env=env,
                             capture_output=True, text=True)
        got = out.stdout.strip()
        if out.returncode != 0 or str(Path(got).resolve()) != want:
            return f"import hosttune from {cwd} gave {got or out.stderr.strip()[-200:]!r}, not {want}"
    return None


def run_pytest(root: Path, env: Dict[str, str], tests: List[str], timeout: float) -> Tuple[str, int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.Popen([*PYTEST, *tests], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return "timeout", -9, out, time.monotonic() - t0
    rc = proc.returncode
    status = {0: "survived", 1: "caught", 5: "survived"}.get(rc, "error")  # 5: no test selected, none caught it
    return status, rc, out, time.monotonic() - t0


def failing_test(out: str) -> str:
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1][:160]
    tail = [ln for ln in out.strip().splitlines() if ln.strip()]
    return tail[-1][:160] if tail else ""


class Runner:
    def __init__(self, root: Path, timeout: float, verbose: bool) -> None:
        self.root = root
        self.env = clone_env(root)
        self.timeout = timeout
        self.verbose = verbose
        self.baseline: Dict[Tuple[str, ...], Tuple[str, str]] = {}

    def apply(self, m: Mutant) -> Tuple[Path, Optional[bytes]]:
        path = self.root / m.file
        if not path.is_file():
            return path, None
        data = path.read_bytes()
        if data.count(m.old.encode()) != 1:
            return path, None
        return path, data

    def selection_ok(self, selection: str) -> Tuple[str, str]:
        """How `selection` does on the unmutated clone (once per selection)."""
        if selection not in self.baseline:
            status, rc, out, _ = run_pytest(self.root, self.env, shlex.split(selection), self.timeout)
            self.baseline[selection] = (status, failing_test(out))
        return self.baseline[selection]

    def one(self, m: Mutant, use_pins: bool) -> Dict[str, object]:
        row: Dict[str, object] = {"id": m.id, "file": m.file, "tests": m.tests, "breaks": m.breaks, "sig": sig(m),
                                  "change": change(m)}
        if m.equivalent:
            row.update(status="equivalent", detail=m.equivalent)
            return row
        path, original = self.apply(m)
        if original is None:
            n = path.read_text().count(m.old) if path.is_file() else "no file"
            row.update(status="refused", detail=f"snippet found {n} times in {m.file}, not once")
            return row
        # the pins (fast, in process) first; the catalogue's tests only when the pins let the mutant through
        selections = ([m.pins] if use_pins and m.pins else []) + [m.tests]
        row["pins_used"] = len(selections) > 1
        secs_all = 0.0
        try:
            path.write_bytes(original.replace(m.old.encode(), m.new.encode(), 1))
            for selection in selections:
                status, rc, out, secs = run_pytest(self.root, self.env, shlex.split(selection), self.timeout)
                secs_all += secs
                if status != "survived":
                    break
        finally:
            path.write_bytes(original)
        row.update(status=status, rc=rc, seconds=round(secs_all, 1), detail=failing_test(out), by=selection)
        if self.verbose and status in ("error",):
            print(out[-3000:], file=sys.stderr)
        return row

    def check_baselines(self, rows: List[Dict[str, object]], save: Callable[[], None]) -> None:
        """A caught mutant whose catching selection fails on the unmutated clone too is an error, not a catch."""
        for row in rows:
            if row["status"] in ("caught", "timeout") and not row.get("baseline"):
                selection = str(row.get("by") or row["tests"])
                base, why = self.selection_ok(selection)
                row["baseline"] = base
                # -x stops at the first failure: a catch by another test than the one that fails unmutated stands
                if base != "survived" and _test_id(str(row.get("detail"))) == _test_id(why):
                    row.update(status="error", detail=f"its tests fail without the mutant too ({base}): {why}")
                elif base != "survived":
                    row["baseline_note"] = f"unmutated, {why} fails; the mutant failed another test first"
                print(f"baseline {row['id']}: {base} ({selection})", file=sys.stderr, flush=True)
                save()


def _test_id(detail: str) -> str:
    """The failing test's function name from a `failing_test` line (parameters and message dropped)."""
    return detail.split(" - ")[0].split("[")[0].strip()


def sig(m: Mutant) -> str:
    """The whole entry: a row is reused only for the same mutant run the same way."""
    return _hash((m.file, m.old, m.new, m.tests, m.pins, m.equivalent))


def change(m: Mutant) -> str:
    """The planted change alone: a caught mutant stays caught when only tests were added to it."""
    return _hash((m.file, m.old, m.new))


def reusable(old: Dict[str, object], m: Mutant, use_pins: bool) -> bool:
    """An earlier row still stands: the same entry run the same way (pins or not; not refused), or a catch of the
    same planted change."""
    same_way = bool(old.get("pins_used", False)) == (use_pins and bool(m.pins))
    if old.get("sig") == sig(m) and same_way and old["status"] != "refused":
        return True
    return old.get("change", change(m)) == change(m) and old["status"] == "caught"


def _hash(what: object) -> str:
    import hashlib

    return hashlib.sha256(repr(what).encode()).hexdigest()[:16]


def score(rows: List[Dict[str, object]]) -> Dict[str, object]:
    counts: Dict[str, int] = {}
    for r in rows:
        counts[str(r["status"])] = counts.get(str(r["status"]), 0) + 1
    caught = counts.get("caught", 0) + counts.get("timeout", 0)
    judged = caught + counts.get("survived", 0)
    return {"counts": counts, "caught": caught, "judged": judged,
            "score_pct": round(100.0 * caught / judged, 1) if judged else None}


def table(rows: List[Dict[str, object]], summary: Dict[str, object]) -> str:
    lines = [f"{'id':<34} {'status':<10} {'s':>5}  detail"]
    for r in rows:
        secs = r.get("seconds", "")
        lines.append(f"{str(r['id']):<34} {str(r['status']):<10} {str(secs):>5}  {str(r.get('detail', ''))[:110]}")
    survivors = [r for r in rows if r["status"] == "survived"]
    if survivors:
        lines.append("")
        lines.append("survivors (behaviour no test pins):")
        lines += [f"  {r['id']}: {r['file']}: {r['breaks']} (tests: {r['tests']})" for r in survivors]
    lines.append("")
    lines.append(f"total {len(rows)}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items()))
                 + f"; score {summary['caught']}/{summary['judged']} = {summary['score_pct']} %")
    return "\n".join(lines)


def write_json(path: str, rows: List[Dict[str, object]], summary: Dict[str, object]) -> None:
    tmp = path + ".tmp"
    Path(tmp).write_text(json.dumps({"summary": summary, "mutants": rows}, indent=1) + "\n")
    os.replace(tmp, path)


def select(prefixes: List[str]) -> List[Mutant]:
    chosen = [m for m in MUTANTS if not prefixes or any(m.id.startswith(p) for p in prefixes)]
    sanity = [m for m in MUTANTS if m.sanity]
    return sanity + [m for m in chosen if not m.sanity]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=[], help="mutant id prefixes (default: all)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant's pytest (default 240)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON (- for stdout)")
    ap.add_argument("--repo", default=str(REPO), help="the checkout to clone (default: this one)")
    ap.add_argument("--rev", default="HEAD", help="the commit to mutate (default HEAD)")
    ap.add_argument("--check", action="store_true", help="only check that every snippet occurs exactly once")
    ap.add_argument("--list", action="store_true", help="print the catalogue and exit")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--verbose", action="store_true", help="print pytest's output for errors")
    ap.add_argument("--no-pins", action="store_true", help="only the catalogue's tests, not the mutants' pins "
                    "(what the suite caught before the pins were written)")
    ap.add_argument("--no-baseline", action="store_true", help="skip re-running each catching selection unmutated")
    ap.add_argument("--resume", metavar="FILE", help="keep the rows of an earlier --json whose mutant is unchanged")
    args = ap.parse_args(argv)
    ids = [m.id for m in MUTANTS]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        print(f"mutation: duplicate mutant ids in bench/mutants.py: {', '.join(dup)}", file=sys.stderr)
        return 2
    mutants = select(args.only)
    if args.resume and not Path(args.resume).is_file():
        print(f"mutation: --resume {args.resume}: no such file", file=sys.stderr)
        return 2
    if args.list:
        for m in mutants:
            print(f"{m.id:<34} {m.file:<40} {m.tests}\n{'':<34} breaks: {m.breaks}")
        print(f"{len(mutants)} mutants")
        return 0
    work = Path(tempfile.mkdtemp(prefix="hosttune-mutation-"))
    root = work / "hosttune-clone"
    try:
        # The layout the tests run in everywhere else (CI, a developer's tree): ../shared (the captured hosts) beside
        # the checkout, and a path the other user of the root-safety tests can reach; without them some tests fail
        # unmutated, and their catches would be false.
        work.chmod(0o755)
        shared = Path(args.repo).resolve().parent / "shared"
        if shared.is_dir():
            (work / "shared").symlink_to(shared)
        clone(Path(args.repo), args.rev, root)
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        runner = Runner(root, args.timeout, args.verbose)
        if args.check:
            bad = [(m.id, m.file) for m in mutants if not m.equivalent and runner.apply(m)[1] is None]
            for mid, f in bad:
                print(f"refused: {mid}: snippet not found exactly once in {f}")
            print(f"{len(mutants) - len(bad)}/{len(mutants)} snippets found exactly once at {head}")
            return 1 if bad else 0
        problem = check_import(root, runner.env)
        if problem:
            print(f"mutation: {problem}", file=sys.stderr)
            return 2
        print(f"mutation: {len(mutants)} mutants against {head} in {root}", file=sys.stderr, flush=True)
        rows: List[Dict[str, object]] = []
        earlier = {}
        if args.resume:
            earlier = {str(r["id"]): r for r in json.loads(Path(args.resume).read_text())["mutants"]}
        t0 = time.monotonic()
        for i, m in enumerate(mutants, 1):
            old = earlier.get(m.id)
            if old is not None and not m.sanity and reusable(old, m, not args.no_pins):
                row = old
            else:
                row = runner.one(m, not args.no_pins)
            rows.append(row)
            if args.json and args.json != "-":
                write_json(args.json, rows, {"partial": True, "rev": head})
            print(f"[{i}/{len(mutants)}] {m.id}: {row['status']} {row.get('seconds', '')}s "
                  f"{str(row.get('detail', ''))[:100]}", file=sys.stderr, flush=True)
            if m.sanity and row["status"] not in ("caught", "timeout"):
                print(f"mutation: the sanity mutant {m.id} was not caught ({row['status']}): the tests do not see "
                      "the clone's code; stopping", file=sys.stderr)
                return 2
        if not args.no_baseline:
            print("mutation: re-running each catching selection on the unmutated clone", file=sys.stderr, flush=True)
            runner.check_baselines(rows, lambda: args.json and args.json != "-" and write_json(
                args.json, rows, {"partial": "baseline", "rev": head}))
        summary = score(rows)
        summary.update(rev=head, mutants=len(rows), minutes=round((time.monotonic() - t0) / 60, 1),
                       pins=not args.no_pins, baseline=not args.no_baseline)
        print(table(rows, summary))
        if args.json == "-":
            print(json.dumps({"summary": summary, "mutants": rows}, indent=1))
        elif args.json:
            write_json(args.json, rows, summary)
        return 0
    finally:
        if args.keep:
            print(f"mutation: clone kept at {root}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
