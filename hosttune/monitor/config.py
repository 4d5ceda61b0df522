"""The monitor's settings: built-in defaults < /etc/hosttune/monitor.yaml (or --config) < command-line flags.

`MonitorConfig` and `Thresholds` validate themselves; `load()` turns every problem in the YAML into a one-line
UserError that names the file and the key.
"""

import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, List, Optional

from hosttune.errors import UserError

DEFAULT_CONFIG = "/etc/hosttune/monitor.yaml"


@dataclass(frozen=True)
class Thresholds:
    """Event thresholds. A condition is logged once when it starts and once when it clears; it clears only after
    the value falls `*_hysteresis_*` below the threshold, so a reading that hovers at the line is not a flood."""

    gpu_temp_warn_c: float = 75.0  # datacenter GPUs run 65-75 C under load; above that is worth a line
    gpu_temp_crit_c: float = 85.0  # where most parts start thermal slowdown
    gpu_temp_hysteresis_c: float = 5.0
    memory_pct: float = 90.0  # host RAM and GPU memory
    memory_hysteresis_pct: float = 5.0

    def __post_init__(self) -> None:
        if not self.gpu_temp_warn_c < self.gpu_temp_crit_c:
            raise ValueError("gpu_temp_warn_c must be below gpu_temp_crit_c")
        if self.gpu_temp_hysteresis_c < 0 or self.memory_hysteresis_pct < 0:
            raise ValueError("hysteresis must be >= 0")
        if not 0 < self.memory_pct <= 100:
            raise ValueError("memory_pct must be in (0, 100]")


@dataclass(frozen=True)
class MonitorConfig:
    interval: float = 5.0
    log_dir: str = "/var/log/hosttune"
    textfile_dir: str = "/run/hosttune"  # "" = no Prometheus textfile
    max_bytes: int = 64 * 1024 * 1024  # rotate monitor.jsonl at this size ...
    backups: int = 8  # ... keeping monitor.jsonl.1 .. .8
    disks: List[str] = field(default_factory=lambda: ["/"])
    thresholds: Thresholds = field(default_factory=Thresholds)

    def __post_init__(self) -> None:
        if not 0.05 <= self.interval <= 86400:
            raise ValueError("interval must be between 0.05 and 86400 seconds")
        if self.max_bytes < 4096:
            raise ValueError("max_bytes must be at least 4096")
        if not 0 <= self.backups <= 1000:
            raise ValueError("backups must be between 0 and 1000")
        if not self.log_dir:
            raise ValueError("log_dir must not be empty")
        for d in self.disks:
            if not isinstance(d, str) or not d.startswith("/"):
                raise ValueError(f"disks: {d!r} is not an absolute path")


_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(value: Any) -> int:
    """An int, or "64M" / "64MiB" / "1G" (binary units)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {value!r} (use bytes or 64M, 1G)")
    return int(m.group(1)) * _SCALE[(m.group(2) or "")[:1].upper()]


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key}: expected a number, got {value!r}")
    return float(value)


def from_mapping(data: Dict[str, Any]) -> MonitorConfig:
    """Build a config from the YAML mapping; unknown keys are errors (a typo must not be silently ignored)."""
    known = {f.name for f in fields(MonitorConfig)}
    kw: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ValueError(f"unknown key {key!r} (known: {', '.join(sorted(known))})")
        if key == "thresholds":
            if not isinstance(value, dict):
                raise ValueError("thresholds: expected a mapping")
            tknown = {f.name for f in fields(Thresholds)}
            for tkey in value:
                if tkey not in tknown:
                    raise ValueError(f"unknown key thresholds.{tkey} (known: {', '.join(sorted(tknown))})")
            kw[key] = Thresholds(**{k: _number(v, f"thresholds.{k}") for k, v in value.items()})
        elif key == "interval":
            kw[key] = _number(value, key)
        elif key in ("max_bytes",):
            kw[key] = parse_size(value)
        elif key == "backups":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"backups: expected an integer, got {value!r}")
            kw[key] = value
        elif key in ("log_dir", "textfile_dir"):
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise ValueError(f"{key}: expected a path, got {value!r}")
            kw[key] = value
        elif key == "disks":
            if not isinstance(value, list):
                raise ValueError("disks: expected a list of paths")
            kw[key] = value
    return MonitorConfig(**kw)


def load(path: Optional[str], overrides: Optional[Dict[str, Any]] = None) -> MonitorConfig:
    """The config from `path` (or /etc/hosttune/monitor.yaml when it exists) with command-line overrides."""
    data: Dict[str, Any] = {}
    source = path
    if source is None and os.path.exists(DEFAULT_CONFIG):
        source = DEFAULT_CONFIG
    if source is not None:
        import yaml  # only when there is a file to read

        try:
            with open(source) as f:
                loaded = yaml.safe_load(f)
        except OSError as exc:
            raise UserError(f"{source}: cannot read monitor config: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise UserError(f"{source}:{where} malformed YAML: {getattr(exc, 'problem', None) or exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise UserError(f"{source}: monitor config must be a mapping of keys to values")
        data = loaded
    try:
        cfg = from_mapping(data)
    except (ValueError, TypeError) as exc:
        raise UserError(f"{source}: {exc}") from None
    over = {k: v for k, v in (overrides or {}).items() if v is not None}
    if over:
        try:
            cfg = replace(cfg, **over)
        except (ValueError, TypeError) as exc:
            raise UserError(f"command line: {exc}") from None
    return cfg
