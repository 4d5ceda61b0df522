"""Unpickling: the one gateway. A pickle names the functions and classes it calls; a file another user could write
names what they like, so every pickle hosttune reads is loaded here, against an exact allow-list.

- Only exact `(module, name)` pairs the caller lists are imported. A prefix rule ("anything in module X") is not
  enough: with pickle protocol 4 a *dotted* name walks attributes, so `("torch.distributed.checkpoint.filesystem",
  "os.system")` returned `os.system` from a module that imports `os` (issue 22).
- A name containing a dot is refused even when listed, so no caller can allow an attribute walk by accident.
- No import-name translation (`fix_imports=False`): the pair checked is the pair imported.
- Persistent ids and copyreg extension codes have no loader here: a pickle using them is refused (the extension
  registry goes through `find_class`, so its targets are checked like any other global).
- Files are read through `fsio.read_bounded` (a regular file, at most `limit` bytes; a FIFO or device is refused
  without blocking).

Callers that need torch's own formats (`torch.load`) use `weights_only=True` instead; this module is stdlib only
and never imports torch.
"""

import io
import os
import pickle
from typing import Any, FrozenSet, Iterable, Tuple, Union

from hosttune.fsio import read_bounded

Pair = Tuple[str, str]
PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_LIMIT = 256 << 20


class Refused(pickle.UnpicklingError):
    """A pickle named a global outside its allow-list (or used an opcode this gateway has no loader for)."""


def allow(pairs: Iterable[Pair]) -> FrozenSet[Pair]:
    """An allow-list, checked once when it is made: every entry a (module, name) pair, no name with a dot."""
    out = frozenset((str(m), str(n)) for m, n in pairs)
    for module, name in out:
        if not module or not name or "." in name:
            raise ValueError(f"unpickle allow-list entry {module!r}, {name!r}: exact module and attribute name only")
    return out


class RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` that imports only the exact pairs in `allowed`; everything else raises `Refused`,
    naming the global and `what` is being read."""

    def __init__(self, file: Any, allowed: FrozenSet[Pair], what: str) -> None:
        super().__init__(file, fix_imports=False)
        self._allowed = frozenset(allowed)
        self._what = what

    def find_class(self, module: str, name: str) -> Any:
        if "." in name or (module, name) not in self._allowed:
            raise Refused(f"{module}.{name} is not allowed in {self._what}")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise Refused(f"persistent ids are not allowed in {self._what}")


def loads(data: bytes, allowed: FrozenSet[Pair], what: str) -> Any:
    """Unpickle `data` against `allowed`. Raises Refused, or pickle.UnpicklingError/EOFError/ValueError/... for
    a damaged pickle (callers word every failure as one line)."""
    return RestrictedUnpickler(io.BytesIO(data), allowed, what).load()


def load_file(path: PathLike, allowed: FrozenSet[Pair], what: str, limit: int = DEFAULT_LIMIT, *,
              nofollow: bool = False) -> Any:
    """Unpickle the regular file `path` (at most `limit` bytes) against `allowed`. Raises OSError for a file that
    cannot be read as one (`nofollow`: a link at `path` is refused), else as `loads`."""
    return loads(read_bounded(path, limit, nofollow=nofollow), allowed, what)
