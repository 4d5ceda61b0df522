"""One rank of `hosttune train`: the script torchrun runs in the training interpreter, which may not have hosttune.

    PYTHON train_rank.py [--yaml-from DIR] ENGINE_ARGS...

The training interpreter is the user's (a venv or conda env with torch); hosttune itself may live only in the
system python's site-packages (the .deb/.rpm). This script loads the engine from the hosttune package it belongs
to (the same code `hosttune train` checked the arguments with), like the per-rank hook does, and when the
interpreter has no PyYAML it appends DIR (where hosttune's own interpreter found it) to the END of sys.path, so the
interpreter's own packages always win. Standard library only until the engine runs.
"""

import os
import sys


def _load_hosttune() -> None:
    import importlib.util

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../hosttune (this file: commands/)
    spec = importlib.util.spec_from_file_location("hosttune", os.path.join(pkg, "__init__.py"),
                                                  submodule_search_locations=[pkg])
    if spec is None or spec.loader is None:
        raise SystemExit(f"hosttune train: no hosttune package at {pkg}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["hosttune"] = module
    spec.loader.exec_module(module)


def main(argv: list) -> int:
    # Run as a script, sys.path[0] is this file's directory, whose env.py/profile.py/... would shadow the
    # standard library's modules of those names (cProfile imports `profile`).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if argv[:1] == ["--yaml-from"] and len(argv) > 1:
        import importlib.util

        if importlib.util.find_spec("yaml") is None:
            sys.path.append(argv[1])
        argv = argv[2:]
    if "hosttune" not in sys.modules:
        _load_hosttune()
    from hosttune.engine.__main__ import main as engine_main

    return engine_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
