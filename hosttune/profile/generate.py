"""Making and writing profiles: `generate(facts)` (facts of the host's software made concrete, per-run decisions
kept `auto` with today's reason), `to_yaml` and `write` (driven by the settings table), `fingerprint_note`.

A generated profile is policy, not host numbers: it names the allocator it found (a fact of the host's software)
but leaves binding, memory policy, threads and DataLoader workers `auto`, so the same file planned on another host
(copied by config management, or `hosttune env --root` of a captured host) is decided for *that* host.
"""

import dataclasses
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from hosttune import fsio
from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.policy import cpu as cpu_policy
from hosttune.policy import names
from hosttune.profile.load import load, parse_text
from hosttune.profile.settings import GENERATED, SETTINGS, Profile, value_of


def generate(facts: Facts, base: str = "throughput") -> Profile:
    """The base profile made concrete for this host, every choice with its reason."""
    b = load(base)
    reasons: Dict[str, str] = {}
    alloc, reasons["allocator"] = _allocator(b, facts, base)
    reasons.update(_cpu_reasons(b, facts, base))
    mp, reasons["memory_policy"] = _memory_policy(b, facts, base)
    reasons.update(_device_reasons(b, facts, base))
    reasons["fingerprint"] = "hardware fingerprint of this host; when it changes, regenerate"
    defaults = {
        "deterministic": f"{names.DETERMINISTIC}=" + ("1" if b.deterministic else "0"),
        "debug": "debug switches " + ("on" if b.debug else "off (only the debug profile sets them)"),
        "device": "GPUs when present" if b.device == "auto" else "GPUs hidden",
        "openmp": f"{b.openmp}: KMP_* only when Intel OpenMP is preloaded",
        "dataloader.prefetch_factor": "only with workers (2 when auto)",
        "dataloader.persistent_workers": "only with workers (on when auto)",
    }
    for key, why in defaults.items():
        if key not in reasons and key not in b.reasons:
            reasons[key] = f"{why}; from {base}"
    prov = dict(b.provenance)
    for key, why in reasons.items():
        prov[key] = f"generated: {why}"
    all_reasons = dict(b.reasons)
    all_reasons.update(reasons)
    host = facts.hostname or "this host"
    return dataclasses.replace(
        b,
        name=f"{b.name}@{host}" if facts.hostname else b.name,
        summary=f"{b.summary} (generated for {host})",
        source=GENERATED,
        allocator=alloc,
        memory_policy=mp,
        fingerprint=facts.hardware_fingerprint(),
        provenance=prov,
        chain=b.chain,
        reasons=all_reasons,
    )


def _allocator(b: Profile, facts: Facts, base: str) -> Tuple[str, str]:
    """The allocator (an `auto` base takes the best one installed: jemalloc, then tcmalloc) and why."""
    a = facts.allocators
    if b.allocator != "auto":
        found = {"jemalloc": a.jemalloc, "tcmalloc": a.tcmalloc or a.tcmalloc_minimal}.get(b.allocator)
        return b.allocator, f"{b.allocator} set by {base}" + (f"; found at {found}" if found else "")
    if a.jemalloc:
        return "jemalloc", f"jemalloc found at {a.jemalloc}"
    if a.tcmalloc or a.tcmalloc_minimal:
        return "tcmalloc", f"tcmalloc found at {a.tcmalloc or a.tcmalloc_minimal} (no jemalloc found)"
    hint = "dnf install jemalloc" if facts.distro.family == "rhel" else "apt install libjemalloc2"
    return "system", f"no jemalloc or tcmalloc found; glibc malloc (for x1.14-1.20: {hint})"


def _cpu_reasons(b: Profile, facts: Facts, base: str) -> Dict[str, str]:
    """Why the threads and the binding: decided per run when `auto`, with what this host allows today."""
    allowed = facts.cpu.allowed_cpus or facts.cpu.online
    cores = [c for c in facts.cpu.cores if set(c) & set(allowed)] if facts.cpu.cores else [(c,) for c in allowed]
    nodes_with_cpus = [n for n in facts.numa.nodes if set(n.cpus) & set(allowed)]
    quota = cpu_policy.quota(facts.cpu)
    qtxt = f", cgroup quota {quota:g} CPUs" if quota else ""
    threads = (
        f"{b.threads}: physical cores of each rank's binding ({len(cores)} allowed cores{qtxt}); never oversubscribed"
        if b.threads == "auto"
        else f"{b.threads} per rank, set by {base}"
    )
    if b.binding != "auto":
        return {"threads": threads, "binding": f"{b.binding}, set by {base}"}
    binding = (
        f"auto: disjoint core sets per rank, NUMA-aligned over {len(nodes_with_cpus) or 1} node(s)"
        + (", SMT siblings together" if facts.cpu.smt else "")
        + (f", near each rank's GPU ({len(facts.gpus)} GPUs)" if facts.gpus else "")
    )
    return {"threads": threads, "binding": binding}


def _memory_policy(b: Profile, facts: Facts, base: str) -> Tuple[str, str]:
    """Whether there is memory to bind is a fact of the host that runs the job, not of this one: a `bind` base
    becomes `auto` (the planner binds on a multi-node host, leaves a one-node host alone), with today's choice."""
    n = len(facts.numa.nodes)
    nodes_txt = f"{n} NUMA node{'' if n == 1 else 's'}"
    if b.memory_policy in ("bind", "auto"):
        today = "bind, memory on the rank's node" if n > 1 else "none, nothing to bind"
        return "auto", f"auto: decided per run; here {nodes_txt} -> {today}"
    return b.memory_policy, f"{b.memory_policy}, set by {base} ({nodes_txt} here)"


def _device_reasons(b: Profile, facts: Facts, base: str) -> Dict[str, str]:
    """Why the CUDA allocator setting and the DataLoader's workers and pinned memory."""
    reasons: Dict[str, str] = {}
    cac = b.cuda_alloc_conf
    if cac and not facts.gpus:
        reasons["cuda_alloc_conf"] = f"{cac}: kept for GPU ranks (no GPU seen now)"
    elif cac:
        reasons["cuda_alloc_conf"] = f"{cac}: set by {base} for the {len(facts.gpus)} GPUs"
    dl = b.dataloader
    if dl.num_workers == "auto":
        budget = cpu_policy.thread_budget(facts.cpu)
        today_w = f"; here, one rank: {cpu_policy.dataloader_workers(budget)[0]}" if budget else ""
        reasons["dataloader.num_workers"] = (
            f"auto: 0 when a rank has <= 2 cores (workers steal compute), else min(4, cores//2){today_w}"
        )
    if dl.pin_memory == "auto":
        reasons["dataloader.pin_memory"] = "auto: " + ("on (GPUs present)" if facts.gpus else "off (no GPU)")
    return reasons


def fingerprint_note(profile: Profile, facts: Facts) -> Optional[str]:
    """One line for stderr when `profile` was generated for other hardware than the host being planned, else
    None. `env`, `profile show` and `exec --dry-run` print it."""
    if not profile.fingerprint:
        return None
    now = facts.hardware_fingerprint()
    if now == profile.fingerprint:
        return None
    host = f"the planned host {facts.hostname}" if facts.hostname else "the planned host"
    return (f"hosttune: profile {_one_line(profile.name)} ({_one_line(profile.source)}) was generated for other "
            f"hardware (fingerprint {_one_line(profile.fingerprint)}; {host} is {now}): its auto settings are "
            f"decided for the planned host, its fixed ones are used as written; regenerate with "
            f"`hosttune profile generate --force`")


def _one_line(s: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]+", " ", s)


def to_yaml(profile: Profile) -> str:
    """The profile as a self-contained YAML file: every value, and why, as a comment and under `reasons:`."""
    reasons = dict(profile.reasons)
    lines = [
        f"# hosttune profile {_one_line(profile.name)}",
        f"# {_one_line(profile.summary)}",
        "# Policy for `hosttune exec` / `hosttune env`; host numbers (cores, nodes, paths) are decided per run.",
        "",
    ]

    def put(key: str, value: Any, why_key: Optional[str] = None, indent: str = "") -> None:
        dumped = yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, width=10**6)
        first, *rest = dumped.rstrip("\n").split("\n")
        why = reasons.get(why_key or key)
        lines.append(f"{indent}{first}" + (f"  # {_one_line(why)}" if why and not rest else ""))
        lines.extend(indent + r for r in rest)

    opened: List[str] = []
    for s in SETTINGS:
        if s.name == "base":
            continue
        if s.kind == "reasons":
            if reasons:
                lines.append("reasons:")
                for k in sorted(reasons):
                    put(k, reasons[k], "-", "  ")
            continue
        if s.kind == "envmap":
            mapping = getattr(profile, s.name)
            if mapping:
                lines.append(f"{s.name}:")
                for k, v in mapping.items():
                    put(k, str(v), f"{s.name}.{k}", "  ")
            continue
        value = value_of(profile, s.name)
        if value is None:  # optional settings that are unset are left out
            continue
        if s.section:
            if s.section not in opened:
                opened.append(s.section)
                lines.append(f"{s.section}:")
            put(s.key, value, s.name, "  ")
        else:
            put(s.name, value)
    return "\n".join(lines) + "\n"


def write(profile: Profile, path: Path, force: bool) -> Path:
    """Write the profile atomically (fsio.atomic_write); refuse to overwrite unforced. New parent directories get
    mode 755 whatever the umask."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not force:
        raise UserError(f"{path} exists; use --force to replace it")
    if path.is_dir():
        raise UserError(f"{path} is a directory")
    text = to_yaml(profile)
    parse_text(text, path)  # never write what we could not read back
    try:
        fsio.makedirs_private(path.parent, 0o755)
        # exclusive: link(2) never replaces, so a file that appeared since the check above is not clobbered
        fsio.atomic_write(path, text, 0o644, exclusive=not force)
    except FileExistsError:
        raise UserError(f"{path} exists; use --force to replace it") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path
