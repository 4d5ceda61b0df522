"""hosttune's per-rank hook, run by Python's `site` in every interpreter of a `hosttune exec` job (this directory is
first on the job's PYTHONPATH). The work is in hosttune/launch/hook.py; this file only loads it from the hosttune
package this directory belongs to (the launcher's own code, whatever the rank's interpreter has installed), then
leaves no trace of itself and hands over to the next `sitecustomize` on the path. A process the rank side's failure
rule refuses (launch/rank.py: a tampered handoff, a trust failure; the hook said why in one line) ends here with
status 2, before any of the program's code runs.
"""


def _hosttune_hook() -> None:
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(here))  # .../hosttune (this file: hosttune/launch/rankhook/)

    def ours(entry: str) -> bool:
        try:
            return os.path.realpath(entry or os.curdir) == os.path.realpath(here)
        except (OSError, ValueError):
            return False

    sys.path[:] = [p for p in sys.path if not ours(p)]
    me = sys.modules.pop("sitecustomize", None)
    before = set(sys.modules)
    role = "none"
    try:
        if os.environ.get("HOSTTUNE_HANDOFF"):  # policy/names.py HANDOFF; nothing to do (or import) without it
            if "hosttune" not in sys.modules:
                import importlib.util

                spec = importlib.util.spec_from_file_location(
                    "hosttune", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
                if spec is None or spec.loader is None:
                    raise ImportError(f"no hosttune package at {pkg}")
                module = importlib.util.module_from_spec(spec)
                sys.modules["hosttune"] = module
                spec.loader.exec_module(module)
            from hosttune.launch.hook import run

            role = run()
            if role == "refused":  # the rank side's failure rule: tampering or a trust failure (said in one line)
                sys.stderr.flush()
                os._exit(2)
    except Exception as exc:  # noqa: BLE001 - the hook must never stop the program it runs in
        try:
            sys.stderr.write(f"hosttune: the per-rank hook failed ({type(exc).__name__}: {exc}); this process runs "
                             f"as its launcher started it\n")
        except Exception:  # noqa: BLE001
            pass
    finally:
        if role != "top-armed":  # an armed top process's watchers import from the loaded package later
            for name in [n for n in sys.modules if n not in before and (n == "hosttune" or n.startswith("hosttune."))]:
                del sys.modules[name]  # the program's own `import hosttune` finds its own
        _chain(me)


def _chain(me: object) -> None:
    """Import the next `sitecustomize` on sys.path (a user's, the distro's), as site would have without us. When
    there is none, our module stays registered: importlib re-reads sys.modules["sitecustomize"] after this file
    runs and fails without an entry. The finders on sys.meta_path are asked directly (what importlib.util.find_spec
    does for a top-level name), so a process with no plan imports nothing at all."""
    import sys

    found = None
    for finder in sys.meta_path:
        try:
            found = finder.find_spec("sitecustomize", None)  # type: ignore[call-arg]
        except (AttributeError, ImportError, ValueError, TypeError):
            found = None
        if found is not None:
            break
    if found is None:
        sys.modules["sitecustomize"] = me  # type: ignore[assignment]
        return
    try:
        __import__("sitecustomize")
    except Exception as exc:  # noqa: BLE001 - report it the way site does, and go on
        sys.modules.setdefault("sitecustomize", me)  # type: ignore[arg-type]
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}\n")


_hosttune_hook()
del _hosttune_hook
