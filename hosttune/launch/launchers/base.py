"""What every launcher module shares: `KnownLauncher` (what a launcher's command line says about the ranks it
starts on this node) and a small argparse/getopt-like scanner over its options."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from hosttune.errors import UserError
from hosttune.launch.torchrun import MAX_NPROC_PER_NODE


@dataclass(frozen=True)
class KnownLauncher:
    """What a launcher's command line says about the ranks it starts on this node."""

    name: str  # torch.distributed.launch | accelerate launch | deepspeed | mpirun | srun
    local_ranks: Optional[int]  # ranks started on this node, when the command line (and config) tell
    bound_by: Optional[str]  # who binds the ranks instead of hosttune ("mpirun --bind-to core"); None: hosttune
    threads: Optional[int]  # the per-rank thread count the user gave the launcher (hosttune keeps it)
    argv: Tuple[str, ...]  # the command to run (mpirun: with `--bind-to none` when hosttune binds instead)
    notes: Tuple[str, ...] = field(default=())  # one line each, for --dry-run
    rank_arg: Optional[str] = None  # the argument each rank also gets its local rank as (`--local-rank`)
    endpoint: Any = None  # plan.network.Endpoint: where the job's nodes meet, when the command line tells

    @property
    def binds(self) -> bool:
        """The launcher binds its ranks itself: hosttune binds none of them (plan.resolve bound_by=)."""
        return self.bound_by is not None

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "local_ranks": self.local_ranks, "bound_by": self.bound_by,
                "threads": self.threads, "argv": list(self.argv), "notes": list(self.notes),
                "rank_arg": self.rank_arg}


# ---- a small argparse/getopt-like scanner ---------------------------------------------------------------------

@dataclass
class _Scan:
    values: Dict[str, List[str]]  # dest -> every value given, in order (the last one wins, as in argparse)
    flags: Set[str]
    program: int  # index of the program / training script (len(argv) when there is none)


def _scan(tool: str, argv: Sequence[str], start: int, table: Mapping[str, Tuple[str, int]], *,
          unknown: str, attached_short: bool = False, abbrev: bool = False,
          canon: Any = None) -> _Scan:
    """Options from argv[start:] up to the program. `table`: option -> (dest, number of values: 0, 1 or 2).
    `unknown`: what an option not in the table is: "error", "flag" or "value"."""
    values: Dict[str, List[str]] = {}
    flags: Set[str] = set()
    i = start
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return _Scan(values, flags, i + 1)
        if not tok.startswith("-") or tok == "-":
            break
        name, eq, inline = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        if canon is not None:
            name = canon(name)
        spec = table.get(name)
        if spec is None and attached_short and not tok.startswith("--") and len(tok) > 2:
            short = table.get(tok[:2])
            if short is not None and short[1] == 1:  # -n2, -r3
                spec, eq, inline = short, "=", tok[2:]
        if spec is None and abbrev and name.startswith("--"):
            hits = {table[full] for full in table if full.startswith(name)}
            if len(hits) == 1:
                spec = hits.pop()
            elif len(hits) > 1:
                raise UserError(f"{tool}: ambiguous option {name}")
        if spec is None:
            if unknown == "error":
                raise UserError(f"{tool}: unknown option {name}")
            spec = (name.lstrip("-"), 1 if eq or unknown == "value" else 0)
        dest, nvalues = spec
        if nvalues == 0:
            if eq:
                raise UserError(f"{tool}: option {name} takes no value")
            flags.add(dest)
            i += 1
            continue
        got: List[str] = [inline] if eq else []
        j = i + 1
        while len(got) < nvalues:
            if j >= len(argv):
                raise UserError(f"{tool}: option {name} needs {'a value' if nvalues == 1 else f'{nvalues} values'}")
            got.append(argv[j])
            j += 1
        values.setdefault(dest, []).append(" ".join(got) if nvalues == 1 else "\0".join(got))
        i = j
    return _Scan(values, flags, i)


def _last(scan: _Scan, dest: str) -> Optional[str]:
    got = scan.values.get(dest)
    return got[-1] if got else None


def _count(tool: str, option: str, raw: Any, *, low: int = 1, high: int = MAX_NPROC_PER_NODE) -> int:
    """A rank/thread/node count: a whole number in [low, high], else one UserError line."""
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise UserError(f"{tool}: {option} must be a whole number, got {str(raw)[:40]!r}") from None
    if n < low:
        raise UserError(f"{tool}: {option} must be at least {low}, got {n}")
    if n > high:
        raise UserError(f"{tool}: {option}={n} is more than the {high} local ranks hosttune plans for")
    return n

