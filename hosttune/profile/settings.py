"""The profile settings table: one row per key (type, allowed values, default, doc) driving validation, YAML, show.

Adding a setting is one row here, one field on `Profile` (typed access for the planner) and its use in
`hosttune.plan`; `load` validates it, `to_yaml` writes it and `profile show` lists it from this table.
"""

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from hosttune.errors import UserError
from hosttune.yamlio import brief

GENERATED = "<generated>"
ALLOCATORS = ("auto", "jemalloc", "tcmalloc", "system")
BINDINGS = ("auto", "numa", "cores", "none")
# auto: the planner binds memory to the rank's node when the host has more than one NUMA node (decided per run)
MEMORY_POLICIES = ("auto", "bind", "preferred", "none")
DEVICES = ("auto", "cpu")
OPENMP = ("auto", "gnu", "intel")
# jemalloc settings measured on this kind of host (perf-notes.md): x1.14-1.20 together with pinning.
THROUGHPUT_MALLOC_CONF = (
    "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1"
)
THP_MODES = ("madvise", "never", "always")
THP_DEFRAG_MODES = ("madvise", "defer+madvise", "defer", "never", "always")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `tune:` text values end up in kernel attributes, limits.d, a systemd mount drop-in and tuned.conf (as root): each
# has a strict pattern (matched whole; no newline, comma, space or shell/INI syntax can pass). What the pattern allows
# is what the file or attribute accepts, not more.
GOVERNOR_PATTERN = r"[a-z][a-z0-9_]{0,14}"  # cpufreq governor names (CPUFREQ_NAME_LEN 16 with the NUL)
EPP_PATTERN = r"[a-z][a-z_]{0,31}"  # energy_performance_preference names (balance_performance ...)
MEMLOCK_PATTERN = r"unlimited|0|[1-9][0-9]{0,17}"  # limits.conf(5): KiB or unlimited
SHM_SIZE_PATTERN = r"(?:100|[1-9][0-9]?)%|[1-9][0-9]{0,15}[kKmMgGtT]?"  # tmpfs(5) size=: % of RAM or bytes[kmgt]
# Preload/audit libraries run code in every rank (as root, too): only hosttune's checked allocator path may set them.
_MANAGED_ENV = ("LD_PRELOAD", "LD_AUDIT")


@dataclass(frozen=True)
class Setting:
    """One profile key. `name` is dotted for a key inside a section (`dataloader.num_workers`)."""

    name: str
    kind: str  # text | path | choice | count | bool | tristate | duration | envmap | reasons | meta
    default: Any = None
    choices: Tuple[str, ...] = ()
    low: int = 0  # count: the smallest number allowed
    high: int = 0  # count: the largest number allowed
    doc: str = ""
    show: bool = True  # listed by `profile show` and written by `to_yaml` (meta keys are handled by their owners)
    pattern: str = ""  # text: a regular expression the whole value must match (`hint` says it in words)
    hint: str = ""

    @property
    def section(self) -> Optional[str]:
        return self.name.split(".", 1)[0] if "." in self.name else None

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[-1]


# The order of this table is the order of `to_yaml` and `profile show`.
SETTINGS: Tuple[Setting, ...] = (
    Setting("name", "text", None, doc="the profile's name (default: its file name)", show=False),
    Setting("summary", "text", "", doc="one line: what the profile is for", show=False),
    Setting("base", "text", None, doc="the profile this one extends (a name or a path)", show=False),
    Setting("allocator", "choice", "auto", ALLOCATORS,
            doc="malloc to preload: auto = jemalloc, else tcmalloc, else glibc"),
    Setting("allocator_path", "path", None, doc="a specific library for `allocator` instead of the detected one"),
    Setting("malloc_conf", "text", None, doc="MALLOC_CONF when jemalloc is preloaded"),
    Setting("threads", "count", "auto", low=1, high=4096,
            doc="OMP/MKL threads per rank: auto = the physical cores of the rank's binding, within the quota"),
    Setting("binding", "choice", "auto", BINDINGS, doc="how ranks are pinned: auto/cores = disjoint core sets, "
            "numa = whole nodes, none = not pinned"),
    Setting("memory_policy", "choice", "bind", MEMORY_POLICIES,
            doc="memory of a rank: auto = bind to its node on a multi-node host, bind, preferred, none"),
    Setting("cuda_alloc_conf", "text", None, doc="torch's allocator config (GPU ranks only), set as "
            "PYTORCH_ALLOC_CONF (torch >= 2.10) or PYTORCH_CUDA_ALLOC_CONF (older); both when the version is unknown"),
    Setting("deterministic", "bool", False, doc="CUBLAS_WORKSPACE_CONFIG, PYTHONHASHSEED=0, HOSTTUNE_DETERMINISTIC=1"),
    Setting("debug", "bool", False, doc="CUDA_LAUNCH_BLOCKING, NCCL_DEBUG, TORCH_DISTRIBUTED_DEBUG, C++ stack traces"),
    Setting("hang_timeout", "duration", "off", doc="hosttune exec --hang-timeout's default: with no output from the "
            "job for this long (600, 90s, 10m, 1h; off), every rank's stacks are saved and the job stopped (exit 124)"),
    Setting("device", "choice", "auto", DEVICES, doc="auto = GPUs when there are any; cpu = hide GPUs"),
    Setting("openmp", "choice", "auto", OPENMP, doc="auto = Intel settings only if already preloaded; gnu; intel"),
    Setting("dataloader.num_workers", "count", "auto", low=0, high=256,
            doc="DataLoader workers: auto = 0 with <= 2 cores, else min(4, cores//2)"),
    Setting("dataloader.pin_memory", "tristate", "auto", doc="auto = only with a GPU and a CUDA torch"),
    Setting("dataloader.prefetch_factor", "count", "auto", low=1, high=1024, doc="auto = 2, only with workers"),
    Setting("dataloader.persistent_workers", "tristate", "auto", doc="auto = on, only with workers"),
    Setting("tcmalloc", "envmap", None, doc="TCMALLOC_* variables when tcmalloc is preloaded"),
    # `hosttune tune apply`: the host settings it writes; the defaults are what doctor's checks expect.
    Setting("tune.thp", "choice", "madvise", THP_MODES, doc="transparent_hugepage/enabled (doctor: madvise or never)"),
    Setting("tune.thp_defrag", "choice", "madvise", THP_DEFRAG_MODES,
            doc="transparent_hugepage/defrag: madvise = direct compaction only for regions that ask for huge pages"),
    Setting("tune.numa_balancing", "bool", False, doc="kernel.numa_balancing on multi-node hosts (doctor: off)"),
    Setting("tune.swappiness", "count", 10, low=0, high=200, doc="vm.swappiness, the most allowed (doctor: <= 10)"),
    Setting("tune.governor", "text", "performance", doc="CPU frequency governor where cpufreq exists (one the driver "
            "offers in scaling_available_governors)", pattern=GOVERNOR_PATTERN,
            hint="a cpufreq governor name (lower-case letters, digits, _; at most 15)"),
    Setting("tune.epp", "text", "performance", doc="energy_performance_preference where the driver has it (one of "
            "its energy_performance_available_preferences)", pattern=EPP_PATTERN,
            hint="an energy_performance_preference name (lower-case letters and _)"),
    Setting("tune.nofile", "count", 65536, low=1024, high=1073741816,
            doc="soft open-files limit for new logins, the least allowed (hard: at least 1048576)"),
    Setting("tune.memlock", "text", "unlimited", doc="locked-memory limit for new logins: unlimited or KiB (quoted)",
            pattern=MEMLOCK_PATTERN, hint="'unlimited' or a number of KiB, quoted"),
    Setting("tune.shm_size", "text", "50%", doc="/dev/shm size: a tmpfs size= (50%, 16G)", pattern=SHM_SIZE_PATTERN,
            hint="a tmpfs size: 1% to 100%, or a number with an optional k, m, g or t suffix (16G)"),
    Setting("tune.persistence", "bool", True, doc="NVIDIA persistence mode through nvidia-persistenced (GPUs only)"),
    Setting("env", "envmap", None, doc="literal extra environment, applied last"),
    Setting("fingerprint", "text", None, doc="hardware fingerprint of the host it was generated for", show=False),
    Setting("reasons", "reasons", None, doc="setting: why", show=False),
)
BY_NAME: Dict[str, Setting] = {s.name: s for s in SETTINGS}
SECTIONS: Dict[str, Tuple[str, ...]] = {}
for _s in SETTINGS:
    if _s.section:
        SECTIONS[_s.section] = SECTIONS.get(_s.section, ()) + (_s.key,)
_TOP_KEYS: Tuple[str, ...] = tuple(dict.fromkeys(s.section or s.name for s in SETTINGS))
_DL_KEYS = SECTIONS["dataloader"]
_DEFAULT = {s.name: s.default for s in SETTINGS}


@dataclass(frozen=True)
class DataLoader:
    """DataLoader defaults exported to the engine as HOSTTUNE_*; "auto" is decided per rank by the plan."""

    num_workers: Union[str, int] = _DEFAULT["dataloader.num_workers"]
    pin_memory: Union[str, bool] = _DEFAULT["dataloader.pin_memory"]
    prefetch_factor: Union[str, int] = _DEFAULT["dataloader.prefetch_factor"]
    persistent_workers: Union[str, bool] = _DEFAULT["dataloader.persistent_workers"]


_TUNE_DEFAULT = {k: _DEFAULT[f"tune.{k}"] for k in SECTIONS["tune"]}


@dataclass(frozen=True)
class Tune:
    """What `hosttune tune apply` sets on the host; a site overrides it in the profile's `tune:` section."""

    thp: str = _TUNE_DEFAULT["thp"]
    thp_defrag: str = _TUNE_DEFAULT["thp_defrag"]
    numa_balancing: bool = _TUNE_DEFAULT["numa_balancing"]
    swappiness: Union[str, int] = _TUNE_DEFAULT["swappiness"]
    governor: str = _TUNE_DEFAULT["governor"]
    epp: str = _TUNE_DEFAULT["epp"]
    nofile: Union[str, int] = _TUNE_DEFAULT["nofile"]
    memlock: str = _TUNE_DEFAULT["memlock"]
    shm_size: str = _TUNE_DEFAULT["shm_size"]
    persistence: bool = _TUNE_DEFAULT["persistence"]

    def __post_init__(self) -> None:
        # However a Tune is made (a profile, the launcher's handoff, the boot re-apply's saved values, the API), its
        # values are what the table allows: they reach kernel attributes and files under /etc as root.
        check_tune(self)


def check_tune(tune: "Tune") -> None:
    """Every `tune:` value of `tune` against the table; one UserError naming the key (`tune.KEY: ...`)."""
    def bad(key: str, msg: str, sect: Optional[str]) -> UserError:
        return UserError(f"{sect}.{key}: {msg}" if sect else f"{key}: {msg}")

    for f in dataclasses.fields(tune):
        _check(BY_NAME[f"tune.{f.name}"], getattr(tune, f.name), bad)


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    source: str  # file path or "<generated>"
    allocator: str = _DEFAULT["allocator"]
    threads: Union[str, int] = _DEFAULT["threads"]
    binding: str = _DEFAULT["binding"]
    memory_policy: str = _DEFAULT["memory_policy"]
    env: Mapping[str, str] = field(default_factory=dict)
    fingerprint: Optional[str] = None  # Facts.hardware_fingerprint() of the host it was generated for
    provenance: Mapping[str, str] = field(default_factory=dict)  # setting -> where it came from / why
    malloc_conf: Optional[str] = _DEFAULT["malloc_conf"]
    tcmalloc: Mapping[str, str] = field(default_factory=dict)
    allocator_path: Optional[str] = _DEFAULT["allocator_path"]
    cuda_alloc_conf: Optional[str] = _DEFAULT["cuda_alloc_conf"]
    dataloader: DataLoader = field(default_factory=DataLoader)
    deterministic: bool = _DEFAULT["deterministic"]
    debug: bool = _DEFAULT["debug"]
    hang_timeout: Union[str, int, float, bool, None] = _DEFAULT["hang_timeout"]
    device: str = _DEFAULT["device"]
    openmp: str = _DEFAULT["openmp"]
    chain: Tuple[str, ...] = ()  # the files this profile was merged from, base first
    tune: Tune = field(default_factory=Tune)
    reasons: Mapping[str, str] = field(default_factory=dict)  # setting -> why (the `reasons:` of the files)

    def to_dict(self) -> Dict[str, Any]:
        out = dataclasses.asdict(self)
        out["env"] = dict(self.env)
        out["tcmalloc"] = dict(self.tcmalloc)
        out["provenance"] = dict(self.provenance)
        out["chain"] = list(self.chain)
        out["reasons"] = dict(self.reasons)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Profile":
        """A profile back from `to_dict()` (the launcher's handoff); unknown keys are ignored."""
        kwargs: Dict[str, Any] = {k: v for k, v in data.items() if k in PROFILE_FIELDS}
        if isinstance(kwargs.get("dataloader"), Mapping):
            kwargs["dataloader"] = DataLoader(**{k: v for k, v in kwargs["dataloader"].items()
                                                 if k in SECTIONS["dataloader"]})
        if isinstance(kwargs.get("tune"), Mapping):
            kwargs["tune"] = Tune(**{k: v for k, v in kwargs["tune"].items() if k in SECTIONS["tune"]})
        for key in ("env", "tcmalloc", "provenance", "reasons"):
            if key in kwargs:
                kwargs[key] = dict(kwargs[key] or {})
        if "chain" in kwargs:
            kwargs["chain"] = tuple(kwargs["chain"] or ())
        return cls(**kwargs)


PROFILE_FIELDS = {f.name for f in dataclasses.fields(Profile)}


def value_of(profile: Profile, name: str) -> Any:
    """The value of setting `name` (dotted for a section key) in `profile`."""
    s = BY_NAME[name]
    holder = getattr(profile, s.section) if s.section else profile
    return getattr(holder, s.key)


def shown() -> List[Setting]:
    """The settings `profile show` lists and `to_yaml` writes, in order."""
    return [s for s in SETTINGS if s.show]


# ---------------------------------------------------------------------------------------------------------------
# Validation: every problem is one UserError naming the file, line and key.

Bad = Callable[[str, str, Optional[str]], UserError]  # (key, message, section) -> error
Unknown = Callable[[Any, Tuple[str, ...], Optional[str]], UserError]  # (key, known keys, section) -> error


def duration_s(value: Any) -> float:
    """A duration -> seconds: a positive number of seconds (600, 1.5) or text with an optional s, m or h (`90s`,
    `10m`, `1h`), the grammar of autotune's --budget; anything else (0, negative, inf, nan, a bool) is ValueError.
    The one reader of durations that a profile or a launcher option gives (`hang_timeout`, `exec --hang-timeout`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(value)
    t = str(value).strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(t[-1:]) if t else None
    seconds = float(t[:-1] if mult else t) * (mult or 1)
    if not (0 < seconds < float("inf")):  # nan fails both; inf never ends
        raise ValueError(value)
    return seconds


def duration_or_off(value: Any) -> Optional[float]:
    """A duration setting's seconds, or None for `off` (YAML reads a bare `off` as false; unset is off too)."""
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() == "off"):
        return None
    return duration_s(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check(s: Setting, v: Any, bad: Bad) -> None:
    key, sect = s.key, s.section
    if s.kind in ("text", "path"):
        if v is not None and not isinstance(v, str):
            raise bad(key, f"must be a string, not {type(v).__name__}", sect)
        if isinstance(v, str) and "\x00" in v:
            raise bad(key, "must not contain a NUL byte", sect)
        if s.kind == "path" and v is not None and not v.startswith("/"):
            raise bad(key, "must be an absolute path", sect)
        if s.pattern and v is not None and not re.fullmatch(s.pattern, v):
            raise bad(key, f"must be {s.hint or 'of the form ' + s.pattern}, not {brief(v)}", sect)
    elif s.kind == "choice":
        if v is False and s.name == "memory_policy":  # YAML 1.1 reads a bare `no` as false
            v = "none"
        if not isinstance(v, str) or v not in s.choices:
            raise bad(key, f"must be one of {', '.join(s.choices)}, not {brief(v)}", sect)
    elif s.kind == "count":
        if not (v == "auto" or (_is_int(v) and s.low <= v <= s.high)):
            raise bad(key, f"must be 'auto' or a number from {s.low} to {s.high}, not {brief(v)}", sect)
    elif s.kind == "bool":
        if not isinstance(v, bool):
            raise bad(key, f"must be true or false, not {brief(v)}", sect)
    elif s.kind == "tristate":
        if not (v == "auto" or isinstance(v, bool)):
            raise bad(key, f"must be auto, true or false, not {brief(v)}", sect)
    elif s.kind == "duration":
        try:
            duration_or_off(v)
        except ValueError:
            raise bad(key, f"must be a duration such as 600, 90s, 10m or 1h, or off, not {brief(v)}", sect) from None
    elif s.kind == "envmap":
        _check_envmap(s.name, v, bad)
    elif s.kind == "reasons":
        if v is not None and (not isinstance(v, dict) or not all(
                isinstance(k, str) and isinstance(t, str) for k, t in v.items())):
            raise bad(key, "must be a mapping of setting: text", sect)


def _check_envmap(sect: str, d: Any, bad: Bad) -> None:
    if d is None:
        return
    if not isinstance(d, dict):
        raise bad(sect, f"must be a mapping of NAME: value, not {type(d).__name__}", None)
    for name, value in d.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise bad(str(name), "not a valid environment variable name", sect)
        if sect == "env" and name in _MANAGED_ENV:
            raise bad(name, f"{name} is managed by hosttune (it checks every library it preloads); "
                      "set allocator/allocator_path instead", sect)
        if sect == "tcmalloc" and not name.startswith("TCMALLOC_"):
            raise bad(name, "tcmalloc settings are TCMALLOC_* variables", sect)
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
            raise bad(name, f"value must be a string or number (quote it), not {brief(value)}", sect)
        if isinstance(value, str) and "\x00" in value:
            raise bad(name, "value must not contain a NUL byte", sect)


def validate(data: Mapping[Any, Any], bad: Bad, unknown: Unknown) -> None:
    """Check one file's parsed mapping against the table."""
    for key in data:
        if not isinstance(key, str) or key not in _TOP_KEYS:
            raise unknown(key, _TOP_KEYS, None)
    for top in _TOP_KEYS:
        if top not in data:
            continue
        if top in SECTIONS:
            sub = data[top]
            if sub is None:
                continue
            if not isinstance(sub, dict):
                raise bad(top, f"must be a mapping, not {type(sub).__name__}", None)
            for key, v in sub.items():
                if not isinstance(key, str) or key not in SECTIONS[top]:
                    raise unknown(key, SECTIONS[top], top)
                _check(BY_NAME[f"{top}.{key}"], v, bad)
        else:
            _check(BY_NAME[top], data[top], bad)
