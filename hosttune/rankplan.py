"""The wire contract between the launcher and its ranks: `RankPlan` (one rank's cpus, memory policy, env and why),
its one JSON shape (`to_dict`/`from_dict`), and the rank command's placeholder for torchrun's own interpreter.

Dataclasses only (and `term.printable`): the planner (hosttune/plan) re-exports these names, and every rank imports
this module for real to read its handed plan, so it imports no planner, profile, YAML, detector or click
(the "rank side" contract in .importlinter).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from hosttune.term import printable

# In a rank command: "the interpreter torchrun itself runs on", resolved by the shim from its parent process when
# the launcher cannot read it from torchrun's shebang (pyenv shims, wrapper scripts).
TORCHRUN_PYTHON = "{torchrun-python}"


@dataclass(frozen=True)
class RankPlan:
    local_rank: int
    local_world_size: int
    cpus: Tuple[int, ...]  # () = do not bind
    mems: Tuple[int, ...]  # () = no memory policy
    mem_policy: str  # bind | preferred | none
    env: Mapping[str, str]  # the full set of variables this rank gets (common + per rank)
    gpu: Optional[str] = None  # pci bus id of the rank's GPU
    reasons: Tuple[str, ...] = ()  # human-readable why for each decision
    threads: Optional[int] = None  # OMP_NUM_THREADS chosen (None: left unset)
    cuda_device: Optional[int] = None  # the torch device ordinal of `gpu` (cuda:N) under CUDA_DEVICE_ORDER=PCI_BUS_ID
    common: Mapping[str, str] = field(default_factory=dict)  # the part of env identical for every rank
    # The user wins (see `settle`): variable -> the profile's value NOT applied because the caller had already set
    # the variable (env holds the caller's value); and variable -> the caller's value that --override replaced.
    kept: Mapping[str, str] = field(default_factory=dict)
    overridden: Mapping[str, str] = field(default_factory=dict)
    bound_by: Optional[str] = None  # who binds this rank instead of hosttune (e.g. "torchrun --numa-binding=node")

    def kept_lines(self) -> List[str]:
        """One line per variable the caller's own setting kept, as `exec` prints them once on stderr."""
        return [kept_line(k, self.env.get(k, ""), v) for k, v in sorted(self.kept.items())]

    def to_dict(self) -> Dict[str, Any]:
        """The one JSON shape of a plan (`env --json`, `exec --dry-run --json`, the launcher's handoff). `common`
        is left out: it is the node's view, carried once by the launcher, not per rank."""
        return {
            "local_rank": self.local_rank,
            "local_world_size": self.local_world_size,
            "cpus": list(self.cpus),
            "mems": list(self.mems),
            "mem_policy": self.mem_policy,
            "threads": self.threads,
            "gpu": self.gpu,
            "cuda_device": self.cuda_device,
            "env": dict(self.env),
            "reasons": list(self.reasons),
            "kept": [{"name": k, "value": self.env.get(k), "profile": v} for k, v in sorted(self.kept.items())],
            "overridden": [{"name": k, "yours": v, "value": self.env.get(k)}
                           for k, v in sorted(self.overridden.items())],
            "bound_by": self.bound_by,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RankPlan":
        """A plan back from `to_dict()` (`common` comes back empty); a missing or mistyped field is a ValueError."""
        try:
            return cls(
                local_rank=int(data["local_rank"]),
                local_world_size=int(data["local_world_size"]),
                cpus=tuple(int(c) for c in data["cpus"]),
                mems=tuple(int(m) for m in data["mems"]),
                mem_policy=str(data["mem_policy"]),
                env={str(k): str(v) for k, v in dict(data["env"]).items()},
                gpu=None if data.get("gpu") is None else str(data["gpu"]),
                reasons=tuple(str(r) for r in data.get("reasons") or ()),
                threads=None if data.get("threads") is None else int(data["threads"]),
                cuda_device=None if data.get("cuda_device") is None else int(data["cuda_device"]),
                kept={str(k["name"]): str(k["profile"]) for k in data.get("kept") or ()},
                overridden={str(k["name"]): str(k["yours"]) for k in data.get("overridden") or ()},
                bound_by=None if data.get("bound_by") is None else str(data["bound_by"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a plan: {exc}") from None


def _show(value: str, limit: int = 80) -> str:
    text = printable(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def kept_line(name: str, yours: str, profile_value: str) -> str:
    """The reason line for a variable the caller's own value kept (dry run, `env`, and once on stderr at run)."""
    return (f"{name}={_show(yours)} kept: set by you (profile: {_show(profile_value) or repr('')}; "
            f"--override to use the profile)")

