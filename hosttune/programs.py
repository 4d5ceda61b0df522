"""Starting programs and interpreters: the one gateway.

Every program or interpreter hosttune starts is named to `resolve` first, however it was named (an option such as
`--python`, an environment variable such as `$HOSTTUNE_PYTHON`, or a bare name looked up on PATH), and what runs is
the path `resolve` returned:

- A bare name is looked up on PATH; as root only in PATH's directories that pass the root trust rule
  (`trusted_path_dirs`): a PATH kept by `su`/`sudo -E` can name another user's directory, whose `python3` would
  then run as root. A relative path is made absolute (a child started in "/" would otherwise look elsewhere).
- It must be a regular, executable file.
- As root, the file, every directory above it, and every symbolic link on the way to it (and each link's
  directory) must be root's alone (`trust.check_path`): otherwise one line (`trust.Untrusted`, exit 2) *before* it
  is run. A variable kept by `su`/`sudo -E` (`$HOSTTUNE_PYTHON`) or an option pointing at another user's file is
  refused, never run.
- The path returned is absolute and keeps the name's last link (a venv's `bin/python3 -> /usr/bin/python3.11` must
  be run as `bin/python3`, or Python no longer finds the venv's pyvenv.cfg); every link on the way passed the check,
  so nobody but root can re-point it.

`run`/`popen`/`execve` are thin wrappers that resolve argv[0] and start the resolved path (argv[0] itself is passed
on as written, as a shell would). The detector's
`HostIO.run` (started in "/", with `child_env`) goes through `resolve` too.
"""

import json
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple

from hosttune import trust
from hosttune.errors import UserError

if TYPE_CHECKING:
    import subprocess  # imported where a program is run: the shim and the cache's replay only exec

# Searched (as root, when they pass the trust rule) when a program is not on a trusted PATH directory.
SYSTEM_BIN = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class NotFound(UserError):
    """No executable file by that name or path."""


def trusted_path_dirs(path: Optional[str] = None) -> Tuple[List[str], List[str]]:
    """(PATH directories to search, "DIR: why" for each one skipped). As an ordinary user PATH is used as is; as
    root only absolute entries that pass the root trust rule (an empty or relative entry means the current
    directory, which may be anybody's)."""
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    if not trust.is_root():
        return [e for e in entries if e], []
    keep: List[str] = []
    skipped: List[str] = []
    for entry in entries:
        if not entry.startswith("/"):
            skipped.append(f"{entry or '(empty)'}: not an absolute path")
            continue
        _, why = trust.problem(entry, kind="dir")
        if why is None:
            if entry not in keep:
                keep.append(entry)
        elif not why.startswith("does not exist"):
            skipped.append(f"{entry}: {why}")
    return keep, skipped


def trusted_which(name: str, path: Optional[str] = None) -> Tuple[Optional[str], List[str]]:
    """`shutil.which` over `trusted_path_dirs(path)`: (path or None, PATH entries skipped as root)."""
    dirs, skipped = trusted_path_dirs(path)
    return shutil.which(name, path=os.pathsep.join(dirs)) if dirs else None, skipped


def _absolute(program: str) -> str:
    """`program` made absolute against the working directory; "." and "//" are tidied, ".." is left for the
    kernel (text-collapsing it past a link would name another file)."""
    joined = program if program.startswith("/") else os.path.join(os.getcwd(), program)
    return joined if ".." in joined.split("/") else os.path.normpath(joined)


def resolve(program: str, what: str, *, path: Optional[str] = None, check: bool = True) -> str:
    """The absolute path to run for `program` (a path, or a bare name looked up on `path`, default $PATH; as root
    on its trusted directories only). `what` names it in messages ("--python", "$HOSTTUNE_PYTHON"). Raises
    NotFound ("WHAT PROGRAM: not an executable file" / "command not found") or, as root and `check`, Untrusted.

    `check=False` is for a program named on root's own command line to run as given (`exec -- CMD`: sudo's
    semantics); its bare name is still looked up on trusted directories only."""
    if not program:
        raise NotFound(f"{what}: empty program name")
    if os.sep in program:
        found: Optional[str] = _absolute(program)
    else:
        found = trusted_which(program, path)[0]
        if found is None:
            raise NotFound(f"{what} {program}: command not found" + (
                " in a PATH directory only root can write" if trust.is_root() else ""))
        found = _absolute(found)
    assert found is not None
    if not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise NotFound(f"{what} {program}: not an executable file")
    if check and trust.is_root():
        trust.check_links(found, what, trust.trusted_owners(), "the program")  # the one rule for links as root
        trust.check_path(found, what)
    return found


# How hosttune starts its own code in a new interpreter (a trial, the planner, a rank's shim, `train`'s exec):
# `python -c BOOT`, never `python -m hosttune...`, because `-m` (and `-c`) put the working directory first on
# sys.path, so a `hosttune/` package, `json.py` or `yaml.py` another user left in a shared working directory would
# run inside the child (as root, too). BOOT drops that entry before any import, loads the hosttune package from the
# directory given (its own files, by path: nothing is put ahead of the standard library), imports the module and
# exits with its main() (the arguments after BOOT are its sys.argv[1:]; imported by its own name, not run as
# __main__ by runpy, so it is loaded once and a rank's start pays for nothing more). As root the interpreter also
# runs isolated (-I: no PYTHONPATH/PYTHONSTARTUP/user site that `su`/`sudo -E` may have carried over); an ordinary
# user keeps them (a `pip install --user` hosttune finds its PyYAML there).
# Double quotes only (literals written by _literal), so a shell-quoted command line (`train --dry-run`) stays readable.
_BOOT = (
    'import sys; sys.path[:1] == [""] and sys.path.pop(0); import importlib.util as u; '
    's = u.spec_from_file_location("hosttune", {init}, submodule_search_locations=[{pkg}]); '
    'm = u.module_from_spec(s); sys.modules["hosttune"] = m; s.loader.exec_module(m); '
    'sys.exit(__import__({module}, fromlist=["main"]).main())'
)


def _literal(text: str) -> str:
    """`text` as a double-quoted Python string literal (JSON's escapes are Python's)."""
    return json.dumps(text, ensure_ascii=False)


def own_package() -> str:
    """The directory of this hosttune package (this file is hosttune/programs.py)."""
    return os.path.dirname(os.path.abspath(__file__))


def own_argv(module: str, *, python: Optional[str] = None, pkg: Optional[str] = None,
             isolated: Optional[bool] = None) -> List[str]:
    """argv that runs `main()` of hosttune's `module` ("hosttune.cli", "hosttune.shim", "hosttune.launch.replan")
    on `python` (default this interpreter), loading the package from `pkg` (default this one); -I when `isolated`
    (default: as root). Append the module's own arguments. See _BOOT above."""
    pkg = own_package() if pkg is None else pkg
    isolated = trust.is_root() if isolated is None else isolated
    boot = _BOOT.format(init=_literal(os.path.join(pkg, "__init__.py")), pkg=_literal(pkg), module=_literal(module))
    return [python or sys.executable, *(["-I"] if isolated else []), "-c", boot]


def run(argv: Sequence[str], what: str, *, env: Optional[Mapping[str, str]] = None, check_trust: bool = True,
        **kwargs: Any) -> "subprocess.CompletedProcess[Any]":
    """subprocess.run of argv with argv[0] resolved (bare names looked up on `env`'s PATH when given); the
    resolved path is what runs (`executable=`), argv[0] is passed on as written. Raises as `resolve`, then as
    subprocess.run."""
    exe = _resolve_first(argv, what, env, check_trust)
    import subprocess

    return subprocess.run(list(argv), executable=exe, env=None if env is None else dict(env), **kwargs)


def popen(argv: Sequence[str], what: str, *, env: Optional[Mapping[str, str]] = None, check_trust: bool = True,
          **kwargs: Any) -> "subprocess.Popen[Any]":
    """subprocess.Popen of argv with argv[0] resolved (see `run`)."""
    exe = _resolve_first(argv, what, env, check_trust)
    import subprocess

    return subprocess.Popen(list(argv), executable=exe, env=None if env is None else dict(env), **kwargs)


def execve(argv: Sequence[str], env: Dict[str, str], what: str, *, exe: Optional[str] = None,
           check_trust: bool = True) -> NoReturn:
    """Replace this process with argv, running `exe` (a path `resolve` returned) or else argv[0] resolved; argv[0]
    is passed on as written. Raises as `resolve`, or OSError when the exec fails."""
    path = exe if exe is not None else _resolve_first(argv, what, env, check_trust)
    os.execve(path, list(argv), env)


def _resolve_first(argv: Sequence[str], what: str, env: Optional[Mapping[str, str]], check_trust: bool) -> str:
    if not argv:
        raise NotFound(f"{what}: no program given")
    path = None if env is None else env.get("PATH", os.defpath)
    return resolve(argv[0], what, path=path, check=check_trust)
