"""What packaging/build.py generates from the snapshot's click tree, so none of it can drift from the CLI: the zsh and
fish completions (the bash one is build.py's template fill), the man page hosttune(1) around the hand-written parts
of packaging/hosttune.1.in, and monitor.yaml(5) from the shipped conf/monitor.yaml.

The tree comes from DUMP, run by build.py in a subprocess on the snapshot (its JSON shape is below). Everything
here is static text: no Python starts at <TAB> (click's own shell_complete would start the CLI on every key press,
and click 7.1 on EL9 has none of it). Python 3.9 compatible, standard library only.
"""

import datetime
import re
from typing import Any, Dict, List, Tuple

# Prints, as JSON, the click tree of the hosttune package first on sys.path (the snapshot's), with each command's
# help and each option's help, kind and choices; the HOSTTUNE_* names of hosttune/policy/names.py with their
# comments; the monitor config's keys; the tunables' ids and titles.
DUMP = r'''
import json, re, sys
import click
import hosttune
from hosttune.cli import COMMANDS, cli

def kind(param):
    t = param.type
    if isinstance(t, click.Choice):
        return "choice"
    if isinstance(t, click.Path):
        return "dir" if (t.dir_okay and not t.file_okay) else "file"
    if isinstance(t, (click.types.IntParamType, click.types.FloatParamType)):
        return "number"
    return "text"

def describe(command, short=None):
    params, args, names, takes_value = [], [], [], []
    for p in command.params:
        if isinstance(p, click.Argument):
            args.append({"name": (p.metavar or p.name).upper(), "nargs": p.nargs, "required": p.required})
            continue
        if not isinstance(p, click.Option) or getattr(p, "hidden", False):
            continue
        flag = bool(p.is_flag or getattr(p, "count", False))
        names += list(p.opts) + list(p.secondary_opts)
        if not flag:
            takes_value += list(p.opts)
        metavar = p.metavar or (None if flag else p.type.name.upper())
        params.append({"opts": list(p.opts), "secondary": list(p.secondary_opts), "help": p.help or "",
                       "flag": flag, "multiple": bool(p.multiple), "metavar": metavar, "kind": kind(p),
                       "choices": list(getattr(p.type, "choices", []) or [])})
    out = {"options": names, "takes_value": takes_value, "params": params, "args": args,
           "help": command.help or "", "short": short or command.get_short_help_str(limit=80), "subcommands": {}}
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for sub in command.list_commands(ctx):
            out["subcommands"][sub] = describe(command.get_command(ctx, sub))
    return out

ctx = click.Context(cli)
tree = {name: describe(cli.get_command(ctx, name), COMMANDS[name][1]) for name in cli.list_commands(ctx)}
env, section = [], ""
with open(hosttune.__path__[0] + "/policy/names.py") as fh:
    for line in fh:
        if line.startswith("# "):
            section = line[2:].strip()
        m = re.match(r'^[A-Z_]+ = "(HOSTTUNE_[A-Z_]+)"\s*(?:#\s*(.*))?$', line)
        if m:
            env.append({"name": m.group(1), "help": (m.group(2) or "").strip(), "section": section})
from dataclasses import fields
from hosttune.monitor.config import MonitorConfig, Thresholds
from hosttune.tune.tunables import TUNABLES
json.dump({"file": hosttune.__file__, "tree": tree, "root_help": cli.help or "", "env": env,
           "monitor_keys": [f.name for f in fields(MonitorConfig)],
           "threshold_keys": [f.name for f in fields(Thresholds)],
           "tunables": [[t.id, t.title] for t in TUNABLES]}, sys.stdout)
'''

# Variables hosttune reads that are not its own (the HOSTTUNE_* ones come from hosttune/policy/names.py).
STANDARD_ENV: Tuple[Tuple[str, str], ...] = (
    ("NO_COLOR", "Set to anything non-empty: no colour in any output (https://no-color.org)."),
    ("TERM", "dumb: no colour and no status line redrawn in place."),
    ("PATH", "Where the python3 whose torch facts, doctor and train use is looked up (as root: only directories "
             "that root alone can write)."),
    ("PYTHONPATH", "Searched for torch by the facts probe, as the interpreter would (as root: only when every entry "
                   "is root's alone)."),
    ("CUDA_VISIBLE_DEVICES", "The GPUs a job may use (indices, GPU-/MIG- UUIDs); plans and checks count only "
                             "these."),
    ("OMP_NUM_THREADS", "A value you set is kept by exec (and said) unless --override."),
    ("PYTORCH_ALLOC_CONF", "As OMP_NUM_THREADS (also its older name PYTORCH_CUDA_ALLOC_CONF)."),
    ("SLURM_LOCALID", "Under srun: this task's local rank; with SLURM_NTASKS_PER_NODE and "
                      "SLURM_CPUS_PER_TASK, how exec splits the node's CPUs."),
    ("CONDA_PREFIX", "Marks the probed interpreter as a conda environment."),
)


# ---- roff -------------------------------------------------------------------------------------------------------

def roff(text: str) -> str:
    """Plain text as roff: backslashes and hyphens escaped, `code` in bold, no line read as a request."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    out = re.sub(r"`([^`\n]+)`", lambda m: "\\fB" + m.group(1) + "\\fR", out)
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in out.split("\n"))


def paragraphs(help_text: str) -> List[Tuple[bool, str]]:
    """click help as (preformatted, text) paragraphs: an indented block (examples) or one marked with \\b keeps
    its lines; any other paragraph is rewrapped by man."""
    out: List[Tuple[bool, str]] = []
    for block in re.split(r"\n\s*\n", help_text.strip("\n")):
        lines = block.split("\n")
        keep = lines[0].strip() == "\b"
        if keep:
            lines = lines[1:]
        if not lines:
            continue
        indent = min(len(ln) - len(ln.lstrip()) for ln in lines if ln.strip())
        lines = [ln[indent:] for ln in lines]
        if keep or indent > 0 or (len(lines) > 1 and all(ln.startswith("  ") for ln in lines[1:])):
            out.append((True, "\n".join(lines)))
        else:
            out.append((False, " ".join(ln.strip() for ln in lines)))
    return out


def render_help(help_text: str, first: str = "") -> List[str]:
    """Paragraphs inside a .TP/.IP item: the first straight after the tag, the rest as further indented paras."""
    lines: List[str] = []
    for n, (pre, text) in enumerate(paragraphs(help_text)):
        if n > 0 or first:
            lines.append(".IP")
        if pre:
            lines += [".nf", roff(text), ".fi"]
        else:
            lines.append(roff(text))
    return lines


def option_tag(p: Dict[str, Any]) -> str:
    names = ", ".join("\\fB" + roff(o) + "\\fR" for o in p["opts"] + p["secondary"])
    if p["flag"]:
        return names
    value = "|".join(p["choices"]) if p["choices"] else p["metavar"]
    return f"{names} \\fI{roff(value)}\\fR" + (" (repeatable)" if p["multiple"] else "")


def synopsis(name: str, node: Dict[str, Any]) -> str:
    parts = [f"\\fB{roff(name)}\\fR"]
    if node["params"]:
        parts.append("[\\fIoptions\\fR]")
    for a in node["args"]:
        arg = f"\\fI{roff(a['name'])}\\fR" + ("..." if a["nargs"] == -1 else "")
        parts.append(arg if a["required"] else f"[{arg}]")
    return " ".join(parts)


def command_section(tree: Dict[str, Any]) -> List[str]:
    lines = [".SH COMMANDS"]
    for name in sorted(tree):
        node = tree[name]
        entries = [(name, node)] + [(f"{name} {sub}", node["subcommands"][sub]) for sub in sorted(node["subcommands"])]
        for full, sub_node in entries:
            lines += [".TP", synopsis(full, sub_node)]
            lines += render_help(sub_node["help"] or sub_node["short"])
            if sub_node["params"]:
                lines.append(".RS")
                for p in sub_node["params"]:
                    lines += [".TP", option_tag(p)]
                    lines += render_help(p["help"]) if p["help"] else []
                lines.append(".RE")
    return lines


def environment_section(env: List[Dict[str, str]]) -> List[str]:
    lines = [".SH ENVIRONMENT"]
    for e in env:
        why = e["help"] or e["section"]
        text = why[0].upper() + why[1:] if why else ""
        lines += [".TP", f"\\fB{roff(e['name'])}\\fR", roff(text.rstrip(".") + ".")]
    for name, text in STANDARD_ENV:
        lines += [".TP", f"\\fB{roff(name)}\\fR", roff(text)]
    return lines


def th_date(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc).strftime("%Y-%m-%d")


def man_hosttune(template: str, dump: Dict[str, Any], version: str, epoch: int) -> str:
    """packaging/hosttune.1.in with @DATE@, @VERSION@, @COMMANDS@, @TUNABLES@ and @ENVIRONMENT@ filled."""
    tunables = ",\n".join(f".B {roff(tid)}\n({roff(title)})" for tid, title in dump["tunables"])
    fills = {"@DATE@": th_date(epoch), "@VERSION@": version, "@COMMANDS@": "\n".join(command_section(dump["tree"])),
             "@TUNABLES@": tunables, "@ENVIRONMENT@": "\n".join(environment_section(dump["env"]))}
    out = template
    for key, value in fills.items():
        if key not in out:
            raise ValueError(f"packaging/hosttune.1.in has no {key}")
        out = out.replace(key, value)
    return out


# ---- monitor.yaml(5) ----------------------------------------------------------------------------------------------

def monitor_entries(conf: str) -> List[Tuple[str, str, str]]:
    """(key, default, description) from the commented default config: a key's description is the comment block
    just above it (or its own trailing comment); nested keys are `parent.key`; `# key: value` lines under a
    mapping are settings that default to off/automatic."""
    entries: List[Tuple[str, str, str]] = []
    comment: List[str] = []
    parent = ""
    for raw in conf.split("\n"):
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if not body:
            comment = []
            continue
        commented_key = re.match(r"^#\s*([a-z_]+):\s*(\S.*)?$", body) if indent > 0 else None
        if body.startswith("#") and not commented_key:
            comment.append(body.lstrip("#").strip())
            continue
        if body.startswith("- "):
            if entries:
                key, default, text = entries[-1]
                entries[-1] = (key, (default + ", " if default else "") + body[2:].strip(), text)
            continue
        m = commented_key or re.match(r"^([a-z_]+):\s*(.*)$", body)
        if not m:
            comment = []
            continue
        key, rest = m.group(1), (m.group(2) or "")
        value, _, trailing = rest.partition(" #")
        if indent == 0:
            parent = key
            full = key
        else:
            full = f"{parent}.{key}"
        text = " ".join(comment + ([trailing.strip()] if trailing.strip() else []))
        if not text and entries:
            text = f"See {entries[-1][0]}."  # a key sharing the comment above the one before it
        default = value.strip() if not commented_key else f"unset; the file shows {value.strip()}"
        entries.append((full, default, text))
        comment = []
    return entries


def man_monitor_yaml(conf: str, dump: Dict[str, Any], version: str, epoch: int) -> str:
    entries = monitor_entries(conf)
    documented = {k for k, _, _ in entries}
    missing = [k for k in dump["monitor_keys"] if k not in documented] + [
        f"thresholds.{k}" for k in dump["threshold_keys"] if f"thresholds.{k}" not in documented]
    if missing:
        raise ValueError("conf/monitor.yaml does not show these monitor settings (monitor.yaml(5) is made from it): "
                         + ", ".join(missing))
    lines = [f'.TH MONITOR.YAML 5 "{th_date(epoch)}" "hosttune {version}" "File Formats"',
             ".SH NAME", "monitor.yaml \\- settings of the hosttune monitor",
             ".SH SYNOPSIS", ".I /etc/hosttune/monitor.yaml",
             ".SH DESCRIPTION",
             "The configuration of",
             ".B hosttune monitor",
             "and of",
             ".BR hosttune\\-monitor.service ,",
             "in YAML. Every key is optional; an unknown key, or a value of the wrong type, is an error naming the "
             "file, the key and the line, and the monitor does not start. Command-line options",
             "(\\fB\\-\\-interval\\fR, \\fB\\-\\-log\\-dir\\fR, \\fB\\-\\-textfile\\-dir\\fR) override the file; "
             "\\fB\\-\\-config\\fR \\fIFILE\\fR reads another one. After an edit:",
             ".B systemctl restart hosttune\\-monitor",
             ".SH KEYS"]
    for key, default, text in entries:
        lines += [".TP", f"\\fB{roff(key)}\\fR" + (f" (default: {roff(default)})" if default else "")]
        if text:
            lines.append(roff(text))
    lines += [".SH FILES", ".TP", ".I /etc/hosttune/monitor.yaml",
              "The packaged default, a conffile: kept on upgrade when edited, removed on purge.",
              ".SH SEE ALSO", ".BR hosttune (1),", ".BR systemctl (1)", ""]
    return "\n".join(lines)


def completion_tree(dump: Dict[str, Any]) -> Dict[str, Any]:
    """The click tree with the values an option takes that click does not know as choices: `tune ... --only`
    takes a tunable's id."""
    import copy

    tree = copy.deepcopy(dump["tree"])
    ids = [tid for tid, _ in dump.get("tunables", [])]
    tune = tree.get("tune", {})
    for node in [tune] + list(tune.get("subcommands", {}).values()):
        for param in node.get("params", []):
            if "--only" in param["opts"] and not param["choices"]:
                param["choices"] = ids
    return tree


# ---- zsh ----------------------------------------------------------------------------------------------------------

def _zq(text: str) -> str:
    """Text inside a single-quoted zsh _arguments spec: no quotes, brackets or colons that end a field."""
    text = re.sub(r"\s+", " ", text).strip()
    for ch, rep in (("'", ""), ("[", "("), ("]", ")"), (":", " -"), ("\\", "/")):
        text = text.replace(ch, rep)
    return text[:100]


def _first_sentence(text: str) -> str:
    first = paragraphs(text)[0][1] if text.strip() else ""
    return first.split(". ")[0].rstrip(".")


def _zaction(p: Dict[str, Any], opt: str) -> str:
    if opt == "--python":
        return "_command_names -e"
    if p["choices"]:
        return "(" + " ".join(p["choices"]) + ")"
    if p["kind"] == "dir" or opt in ("--root", "--log-dir", "--textfile-dir", "--capture"):
        return "_files -/"
    if p["kind"] == "file" or opt in ("--profile", "--data", "--config", "-o", "--output", "--plot"):
        return "_files"
    return " "


def _zspecs(node: Dict[str, Any]) -> List[str]:
    specs = []
    for p in node["params"]:
        names = p["opts"] + p["secondary"]
        help_ = _zq(_first_sentence(p["help"]))
        star = "*" if p["multiple"] else ""
        excl = "" if p["multiple"] or len(names) == 1 else "(" + " ".join(names) + ")"
        for opt in names:
            if p["flag"]:
                specs.append(f"'{excl}{star}{opt}[{help_}]'")
            else:
                specs.append(f"'{excl}{star}{opt}[{help_}]:{_zq(p['metavar'] or 'value')}:{_zaction(p, opt)}'")
    specs.append("'(- *)'{-h,--help}'[Show help and exit]'")
    return specs


def zsh(tree: Dict[str, Any]) -> str:
    out = ["#compdef hosttune",
           "# zsh completion for hosttune, generated by packaging/build.py from the CLI's click commands (static: no",
           "# Python starts at <TAB>). Installed as /usr/share/zsh/vendor-completions/_hosttune.",
           "",
           "_hosttune() {",
           "  local curcontext=\"$curcontext\" state line ret=1",
           "  typeset -A opt_args",
           "  _arguments -C \\",
           "    '(- *)--version[Show the version and exit]' \\",
           "    '(- *)'{-h,--help}'[Show help and exit]' \\",
           "    '1: :->command' \\",
           "    '*:: :->args' && ret=0",
           "  case $state in",
           "    command)",
           "      local -a commands",
           "      commands=("]
    for name in sorted(tree):
        out.append(f"        '{name}:{_zq(tree[name]['short'])}'")
    out += ["      )",
            "      _describe -t commands 'hosttune command' commands && ret=0 ;;",
            "    args)",
            "      curcontext=\"${curcontext%:*:*}:hosttune-$words[1]:\"",
            "      case $words[1] in"]
    for name in sorted(tree):
        node = tree[name]
        subs = node["subcommands"]
        if subs:
            out.append(f"        {name})")
            described = " ".join(s + "\\:" + re.sub(r"[()]", "", _zq(subs[s]["short"])).replace(" ", "\\ ")
                                 for s in sorted(subs))
            out.append("          if (( CURRENT == 2 )); then")
            out.append("            _arguments " + " ".join(_zspecs(node)) + f" '1:subcommand:(({described}))'"
                       + " && ret=0")
            out.append("          else")
            out.append("            case $words[2] in")
            for s in sorted(subs):
                out.append(f"              {s}) shift words; (( CURRENT-- )); _arguments " + " ".join(_zspecs(subs[s]))
                           + " && ret=0 ;;")
            out.append("              *) _arguments " + " ".join(_zspecs(node)) + " && ret=0 ;;")
            out.append("            esac")
            out.append("          fi ;;")
        elif name == "exec":
            # After `--`: the user's command line, completed as zsh would complete it on its own.
            out.append(f"        {name})")
            out.append("          local dd=${words[(i)--]}")
            out.append("          if (( dd < CURRENT )); then shift $dd words; (( CURRENT -= dd )); _normal && ret=0")
            out.append("          else _arguments " + " ".join(_zspecs(node)) + " && ret=0; fi ;;")
        else:
            rest = " '*:engine argument:_files'" if node["args"] else ""
            out.append(f"        {name}) _arguments " + " ".join(_zspecs(node)) + rest + " && ret=0 ;;")
    out += ["      esac ;;",
            "  esac",
            "  return ret",
            "}",
            "",
            "_hosttune \"$@\"",
            ""]
    return "\n".join(out)


# ---- fish ---------------------------------------------------------------------------------------------------------

def _fq(text: str) -> str:
    return "'" + re.sub(r"\s+", " ", text).strip().replace("\\", "\\\\").replace("'", "\\'")[:100] + "'"


def _fish_option(cond: str, p: Dict[str, Any]) -> List[str]:
    lines = []
    for opt in p["opts"] + p["secondary"]:
        if opt.startswith("--"):
            flag = f"-l {opt[2:]}"
        elif len(opt) == 2:
            flag = f"-s {opt[1]}"
        else:
            flag = f"-o {opt[1:]}"
        line = f"complete -c hosttune -n {_fq(cond)} {flag}"
        if not p["flag"]:
            if p["choices"]:
                line += " -x -a " + _fq(" ".join(p["choices"]))
            elif opt == "--python":
                line += " -x -a '(__fish_complete_command)'"
            elif p["kind"] == "dir" or opt in ("--root", "--log-dir", "--textfile-dir", "--capture"):
                line += " -x -a '(__fish_complete_directories)'"
            elif p["kind"] == "file" or opt in ("--profile", "--data", "--config", "-o", "--output", "--plot"):
                line += " -r -F"
            else:
                line += " -x"
        help_ = _first_sentence(p["help"])
        if help_:
            line += " -d " + _fq(help_)
        lines.append(line)
    return lines


def fish(tree: Dict[str, Any]) -> str:
    commands = sorted(tree)
    out = ["# fish completion for hosttune, generated by packaging/build.py from the CLI's click commands (static: no",
           "# Python starts at <TAB>). Installed as /usr/share/fish/vendor_completions.d/hosttune.fish.",
           "",
           "# After `hosttune exec ... --`: the user's own command, completed as fish would complete it on its own.",
           "function __hosttune_after_dashdash",
           "    contains -- -- (commandline -opc)",
           "end",
           "function __hosttune_complete_command",
           "    set -l tokens (commandline -opc)",
           "    set -l i (contains -i -- -- $tokens)",
           "    set -l rest $tokens[(math $i + 1)..-1]",
           "    complete -C (string join -- ' ' (string escape -- $rest) (commandline -ct))",
           "end",
           "",
           "complete -c hosttune -f",
           "complete -c hosttune -n __fish_use_subcommand -l version -d 'Show the version and exit'",
           "complete -c hosttune -s h -l help -d 'Show help and exit'"]
    for name in commands:
        out.append(f"complete -c hosttune -n __fish_use_subcommand -a {name} -d {_fq(tree[name]['short'])}")
    for name in commands:
        node = tree[name]
        cond = f"__fish_seen_subcommand_from {name}"
        if name == "exec":
            cond += "; and not __hosttune_after_dashdash"
            out.append("complete -c hosttune -n '__fish_seen_subcommand_from exec; and __hosttune_after_dashdash' "
                       "-x -a '(__hosttune_complete_command)'")
            out.append(f"complete -c hosttune -n {_fq(cond)} -a -- -d 'The command to run follows'")
        subs = node["subcommands"]
        if subs:
            none_yet = f"{cond}; and not __fish_seen_subcommand_from {' '.join(sorted(subs))}"
            for s in sorted(subs):
                out.append(f"complete -c hosttune -n {_fq(none_yet)} -a {s} -d {_fq(subs[s]['short'])}")
            for p in node["params"]:
                out += _fish_option(none_yet, p)
            for s in sorted(subs):
                for p in subs[s]["params"]:
                    out += _fish_option(f"{cond}; and __fish_seen_subcommand_from {s}", p)
        else:
            for p in node["params"]:
                out += _fish_option(cond, p)
    out.append("")
    return "\n".join(out)

