"""The monitor's settings: built-in defaults < /etc/hosttune/monitor.yaml (or --config) < command-line flags.

`MonitorConfig` and `Thresholds` validate themselves; `load()` turns every problem in the YAML into a one-line
UserError that names the file and the key. The file is read with `fsio.read_user_text` (regular, bounded, UTF-8)
and parsed with `yamlio` (no expanding aliases, no deep nesting), and every value quoted back goes through
`yamlio.brief`, so no message grows with the input.
"""

import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, List, Optional

from hosttune.errors import UserError
from hosttune.policy import dirs, gpu_health
from hosttune.policy.gpu_health import TempLimits

DEFAULT_CONFIG = "/etc/hosttune/monitor.yaml"  # the packaged place; default_config() follows $HOSTTUNE_ETC_DIR
CONFIG_NAME = "monitor.yaml"
MAX_CONFIG_BYTES = 1 << 20  # a monitor.yaml is a dozen lines


@dataclass(frozen=True)
class Thresholds:
    """Event thresholds. A condition is logged once when it starts (a reading AT the line is over it) and once when
    it clears; it clears only after the value falls `*_hysteresis_*` below the line, so a reading that hovers at
    the line is not a flood.

    GPU temperature lines are decided by `hosttune.policy.gpu_health`, the same function doctor uses: per GPU,
    critical from its own NVML slowdown threshold and warning 10 C below it; a GPU that does not report one gets the
    table's 75 C warning / 85 C critical. `gpu_temp_warn_c` / `gpu_temp_crit_c` (monitor.yaml `thresholds:`) are
    optional overrides for every GPU: unset (the default, or `null`) leaves the per-GPU lines; setting only the
    critical line puts the warning 10 C below it; setting only the warning line keeps each GPU's critical line.
    """

    gpu_temp_warn_c: Optional[float] = None  # None: per GPU (its slowdown threshold - 10 C), else the table's 75 C
    gpu_temp_crit_c: Optional[float] = None  # None: per GPU (its NVML slowdown threshold), else the table's 85 C
    gpu_temp_hysteresis_c: float = 5.0
    memory_pct: float = 90.0  # host RAM and GPU memory
    memory_hysteresis_pct: float = 5.0

    def __post_init__(self) -> None:
        warn, crit = self.gpu_temp_warn_c, self.gpu_temp_crit_c
        if warn is not None and crit is not None and not warn < crit:
            raise ValueError("gpu_temp_warn_c must be below gpu_temp_crit_c")
        if self.gpu_temp_hysteresis_c < 0 or self.memory_hysteresis_pct < 0:
            raise ValueError("hysteresis must be >= 0")
        if not 0 < self.memory_pct <= 100:
            raise ValueError("memory_pct must be in (0, 100]")

    def gpu_temp_limits(self, slowdown_c: Optional[float]) -> TempLimits:
        """One GPU's warning/critical lines: these overrides, else its slowdown threshold, else the table."""
        return gpu_health.temperature_limits(slowdown_c, self.gpu_temp_warn_c, self.gpu_temp_crit_c)


@dataclass(frozen=True)
class MonitorConfig:
    interval: float = 5.0
    log_dir: str = field(default_factory=dirs.log_dir)  # /var/log/hosttune, or $HOSTTUNE_LOG_DIR
    # "auto": node_exporter's textfile directory (/var/lib/prometheus/node-exporter) when it exists, else
    # /var/lib/hosttune/textfile (textfile.resolve_textfile_dir); "" = no Prometheus textfile
    textfile_dir: str = "auto"
    max_bytes: int = 64 * 1024 * 1024  # rotate monitor.jsonl at this size ...
    backups: int = 8  # ... keeping monitor.jsonl.1 .. .8
    disks: List[str] = field(default_factory=lambda: ["/"])
    thresholds: Thresholds = field(default_factory=Thresholds)
    # `hosttune tune verify` every this many seconds (0: never); drift is a journal warning, once per drift
    tune_check_interval: float = 300.0
    # on a new drift, ask the root oneshot hosttune-tune.service to re-apply (through hosttune-tune-reapply.path)
    reapply: bool = False

    def __post_init__(self) -> None:
        if not 0.05 <= self.interval <= 86400:
            raise ValueError("interval must be between 0.05 and 86400 seconds")
        if self.tune_check_interval != 0 and not 1 <= self.tune_check_interval <= 86400:
            raise ValueError("tune_check_interval must be 0 (off) or between 1 and 86400 seconds")
        if self.reapply and not self.tune_check_interval:
            raise ValueError("reapply: true needs tune checks (tune_check_interval > 0): drift is never seen at 0")
        if self.max_bytes < 4096:
            raise ValueError("max_bytes must be at least 4096")
        if not 0 <= self.backups <= 1000:
            raise ValueError("backups must be between 0 and 1000")
        if not self.log_dir:
            raise ValueError("log_dir must not be empty")
        for key in ("log_dir", "textfile_dir"):
            _check_path(key, getattr(self, key))
        for d in self.disks:
            if not isinstance(d, str) or not d.startswith("/"):
                raise ValueError(f"disks: {brief(d)} is not an absolute path")
            _check_path("disks", d)


def _check_path(key: str, value: str) -> None:
    # A NUL would reach os.open() as a ValueError traceback; no real path holds one (or any control character).
    if any(ord(ch) < 32 or ch == "\x7f" for ch in value):
        raise ValueError(f"{key}: {brief(value)} holds a control character (NUL, newline, ...); not a usable path")


def brief(value: Any) -> str:
    """yamlio.brief, imported only when a message needs it: yaml is the slowest import on the daemon's way to
    installing its signal handlers."""
    from hosttune.yamlio import brief as _brief

    return _brief(value)


_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(value: Any) -> int:
    """An int, or "64M" / "64MiB" / "1G" (binary units)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {brief(value)}")
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {brief(value)} (use bytes or 64M, 1G)")
    return int(m.group(1)) * _SCALE[(m.group(2) or "")[:1].upper()]


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key}: expected a number, got {brief(value)}")
    return float(value)


# thresholds that may be `null` in the YAML: unset, the per-GPU lines of the temperature policy
_UNSET_OK = ("gpu_temp_warn_c", "gpu_temp_crit_c")


def from_mapping(data: Dict[str, Any]) -> MonitorConfig:
    """Build a config from the YAML mapping; unknown keys are errors (a typo must not be silently ignored)."""
    known = {f.name for f in fields(MonitorConfig)}
    kw: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ValueError(f"unknown key {brief(key)} (known: {', '.join(sorted(known))})")
        if key == "thresholds":
            if not isinstance(value, dict):
                raise ValueError("thresholds: expected a mapping")
            tknown = {f.name for f in fields(Thresholds)}
            for tkey in value:
                if tkey not in tknown:
                    shown = brief(tkey)[1:-1] if isinstance(tkey, str) else brief(tkey)
                    raise ValueError(f"unknown key thresholds.{shown} (known: {', '.join(sorted(tknown))})")
            tkw: Dict[str, Any] = {k: None if v is None and k in _UNSET_OK else _number(v, f"thresholds.{k}")
                                   for k, v in value.items()}
            kw[key] = Thresholds(**tkw)
        elif key in ("interval", "tune_check_interval"):
            kw[key] = _number(value, key)
        elif key == "reapply":
            if not isinstance(value, bool):
                raise ValueError(f"reapply: expected true or false, got {brief(value)}")
            kw[key] = value
        elif key in ("max_bytes",):
            kw[key] = parse_size(value)
        elif key == "backups":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"backups: expected an integer, got {brief(value)}")
            kw[key] = value
        elif key in ("log_dir", "textfile_dir"):
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise ValueError(f"{key}: expected a path, got {brief(value)}")
            kw[key] = value
        elif key == "disks":
            if not isinstance(value, list):
                raise ValueError("disks: expected a list of paths")
            kw[key] = value
    return MonitorConfig(**kw)


def default_config() -> str:
    """monitor.yaml in hosttune's configuration directory (policy/dirs.etc_dir: /etc/hosttune)."""
    return os.path.join(dirs.etc_dir(), CONFIG_NAME)


def load(path: Optional[str], overrides: Optional[Dict[str, Any]] = None) -> MonitorConfig:
    """The config from `path` (or default_config() when it exists) with command-line overrides."""
    data: Dict[str, Any] = {}
    source = path
    if source is None and os.path.exists(default_config()):
        source = default_config()
    if source is not None:
        from hosttune import fsio, yamlio

        # `--config /dev/null`: the built-in defaults (a device is otherwise refused: it could block or never end)
        text = "" if source == os.devnull else fsio.read_user_text(source, "monitor config", MAX_CONFIG_BYTES)
        data, _node = yamlio.load_mapping(text, source, "monitor config")
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
