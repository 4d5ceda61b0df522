"""tuned coexistence in a run of apply or revert: when tuned runs, hand it hosttune's values in a profile that
includes the active one, so it never undoes them (hosttune.tune.tuned); revert gives tuned back what it had."""

import errno
from typing import Any, Dict, List, Optional

from hosttune.tune.kinds import KINDS
from hosttune.tune.model import Change
from hosttune.tune.rootfs import Tree
from hosttune.tune.tunables import TUNABLES
from hosttune.tune.txn import Txn


def hand_over(tree: Tree, state: Dict[str, Any], txn: Txn, boot: bool) -> None:
    """When tuned runs, hand it hosttune's values in a profile that includes the active one, so it never undoes
    them (hosttune.tune.tuned). Every write is a step of the transaction through the no-follow tree writer; the
    first time, tuned's active_profile and profile_mode are saved as they are (text and mode) for revert."""
    if boot:
        return
    from hosttune.tune import tuned

    if not tuned.is_running(tree.root):
        return
    settings = {tid: str(v) for tid, v in state.get("applied", {}).items()}
    for t in TUNABLES:
        kept = KINDS[t.kind].tuned_value(tree, t)
        if kept:
            settings[t.id] = kept
    current = tuned.active_profile(tree.root)
    tuned.check_names(current, tree.path(tuned.ACTIVE_REL))  # what include= and tuned-adm will get: tuned's names
    previous = current
    if current == tuned.PROFILE_NAME:
        previous = (state.get("tuned") or {}).get("previous")
    if state.get("tuned") is None:
        files: Dict[str, Optional[Dict[str, Any]]] = {}
        for rel in (tuned.ACTIVE_REL, tuned.MODE_REL):
            raw = tree.read_raw(rel)
            if raw is None:
                files[rel] = None
                continue
            try:
                text = raw[0].decode("utf-8")
            except UnicodeDecodeError:
                raise OSError(errno.EINVAL, "is not UTF-8 text: not touched", tree.path(rel)) from None
            files[rel] = {"text": text, "mode": raw[1]}
        state["tuned"] = {"previous": previous, "files": files}
    conf = tuned.profile_rel(tree.root) + "/tuned.conf"
    tuned.check_writable(tree, conf)
    txn.write_file(conf, tuned.render_profile(previous, settings))
    if current == tuned.PROFILE_NAME:
        return
    if tree.live:
        txn.call(lambda: tuned.switch(tree.root, tuned.PROFILE_NAME),
                 (lambda: tuned.switch(tree.root, previous or "")) if previous else (lambda: tuned.off(tree.root)))
        return
    # a tree: what `tuned-adm profile hosttune` leaves on disk, each file keeping its permission bits
    for rel, text in ((tuned.ACTIVE_REL, tuned.PROFILE_NAME + "\n"), (tuned.MODE_REL, "manual\n")):
        raw = tree.read_raw(rel)
        txn.write_file(rel, text, raw[1] if raw is not None else 0o644)


def give_back(tree: Tree, saved: Dict[str, Any], txn: Txn, changes: List[Change]) -> None:
    """Give tuned back the profile that was active before the first apply, then put its active_profile and
    profile_mode back exactly as they were (bytes and mode; removed when there were none), and remove hosttune's
    profile (only a file carrying the marker). Every write through the no-follow tree writer."""
    from hosttune.tune import tuned

    previous = saved.get("previous")
    files = saved.get("files")
    now = tuned.active_profile(tree.root)
    if tree.live:
        if previous:
            tuned.switch(tree.root, previous)
        elif now == tuned.PROFILE_NAME:
            tuned.off(tree.root)
    elif files is None and previous:  # a state file from before the files were saved: what tuned-adm would leave
        tuned.switch(tree.root, previous)
    for rel, was in (files or {}).items():
        have = tree.read_raw(rel)
        if was is None:
            txn.write_file(rel, None)
        elif have is None or have != (was["text"].encode("utf-8"), was["mode"]):
            txn.write_file(rel, was["text"], was["mode"])
    if now != previous:
        changes.append(Change("tuned", now, previous or "(none)", "the tuned profile active before the first apply",
                              ()))
    for d in tuned.PROFILE_RELS:
        conf = f"{d}/tuned.conf"
        try:
            mine = tuned.ours(tree, conf)
        except OSError:
            continue  # a link there is not ours to follow
        if mine:
            txn.write_file(conf, None)
            tree.rmdir_if_empty(d)
            changes.append(Change("files", tree.path(conf), "removed", "hosttune's file", ()))
