"""The undo log of one apply or revert run: every step records how to undo itself; `rollback` undoes them in
reverse. Each write goes through the no-follow tree writer (`hosttune.tune.rootfs.Tree`)."""

from typing import Callable, Dict, List, Optional

from hosttune.tune.rootfs import Tree
from hosttune.tune.state import ours, parse_blocks, render_blocks

Undo = Callable[[], None]


class Txn:
    """The undo log of one apply or revert run."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.undo: List[Undo] = []
        self.made: List[str] = []

    def makedirs(self, rel: str) -> None:
        made: List[str] = []
        self.tree.makedirs(rel, made)
        self.made += made

        def undo() -> None:
            for d in reversed(made):
                self.tree.rmdir_if_empty(d)
        self.undo.append(undo)

    def write_attr(self, rel: str, old: Optional[str], new: str) -> None:
        self.tree.write_attr(rel, new)
        if old is not None:
            self.undo.append(lambda: self.tree.write_attr(rel, old))

    def write_file(self, rel: str, text: Optional[str], mode: int = 0o644) -> None:
        """Replace (or, with None, remove) `rel`; the undo puts back its exact bytes and permission bits."""
        prev = self.tree.read_raw(rel)
        made: List[str] = []
        if text is None:
            if prev is None:
                return
            self.tree.remove(rel)
        else:
            self.tree.write_file(rel, text, made, mode)
        self.made += made

        def undo() -> None:
            if prev is None:
                self.tree.remove(rel)
            else:
                self.tree.write_file(rel, prev[0], mode=prev[1])
            for d in reversed(made):
                self.tree.rmdir_if_empty(d)
        self.undo.append(undo)

    def call(self, do: Callable[[], None], undo: Undo) -> None:
        do()
        self.undo.append(undo)

    def rollback(self) -> List[str]:
        errors = []
        for step in reversed(self.undo):
            try:
                step()
            except OSError as exc:
                errors.append(str(exc))
        self.undo.clear()
        return errors


def edit_blocks(txn: Txn, rel: str, edits: Dict[str, Optional[List[str]]], reasons: Dict[str, str]) -> None:
    """Set (list) or drop (None) tunables' blocks in hosttune's file `rel`; the file goes when no block is left."""
    text = txn.tree.read(rel)
    if text is not None and not ours(text):
        raise OSError(f"{txn.tree.path(rel)} exists and is not hosttune's (no marker line): not touched")
    kept: Dict[str, str] = dict(reasons)
    blocks = parse_blocks(text, kept)
    reasons = kept
    for tid, lines in edits.items():
        if lines is None:
            blocks.pop(tid, None)
        else:
            blocks[tid] = lines
    new = render_blocks(blocks, reasons) if blocks else None
    if new != text:
        txn.write_file(rel, new)
