"""Issue 16's papercuts: NO_COLOR / TERM=dumb, completions (bash, zsh, fish; `exec -- <TAB>`), the man pages made
from the click tree, and the RPM's %post preset. The completions and pages are generated here from the working tree
with packaging/build.py's own functions (test_packages.py checks the built packages); the shells are real.
"""

import importlib.util
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

import pytest

from hosttune import term
from hosttune.policy import names

REPO = Path(__file__).resolve().parents[1]


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hosttune_pkgbuild_papercuts", str(REPO / "packaging" / "build.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """bash/zsh/fish completions and both man pages, generated from this tree as the package build does."""
    build = load_build()
    dump = build.cli_dump(REPO)
    out = tmp_path_factory.mktemp("generated")
    (out / "hosttune").write_text(build.bash_completion(dump))
    (out / "_hosttune").write_text(build.clidoc.zsh(build.clidoc.completion_tree(dump)))
    (out / "hosttune.fish").write_text(build.clidoc.fish(build.clidoc.completion_tree(dump)))
    template = (REPO / "packaging" / "hosttune.1.in").read_text()
    (out / "hosttune.1").write_text(build.clidoc.man_hosttune(template, dump, "9.9", 1764547200))
    conf = (REPO / "conf" / "monitor.yaml").read_text()
    (out / "monitor.yaml.5").write_text(build.clidoc.man_monitor_yaml(conf, dump, "9.9", 1764547200))
    return {"dir": out, "dump": dump, "clidoc": build.clidoc, "conf": conf}


# ---- colour --------------------------------------------------------------------------------------------------------

class Tty:
    def isatty(self) -> bool:
        return True


class Pipe:
    def isatty(self) -> bool:
        return False


def test_colour_policy() -> None:
    assert term.colour(Tty(), {"TERM": "xterm-256color"})  # type: ignore[arg-type]
    assert not term.colour(Pipe(), {"TERM": "xterm"})  # type: ignore[arg-type]
    assert not term.colour(Tty(), {"TERM": "xterm", "NO_COLOR": "1"})  # type: ignore[arg-type]
    assert term.colour(Tty(), {"TERM": "xterm", "NO_COLOR": ""})  # type: ignore[arg-type] # no-color.org: non-empty
    assert not term.colour(Tty(), {"TERM": "dumb"})  # type: ignore[arg-type]
    assert term.redraw(Tty(), {"TERM": "xterm", "NO_COLOR": "1"})  # type: ignore[arg-type] # colour only
    assert not term.redraw(Tty(), {"TERM": "dumb"})  # type: ignore[arg-type]
    assert not term.redraw(Pipe(), {})  # type: ignore[arg-type]


def run_in_pty(argv: List[str], env: Dict[str, str]) -> str:
    """Output of argv run on a real terminal (a pty), as a user at a terminal sees it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd="/")
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_doctor_colours_only_a_terminal_that_wants_them(hwloc_tree: Any) -> None:
    root = str(hwloc_tree("16amd64-8n2c-cpusets"))
    argv = [sys.executable, "-m", "hosttune", "doctor", "--root", root]
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    plain = run_in_pty(argv, dict(base, TERM="xterm-256color"))
    assert re.search(r"\x1b\[[0-9;]*m(PASS|WARN|FAIL|SKIP)", plain), plain[-2000:]
    for extra in ({"TERM": "xterm-256color", "NO_COLOR": "1"}, {"TERM": "dumb"}):
        text = run_in_pty(argv, dict(base, **extra))
        assert "\x1b[" not in text and re.search(r"^(PASS|WARN|FAIL|SKIP) ", text, flags=re.M), (extra, text[-2000:])


# ---- completions ---------------------------------------------------------------------------------------------------

def bash_complete(script: Path, line: str) -> List[str]:
    words = line.split(" ")
    prog = (f"source {script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\nCOMP_CWORD={len(words) - 1}\n"
            f"COMP_LINE={line!r}\nCOMP_POINT={len(line)}\n_hosttune\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True, text=True, timeout=30)
    return [w for w in out.stdout.splitlines() if w]


def test_bash_exec_dashdash_completes_the_command(generated: Dict[str, Any]) -> None:
    script = generated["dir"] / "hosttune"
    # no bash-completion loaded (a bare bash): command names, then file names
    assert "python3" in bash_complete(script, "hosttune exec -- pytho")
    assert "python3" in bash_complete(script, "hosttune exec --profile p.yaml --verify -- pytho")
    assert str(REPO / "README.md") in bash_complete(script, f"hosttune exec -- cat {REPO}/READ")
    assert bash_complete(script, "hosttune exec --pro") == ["--profile"]  # before `--`: hosttune's own options
    assert bash_complete(script, "hosttune tune apply --only thp") == ["thp", "thp_defrag"]  # tunable ids


# zsh completion cannot run without a terminal: drive an interactive zsh on a pty (zsh/zpty) and print every match
# the completion system adds (compadd wrapped), then a marker from a widget bound to ^G.
ZSH_HOOKS = r"""
compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  local h
  for h in $__hits; do print -r -- "<<""$h>>"; done
  builtin compadd "$@"
}
finish () { print -r -- "<<""DONE>>"; }
zle -N finish
bindkey "^G" finish
"""
ZSH_CAPTURE = r"""
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT='> '; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D; source ${(q)3}"
zpty -n -w z "$2"$'\t'
zpty -n -w z $'\C-G'
local out
zpty -r z out '*<<DONE>>*'
zpty -d z
print -r -- "$out"
"""


def zsh_complete(fpath: Path, line: str, tmp: Path) -> List[str]:
    script, hooks = tmp / "capture.zsh", tmp / "hooks.zsh"
    script.write_text(ZSH_CAPTURE)
    hooks.write_text(ZSH_HOOKS)
    out = subprocess.run(["zsh", "-f", str(script), str(fpath), line, str(hooks)], capture_output=True, text=True,
                         timeout=60, cwd=str(tmp)).stdout
    hits = re.findall(r"<<([^>\n]*)>>", out.replace("\r", "\n"))
    return sorted({h for h in hits if h != "DONE"})


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (Makefile TEST_APT has it)")
def test_zsh_completion_follows_the_cli(generated: Dict[str, Any], tmp_path: Path) -> None:
    fpath = generated["dir"]
    assert zsh_complete(fpath, "hosttune fa", tmp_path) == ["facts"]
    assert zsh_complete(fpath, "hosttune profile ", tmp_path) == ["generate", "list", "show"]
    assert "--base" in zsh_complete(fpath, "hosttune profile generate --ba", tmp_path)
    assert "--interval" in zsh_complete(fpath, "hosttune monitor --", tmp_path)
    assert "python3" in zsh_complete(fpath, "hosttune exec --profile p -- pytho", tmp_path)
    assert zsh_complete(fpath, "hosttune tune apply --only thp", tmp_path) == ["thp", "thp_defrag"]


def fish_complete(script: Path, line: str) -> List[str]:
    # The user's config is read (fish loads the system's completions for the command after `--` through it).
    prog = f"function hosttune; end; source {script}; complete -C {line!r}"
    out = subprocess.run(["fish", "-c", prog], capture_output=True, text=True, timeout=60, cwd="/").stdout
    return [w.split("\t")[0] for w in out.splitlines() if w]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (Makefile TEST_APT has it)")
def test_fish_completion_follows_the_cli(generated: Dict[str, Any]) -> None:
    script = generated["dir"] / "hosttune.fish"
    assert subprocess.run(["fish", "-n", str(script)], timeout=30).returncode == 0
    assert sorted(fish_complete(script, "hosttune ")) == sorted(generated["dump"]["tree"])
    assert fish_complete(script, "hosttune fa") == ["facts"]
    assert sorted(fish_complete(script, "hosttune profile ")) == ["generate", "list", "show"]
    assert "--base" in fish_complete(script, "hosttune profile generate --ba")
    assert "python3" in fish_complete(script, "hosttune exec --profile p -- pytho")
    assert sorted(fish_complete(script, "hosttune tune apply --only thp")) == ["thp", "thp_defrag"]


def test_every_command_and_option_is_in_every_completion_and_the_man_page(generated: Dict[str, Any]) -> None:
    d = generated["dir"]
    texts = {name: (d / name).read_text() for name in ("hosttune", "_hosttune", "hosttune.fish")}
    man = (d / "hosttune.1").read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    for name, node in generated["dump"]["tree"].items():
        nodes = [node] + list(node["subcommands"].values())
        for n in nodes:
            for opt in n["options"]:
                assert opt in texts["hosttune"] and opt in texts["_hosttune"], (name, opt)
                assert (f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}") in texts["hosttune.fish"]
                assert opt in man, (name, opt)
        assert re.search(rf"^\.TP\n{re.escape(name)}\b", man, flags=re.M), name


# ---- man pages -----------------------------------------------------------------------------------------------------

def test_man_page_environment_names_every_hosttune_variable(generated: Dict[str, Any]) -> None:
    man = (generated["dir"] / "hosttune.1").read_text()
    env = man.split(".SH ENVIRONMENT", 1)[1].split("\n.SH ", 1)[0].replace("\\-", "-")
    ours = sorted(v for k, v in vars(names).items() if k.isupper() and isinstance(v, str) and v.startswith("HOSTTUNE_"))
    assert ours and all(f"\\fB{v}\\fR" in env for v in ours), [v for v in ours if v not in env]
    for standard in ("NO_COLOR", "TERM", "CUDA_VISIBLE_DEVICES", "PATH"):
        assert f"\\fB{standard}\\fR" in env
    assert "monitor.yaml (5)" in man and not re.search(r"@[A-Z]+@", man)


@pytest.mark.skipif(shutil.which("man") is None, reason="man-db is not installed")
def test_man_pages_render_without_warnings(generated: Dict[str, Any]) -> None:
    for page in ("hosttune.1", "monitor.yaml.5"):
        proc = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", str(generated["dir"] / page)],
                              capture_output=True, text=True, timeout=60, env=dict(os.environ, MANWIDTH="80"))
        assert proc.returncode == 0 and proc.stderr.strip() == "", (page, proc.stderr)
        assert "ENVIRONMENT" in proc.stdout or page != "hosttune.1"


def test_monitor_yaml_page_has_every_setting_and_the_build_refuses_a_missing_one(generated: Dict[str, Any]) -> None:
    page = (generated["dir"] / "monitor.yaml.5").read_text().replace("\\-", "-")
    assert page.startswith(".TH MONITOR.YAML 5")
    for key in generated["dump"]["monitor_keys"]:
        assert f"\\fB{key}\\fR" in page, key
    for key in generated["dump"]["threshold_keys"]:
        assert f"\\fBthresholds.{key}\\fR" in page, key
    without = re.sub(r"^backups:.*\n", "", generated["conf"], flags=re.M)
    with pytest.raises(ValueError, match="backups"):
        generated["clidoc"].man_monitor_yaml(without, generated["dump"], "9.9", 0)


# ---- RPM %post -----------------------------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("systemctl") is None, reason="systemctl is not installed")
def test_rpm_post_presets_the_units_on_first_install_only(tmp_path: Path) -> None:
    """The real scriptlet with the real `systemctl preset`, pointed at a root (--root) holding the units and a
    Fedora-style preset policy: first install applies it, an upgrade does not touch the admin's choice."""
    root = tmp_path / "root"
    units = root / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    for unit in (REPO / "systemd").iterdir():
        shutil.copy2(str(unit), str(units / unit.name))
    presets = root / "usr/lib/systemd/system-preset"
    presets.mkdir(parents=True)
    (presets / "50-fleet.preset").write_text("enable hosttune-monitor.service\n")
    (presets / "99-default-disable.preset").write_text("disable *\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = shutil.which("systemctl")
    (bindir / "systemctl").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/calls\nexec {real} --root={root} \"$@\"\n")
    (bindir / "systemctl").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    post = REPO / "packaging/scripts/rpm/post"
    wants = root / "etc/systemd/system/multi-user.target.wants"

    assert subprocess.run(["sh", str(post), "1"], env=env, timeout=60).returncode == 0
    assert (wants / "hosttune-monitor.service").is_symlink()  # the fleet's preset enables it
    assert not (wants / "hosttune-tune.service").exists()  # the default policy keeps the rest off
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == "--no-reload preset hosttune-monitor.service hosttune-tune.service hosttune-tune-reapply.path"

    (wants / "hosttune-monitor.service").unlink()  # the admin disabled it; an upgrade must keep that
    (tmp_path / "calls").unlink()
    assert subprocess.run(["sh", str(post), "2"], env=env, timeout=60).returncode == 0
    assert not (wants / "hosttune-monitor.service").exists()
    calls_text = (tmp_path / "calls").read_text() if (tmp_path / "calls").exists() else ""
    assert "preset" not in calls_text
