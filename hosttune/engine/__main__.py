"""`python -m hosttune.engine --preset NAME | --config FILE [--set key=value]...`: one rank of the engine.
`python -m hosttune.engine --export DIR --run-dir RUN`: the run's last checkpoint as torch.export/ONNX files.

Run it alone, or under torchrun (`hosttune train --nproc N ...` does that through `hosttune exec`). The arguments
are parsed and the config validated before torch is imported, so a typo costs milliseconds, not seconds.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, NoReturn, Optional

from .config import PRESETS, ConfigError, load_config

PROG = "hosttune.engine"


class ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse would print the usage block too)
        raise ArgError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=f"python -m {PROG}", description="Train a bundled preset or a config file on this rank.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=sorted(PRESETS), help="a bundled preset")
    src.add_argument("--config", metavar="FILE", help="YAML or JSON settings (may name a `preset:` to start from)")
    src.add_argument("--export", metavar="DIR", help="write the --run-dir's last checkpoint as DIR/model.pt2 "
                     "(torch.export) and DIR/model.onnx (with onnxscript), checked against it on validation samples")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override one setting (repeatable), e.g. --set steps=100 --set amp=off")
    p.add_argument("--run-dir", metavar="DIR", help="where metrics.jsonl, checkpoints and traces go "
                   "(default runs/<preset>-<time>)")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in the run dir")
    p.add_argument("--profile-steps", metavar="WAIT,WARMUP,ACTIVE",
                   help="run torch.profiler on these steps and write a Chrome trace into the run dir")
    return p


def check_args(argv: List[str]) -> Optional[str]:
    """The error `main(argv)` would stop with before training, or None: lets `hosttune train` fail fast,
    before torchrun starts N interpreters that would all print it."""
    try:
        args = parser().parse_args(argv)
    except ArgError as exc:
        return str(exc)
    if args.export is not None:  # `hosttune train` would run it on every rank at once
        return (_export_usage(args) or "--export is not training: run it as one process, "
                "python -m hosttune.engine --export DIR --run-dir RUN")
    try:
        load_config(args.preset, args.config, args.sets, _overrides(args))
    except ConfigError as exc:
        return str(exc)
    return None


def _export_usage(args: argparse.Namespace) -> Optional[str]:
    if not args.run_dir:
        return "--export needs --run-dir RUN (the run whose last checkpoint to export)"
    if args.sets or args.resume or args.profile_steps:
        return "--export takes only --run-dir: the model's settings come from the checkpoint"
    return None


def _overrides(args: argparse.Namespace) -> Dict[str, Any]:
    overrides: Dict[str, Any] = {}
    if args.run_dir:
        overrides["run_dir"] = args.run_dir
    if args.resume:
        overrides["resume"] = True
    if args.profile_steps:
        overrides["profile_steps"] = args.profile_steps
    return overrides


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.export is not None:
            problem = _export_usage(args)
            if problem:
                raise ArgError(problem)
            from .export import main as export_main  # imports torch

            return export_main(args.run_dir, args.export)
        cfg = load_config(args.preset, args.config, args.sets, _overrides(args))
    except (ArgError, ConfigError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2

    import torch  # only now: the config is valid

    from .errors import EngineError
    from .oom import oom_report
    from .task import build_preset_task
    from .train import run

    try:
        run(cfg, build_preset_task(cfg))
    except EngineError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except torch.cuda.OutOfMemoryError as exc:
        device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
        print(oom_report(exc, cfg, device or torch.device("cpu")), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
