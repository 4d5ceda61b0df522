"""`hosttune train --nproc N [engine args]`: the bundled engine on N local ranks, through `hosttune exec -- torchrun`.

The engine arguments are checked here first (the engine's config module needs no torch), so a typo fails in
milliseconds with one line instead of once per rank after torchrun has started.

The ranks run in the training interpreter, which need not be the one running hosttune (the .deb/.rpm run hosttune
on the system python3, which rarely has torch): `--python PATH`, else `$HOSTTUNE_PYTHON`, else the interpreter
`hosttune facts` probes (python3 on PATH; as root, on its trusted directories only), else hosttune's own. Each is
resolved by the program gateway (hosttune/programs.py) before it is run: as root an interpreter another user could
have written (`--python`, or `$HOSTTUNE_PYTHON` kept by `su`/`sudo -E`) is one line, exit 2, never run, not even for
the torch probe of `--dry-run`; the resolved path is what the probe runs and what the ranks run. Each is asked with
the facts' torch probe (hosttune/detect/torchenv.py: torch is never imported), so an interpreter without torch is one
line naming what to install, exit 2, never a ModuleNotFoundError from every rank.
"""

import importlib
import importlib.util
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

import click

from hosttune import programs, trust
from hosttune.detect import torchenv
from hosttune.detect.hostio import HostIO
from hosttune.errors import UserError
from hosttune.policy import names

# The engine's floor (pyproject's `train` extra): fused AdamW on CPU, torch.compile, torch.cuda.OutOfMemoryError.
MIN_TORCH = (2, 1)
# Run as a script by torchrun in the training interpreter: loads this hosttune's engine there.
RANK_SCRIPT = Path(__file__).with_name("train_rank.py")

# What the engine needs besides torch, asked of the interpreter without importing anything (PYTHONPATH entries the
# torch probe may search come as arguments, as they do for torchenv.PROBE).
_DEPS_PROBE = r'''
import importlib.util, os, sys
extra = sys.argv[1:] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
sys.path[0:0] = [p for p in extra if p]
print(" ".join(m for m in ("numpy",) if importlib.util.find_spec(m) is None))
'''

INSTALL_HINT = ("install torch into a venv (`python3 -m venv ~/venv && ~/venv/bin/pip install 'torch>=2.1' numpy`) and "
                "pass `--python ~/venv/bin/python` (or set HOSTTUNE_PYTHON), or install the distribution's torch "
                "(Debian 13, Ubuntu 24.04: `apt install python3-torch python3-numpy`)")


@dataclass(frozen=True)
class TrainPython:
    """The interpreter the ranks run in, where it came from, and its torch version."""

    path: str
    source: str  # "--python", "$HOSTTUNE_PYTHON", "python3 on PATH", "hosttune's interpreter"
    torch: str


def _version_tuple(version: str) -> Tuple[int, ...]:
    out: List[int] = []
    for part in version.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit()) or "0"
        out.append(int(digits))
    return tuple(out)


def candidates(option: Optional[str], environ: Mapping[str, str], io: HostIO) -> List[Tuple[str, str, bool]]:
    """(path, source, chosen by the user) in the order they are tried, each resolved by the program gateway
    (hosttune/programs.py): a bare name is looked up on PATH (as root, on its trusted directories only, as
    `facts --python` does), and as root the file must be root's alone. A chosen interpreter that fails is one line
    (exit 2) before anything runs; a default one is skipped with its reason in `skipped`."""
    chosen = [(option, "--python")] if option else []
    if not chosen and environ.get(names.PYTHON):
        chosen = [(environ[names.PYTHON], f"${names.PYTHON}")]
    if chosen:
        value, source = chosen[0]
        return [(programs.resolve(value, source, path=environ.get("PATH", os.defpath)), source, True)]
    out: List[Tuple[str, str, bool]] = []
    default = torchenv.default_python(io)
    for path, source in ((default, "python3 on PATH"), (sys.executable, "hosttune's interpreter")):
        if not path:
            continue
        try:
            found = programs.resolve(path, source)
        except UserError as exc:
            io.note("training interpreter", str(exc))
            continue
        if found not in [p for p, _, _ in out]:
            out.append((found, source, False))
    return out


def _missing_deps(io: HostIO, python: str) -> List[str]:
    paths, _ = torchenv.probe_path(os.environ)
    done = io.run([python, "-I", "-c", _DEPS_PROBE, *paths], timeout=torchenv.PROBE_TIMEOUT_S, note=False)
    if done is None or done.returncode != 0:
        return []  # the torch probe just ran there: a failure now is not a missing module; the rank will say
    return done.stdout.split()


def find_python(option: Optional[str], environ: Mapping[str, str], io: Optional[HostIO] = None) -> TrainPython:
    """The training interpreter: the first candidate whose torch the probe finds (>= MIN_TORCH, with numpy).
    UserError (exit 2) with one line naming what to install when there is none."""
    io = io or HostIO(Path("/"))
    tried: List[str] = []
    ordered = candidates(option, environ, io)
    tried += [why for why in io.missing if why.startswith("training interpreter: ")]
    for path, source, chosen in ordered:
        data = torchenv.run_probe(io, path)
        where = f"{path} ({source})"
        if "error" in data:
            if chosen:
                raise UserError(f"{source} {path}: cannot run it to look for torch: {data['error']}")
            tried.append(f"{where}: {data['error']}")
            continue
        torch = data.get("torch") or {}
        version = torch.get("__version__")
        if not version:
            if chosen:
                raise UserError(f"{source} {path} has no torch: install it there (`{shlex.quote(path)} -m pip install "
                                f"'torch>=2.1' numpy`, in a venv or conda env), or name another interpreter")
            tried.append(f"{where}: no torch")
            continue
        if _version_tuple(str(version)) < MIN_TORCH:
            need = ".".join(map(str, MIN_TORCH))
            problem = f"{where} has torch {version}; the engine needs torch >= {need}"
            if chosen:
                raise UserError(f"{problem}: `{shlex.quote(path)} -m pip install 'torch>={need}'`, or name "
                                f"another interpreter")
            tried.append(problem)
            continue
        missing = _missing_deps(io, path)
        if missing:
            raise UserError(f"{where} has torch {version} but not {', '.join(missing)}, which the engine needs: "
                            f"`{shlex.quote(path)} -m pip install {' '.join(missing)}`")
        return TrainPython(path=path, source=source, torch=str(version))
    found = "; ".join(tried) if tried else "no python3 on PATH"
    raise UserError(f"no interpreter with torch to train with ({found}): {INSTALL_HINT}")


def _yaml_dir() -> Optional[str]:
    """Where this interpreter's PyYAML lives: the ranks fall back to it when theirs has none."""
    spec = importlib.util.find_spec("yaml")
    if spec is None or not spec.submodule_search_locations:
        return None
    where = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
    if trust.is_root():  # it goes on the ranks' sys.path: as root, only a directory root alone can write
        try:
            return trust.check_path(where, "PyYAML's directory", kind="dir")
        except trust.Untrusted:
            return None
    return where


def build_argv(nproc: int, engine_args: Sequence[str], profile: Optional[str] = None,
               python: Optional[str] = None) -> List[str]:
    """`hosttune exec [--profile F] -- PYTHON -m torch.distributed.run --standalone --nproc_per_node=N
    .../train_rank.py ARGS...`: exec runs on this interpreter (the one that has hosttune), torchrun and the ranks
    on the training interpreter (default: this one)."""
    python = python or sys.executable
    exec_opts = ["--profile", profile] if profile else []
    rank = [str(RANK_SCRIPT)]
    yaml_dir = _yaml_dir()
    if yaml_dir:
        rank += ["--yaml-from", yaml_dir]
    return [*programs.own_argv("hosttune.cli"), "exec", *exec_opts, "--",
            python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            *rank, *engine_args]


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True, help="Ranks on this host.")
@click.option("--profile", "profile", type=click.Path(dir_okay=False), default=None,
              help="Profile file for `hosttune exec` (default: its own choice).")
@click.option("--python", "python", metavar="PATH", default=None,
              help="The training interpreter, which must have torch (default: $HOSTTUNE_PYTHON, else python3 on "
                   "PATH, else hosttune's own).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@click.argument("engine_args", nargs=-1, type=click.UNPROCESSED)
def cmd(nproc: int, profile: Optional[str], python: Optional[str], dry_run: bool,
        engine_args: Tuple[str, ...]) -> None:
    """Train a bundled model (--preset gpt-tiny|resnet-tiny, or --config FILE) on N ranks.

    Everything after the options goes to `python -m hosttune.engine`, e.g.
    `hosttune train --nproc 2 --preset gpt-tiny --set steps=100`.
    """
    # torch-free (only the engine's config module); imported here, when the command runs, not when the CLI loads.
    engine_main = importlib.import_module("hosttune.engine.__main__")
    args = list(engine_args)
    problem = engine_main.check_args(args)
    if problem:
        raise UserError(f"engine: {problem}")
    target = find_python(python, os.environ)
    argv = build_argv(nproc, args, profile, target.path)
    if dry_run:
        click.echo(shlex.join(argv))  # pasteable: a path with a space or `$` stays one argument
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # Replace this process: signals from the terminal or a scheduler reach exec directly, and its exit code
    # (the job's) becomes ours with nothing in between.
    from hosttune.sigexec import default_handlers_for_exec

    default_handlers_for_exec()
    programs.execve(argv, dict(os.environ), "hosttune's interpreter")
