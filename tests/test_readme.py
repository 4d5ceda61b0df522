"""The README tells the truth about the CLI, and cannot drift from it silently.

- Its countable claims hold against the CLI itself: the number of doctor checks, the commands in its table (every
  top-level command of `hosttune --help` is there, and nothing that is not one), every flag the table lists, and the
  first screen's two set-up commands.
- Its samples (between `<!-- sample: NAME -->` and `<!-- /sample -->`, written by scripts/readme_samples.py from real
  runs) have the shape the CLI prints now: `facts` has every row the renderer always prints and no row it cannot;
  each `doctor` row is what today's table renders for that check (id, title, column, fix indentation) and the
  summary counts every check; every exec cache line is a message the cache can print; `tune verify` lists every
  tunable; every `hosttune ...` command shown names real commands and options.

None of this depends on the machine the tests run on (its values, speed or GPUs) or on the checkout's path: the
samples are read from the README, and the CLI's side comes from its renderers fed with synthetic data, its click
commands and its source text.
"""
import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, List, Set, Tuple

import click
import pytest
from click.testing import CliRunner

from hosttune.cli import cli
from hosttune.commands.doctor import render_table
from hosttune.commands.facts import render
from hosttune.doctor.catalogue import CHECKS
from hosttune.doctor.deep.checks import DEEP_CHECKS
from hosttune.doctor.model import Report, Result
from hosttune.engine.__main__ import parser as engine_parser
from hosttune.engine.config import PRESETS
from hosttune.facts import Container, Facts, Gpu, Mount, Numa, NumaNode, TorchInstall
from hosttune.tune.tunables import TUNABLE_IDS

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
STATUSES = ("PASS", "WARN", "FAIL", "SKIP")


def _script() -> ModuleType:
    path = REPO / "scripts" / "readme_samples.py"
    spec = importlib.util.spec_from_file_location("hosttune_readme_samples", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[attr-defined]
    return module


SCRIPT = _script()


def _sample(name: str) -> List[str]:
    """The lines of one sample's fenced block, without the fences and the list indentation."""
    start, end, indent = SCRIPT.blocks(README)[name]
    body = README[start:end].strip("\n").split("\n")
    lines = [line[len(indent):] if line.startswith(indent) else line for line in body]
    assert lines[0].startswith("```") and lines[-1] == "```", (name, lines[:1], lines[-1:])
    assert not any(line.startswith("```") for line in lines[1:-1]), f"{name}: one fenced block only"
    return lines[1:-1]


# --- the countable claims -------------------------------------------------------------------------------------------

def test_the_number_of_checks_is_the_catalogues() -> None:
    said = {int(n) for n in re.findall(r"\b(\d+) checks\b", README)}
    assert said == {len(CHECKS)}, (said, len(CHECKS))


def _top_level_commands() -> Set[str]:
    out = CliRunner().invoke(cli, ["--help"]).output
    listed = re.search(r"Commands:\n(.*)", out, re.S)
    assert listed, out
    return set(re.findall(r"^  (\w[\w-]*)  ", listed.group(1), re.M))  # continuation lines are indented deeper


def _table() -> str:
    return README.split("## Commands", 1)[1].split("\n#", 1)[0]


def test_the_command_table_names_every_command() -> None:
    commands = _top_level_commands()
    in_table = set(re.findall(r"^\| `hosttune (\w[\w-]*)", _table(), re.M))
    assert commands == in_table, (sorted(commands - in_table), sorted(in_table - commands))


def test_the_first_screen_has_the_two_setup_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("```", 2)[1]
    lines = [line.split("#")[0].strip() for line in quick.splitlines() if line.strip() and not line.startswith("sh")]
    assert lines == ["make demo", "make test"], lines


CTX = click.Context(cli, info_name="hosttune")


def _subcommands(cmd: click.Command) -> Dict[str, click.Command]:
    """A group's commands through its own lookup (hosttune's top level imports a command only when asked)."""
    if not isinstance(cmd, click.Group):
        return {}
    found = {name: cmd.get_command(CTX, name) for name in cmd.list_commands(CTX)}
    return {name: sub for name, sub in found.items() if sub is not None}


def _options(cmd: click.Command) -> Set[str]:
    """Every option name of `cmd` and, for a group, of its subcommands (a table row may span them)."""
    names = {o for p in cmd.params for o in list(p.opts) + list(p.secondary_opts) if o.startswith("-")}
    for sub in _subcommands(cmd).values():
        names |= _options(sub)
    return names


ENGINE_OPTIONS = set(engine_parser()._option_string_actions)  # `hosttune train` passes what follows to the engine


def _check_invocation(words: List[str], where: str) -> None:
    """`hosttune WORDS...` as shown in the README: the commands exist and every option belongs to them."""
    cmd: click.Command = cli
    path = "hosttune"
    i = 0
    while isinstance(cmd, click.Group) and i < len(words) and not words[i].startswith("-"):
        word = words[i].strip("[]")
        if word in ("\\|", "|", "..."):
            i += 1
            continue
        if not re.fullmatch(r"[a-z][\w-]*", word):
            break
        subs = _subcommands(cmd)
        assert word in subs, f"{where}: `{path} {word}` is not a command ({sorted(subs)})"
        if isinstance(subs[word], click.Group) or cmd is cli:
            cmd, path = subs[word], f"{path} {word}"
        i += 1
    allowed = _options(cmd) | (ENGINE_OPTIONS if path == "hosttune train" else set())
    for word in words[i:]:
        if word == "--":
            break  # the command hosttune runs: its options are its own
        for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", word.split("=", 1)[0]):
            assert flag in allowed, f"{where}: `{path}` has no option {flag} ({sorted(allowed)})"


def test_every_flag_in_the_command_table_is_the_commands() -> None:
    rows = [line for line in _table().splitlines() if line.startswith("| `hosttune ")]
    assert rows
    for row in rows:
        first_cell = row.split(" | ")[0]
        for span in re.findall(r"`hosttune ([^`]+)`", first_cell):
            _check_invocation(span.split(), f"command table: {span}")


# --- the samples ----------------------------------------------------------------------------------------------------

def test_every_sample_has_a_generator_and_every_generator_a_sample() -> None:
    in_readme = set(SCRIPT.blocks(README))
    assert in_readme == set(SCRIPT.SAMPLES), (sorted(in_readme - set(SCRIPT.SAMPLES)),
                                               sorted(set(SCRIPT.SAMPLES) - in_readme))
    for name in in_readme:
        assert _sample(name), f"sample {name} is empty"


def test_the_samples_hold_no_temporary_place() -> None:
    """The script prints its sandbox as the places it stands for; a temporary name in the README means it did not."""
    for name in SCRIPT.SAMPLES:
        text = "\n".join(_sample(name))
        assert "readme-samples-" not in text and "/build/" not in text, name


def _invocations() -> Iterator[Tuple[str, List[str]]]:
    """Every `hosttune ...` command a sample shows: the commands typed (`$ `, `# `) and the fixes doctor prints."""
    for name in SCRIPT.SAMPLES:
        for line in _sample(name):
            fix = re.match(r"^\s+fix: (.*)$", line)
            typed = re.match(r"^(?:\$ |# (?=hosttune ))(.*)$", line)  # `# ` is root's prompt in console blocks
            text = fix.group(1) if fix else typed.group(1) if typed else None
            if text is None:
                continue
            for m in re.finditer(r"(?<![\w./-])hosttune ([a-z][^|;#]*)", text):
                yield f"sample {name}: {line.strip()}", m.group(1).split()


def test_every_command_a_sample_shows_is_real() -> None:
    shown = list(_invocations())
    assert len(shown) >= 10, shown
    for where, words in shown:
        _check_invocation(words, where)


def _label(row: str) -> str:
    m = re.match(r"^(\S.*?)\s{2,}\S", row)
    assert m, f"not a `label  value` row: {row!r}"
    return m.group(1)


def _kind(label: str) -> str:
    """A row's kind: what stays of its label when the host-specific part (a node number, a mount point) goes."""
    return re.sub(r"^(storage) .*$", r"\1 MOUNT", re.sub(r"\d+$", "N", label))


def test_the_facts_sample_has_every_row_facts_prints() -> None:
    lines = _sample("facts")
    assert lines[0] == "$ hosttune facts"
    bare = Facts()
    full = Facts(gpus=(Gpu(index=0, pci_bus_id="0000:3b:00.0"),), numa=Numa(nodes=(NumaNode(id=0),)),
                 storage=(Mount(mount="/", fstype="ext4", kind="ssd"),), missing=("kernel.modules: unreadable",),
                 torch=TorchInstall(python="/usr/bin/python3", version="2.13.0"),
                 container=Container(detected=True, runtime="docker", evidence=("/.dockerenv exists",),
                                     host_values=("kernel sysctls are the host's",)))
    bare_kinds = [_kind(_label(r)) for r in render(bare).splitlines()]
    full_kinds = [_kind(_label(r)) for r in render(full).splitlines()]
    always = [k for k in bare_kinds if k in full_kinds]  # printed whatever the host has
    possible = set(bare_kinds) | set(full_kinds)
    sample_kinds = [_kind(_label(r)) for r in lines[1:]]
    assert [k for k in always if k not in sample_kinds] == [], "rows `hosttune facts` always prints are missing"
    assert [k for k in sample_kinds if k not in possible] == [], "rows `hosttune facts` no longer prints"
    order = [k for k in sample_kinds if k in always]
    assert order == [k for k in always if k in order], "the rows are not in the order facts prints them"
    width = max(len(_label(r)) for r in lines[1:])
    assert all(r[width:width + 2] == "  " and r[width + 2] != " " for r in lines[1:]), "the values are not aligned"


def _doctor_results(lines: List[str], checks: tuple) -> Tuple[List[str], Dict[str, Result]]:
    """The sample's table rows (fix lines included), and the Result each row stands for."""
    by_id = {c.id: c for c in checks}
    rows: List[str] = []
    parsed: List[Tuple[Result, List[str]]] = []
    pad = 0
    for line in lines:
        if line.startswith(" ") and parsed:  # a fix line: "fix: " after the padding, then 5 spaces deeper
            if line.lstrip().startswith("fix: ") and not parsed[-1][1]:
                pad = len(line) - len(line.lstrip())
            parsed[-1][1].append(line[pad + 5:])
            rows.append(line)
            continue
        m = re.match(r"^(PASS|WARN|FAIL|SKIP)  (\S+) +(.*)$", line)
        if not m:
            continue
        status, cid, rest = m.group(1).lower(), m.group(2), m.group(3)
        assert cid in by_id, f"doctor has no check {cid}"
        check = by_id[cid]
        assert rest.startswith(check.title + ": "), f"{cid}: the title is now {check.title!r}: {rest!r}"
        actual, expected = rest[len(check.title) + 2:], ""
        if status in ("warn", "fail") and actual.endswith(")") and " (expected " in actual:
            cut = actual.rindex(" (expected ")
            actual, expected = actual[:cut], actual[cut + len(" (expected "):-1]
        parsed.append((Result(cid, check.group, status, check.title, expected, actual, ""), []))
        rows.append(line)
    results = {r.id: Result(r.id, r.group, r.status, r.title, r.expected, r.actual, "\n".join(fix))
               for r, fix in parsed}
    return rows, results


def _check_doctor_sample(name: str, checks: tuple) -> None:
    lines = _sample(name)
    rows, results = _doctor_results(lines, checks)
    assert results, f"{name}: no doctor row"
    every = [results.get(c.id) or Result(c.id, c.group, "pass", c.title, "", "-", "") for c in checks]
    rendered = render_table(Report(tuple(every))).splitlines()
    drawn = [r for r in rendered if not r.startswith(" ")]
    for row in rows:  # each row, and each fix line, exactly as today's table draws it
        if row.startswith(" "):
            assert any(row == r for r in rendered), f"{name}: the fix indentation or text differs: {row!r}"
        else:
            assert row in drawn, f"{name}: doctor draws this row differently now: {row!r}"
    summary = re.fullmatch(r"(\d+) pass, (\d+) warn, (\d+) fail, (\d+) skip", lines[-1])
    assert summary, f"{name}: the last line is not doctor's summary: {lines[-1]!r}"
    assert sum(int(n) for n in summary.groups()) == len(checks), f"{name}: the summary does not count every check"


def test_the_doctor_sample_is_what_doctor_draws() -> None:
    _check_doctor_sample("doctor", CHECKS)


def test_the_deep_sample_is_what_doctor_draws() -> None:
    _check_doctor_sample("doctor-deep", CHECKS + DEEP_CHECKS)


def _message_patterns(folder: Path) -> List["re.Pattern[str]"]:
    """Every string the modules in `folder` can print, as a pattern: an f-string's fields match any text."""
    patterns = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                texts = [str(v.value) if isinstance(v, ast.Constant) else None for v in node.values]
                parts = [".+" if t is None else re.escape(t) for t in texts]
                literal = "".join(t for t in texts if t is not None)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                parts, literal = [re.escape(node.value)], node.value
            else:
                continue
            if len(literal.strip()) >= 4:  # "{x}" alone would match anything
                patterns.append(re.compile("".join(parts)))
    return patterns


def test_the_exec_cache_sample_prints_only_what_the_cache_says() -> None:
    lines = _sample("exec-cache")
    said = [line[len(SCRIPT.EXPLAIN):] for line in lines if line.startswith(SCRIPT.EXPLAIN)]
    patterns = _message_patterns(REPO / "hosttune" / "execcache")
    for msg in said:
        assert any(p.fullmatch(msg) for p in patterns), f"the exec cache never prints {msg!r}"
    kinds = [next(k for k in ("replayed", "not recorded", "recorded", "stale", "") if m.startswith(k)) for m in said]
    assert "recorded" in kinds and "replayed" in kinds and "stale" in kinds, said
    assert kinds.index("recorded") < kinds.index("replayed") < kinds.index("stale"), said
    assert f"sleep {SCRIPT.RACY_S}" in "\n".join(lines)


def test_the_racy_window_the_readme_states_is_the_caches() -> None:
    from hosttune import execcache

    assert SCRIPT.RACY_S * 1_000_000_000 == execcache.RACY_NS
    assert f"in the last {SCRIPT.RACY_S} seconds" in README.replace("\n", " ")


def test_the_tune_verify_sample_lists_every_tunable() -> None:
    lines = _sample("tune-verify")
    assert lines[0] == "# hosttune tune verify"
    header = lines[1]
    assert header.split() == ["ID", "STATE", "EXPECTED", "ACTUAL", "WHY"]
    rows = lines[2:2 + len(TUNABLE_IDS)]
    assert [r.split()[0] for r in rows] == list(TUNABLE_IDS)
    column = header.index("STATE")
    assert all(r[column - 2:column] == "  " and r[column] != " " for r in rows), "columns not aligned"
    assert all(r[column:].split()[0] in ("ok", "drift", "skip", "unknown", "error") for r in rows)
    assert lines[-2:] in (["# echo $?", "0"], ["# echo $?", "1"])


def test_the_tune_samples_name_the_tunables_as_tune_does() -> None:
    for line in re.findall(r"\(tunables: ([^)]*)\)", README):
        assert line.split(", ") == list(TUNABLE_IDS)


def test_the_demo_sample_is_make_demos_training() -> None:
    lines = _sample("demo")
    assert lines[0].startswith("# ") and lines[1].startswith("$ hosttune train --nproc 2 --preset gpt-tiny")
    done = re.fullmatch(r"hosttune\.engine: done: (\S+) step (\d+) on (\d+) rank\(s\) in [\d.]+s, .*", lines[2])
    assert done, lines[2]
    assert done.groups() == ("gpt-tiny", str(PRESETS["gpt-tiny"]["steps"]), "2")
    make = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "hosttune train --nproc 2 --preset gpt-tiny" in make


def test_make_demo_runs_the_hosttune_it_installed() -> None:
    """The README says `make demo` runs hosttune from the interpreter it installed into (`$(PYTHON) -m hosttune`),
    not whatever `hosttune` comes first on PATH."""
    make = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", make, re.M)
    assert recipe, "no demo target"
    runs = [line for line in recipe.group(1).splitlines() if re.search(r"\bhosttune\b", line)]
    assert runs and all(re.search(r"\$\(PYTHON\) -m hosttune ", line) for line in runs), runs
    assert "`python3 -m hosttune`" in README.replace("\n", " ")


@pytest.mark.parametrize("name", ["profile", "env-kept", "exec-dry-run", "train-short"])
def test_the_other_samples_start_with_a_command(name: str) -> None:
    lines = _sample(name)
    first = next(line for line in lines if not line.startswith("# "))
    assert first.startswith("$ "), (name, first)


def test_the_facts_json_keys_the_readme_names_are_the_facts() -> None:
    said = README.split("`--json` gives the contract", 1)[1].split(")", 1)[0].replace("\n", "")
    names = re.findall(r"`([^`]+)`", said)
    assert len(names) >= 8, names
    data = Facts().to_dict()
    for name in names:
        top, _, sub = name.partition(".")
        assert top.rstrip("[]") in data, f"facts --json has no {top}"
        for key in re.findall(r"\w+", sub):
            assert key in data[top], f"facts --json has no {top}.{key}"
