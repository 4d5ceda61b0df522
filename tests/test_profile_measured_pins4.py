"""Pins of mutation round 4 (issue 21) on hosttune/profile/measured.py: the job key's normalisation token by token,
where overlays are looked up (user first), which settings count as changed, the overlay's provenance, and how the
changed keys are laid over the profile in use. Pure: Profiles built in-process, directories under tmp_path."""

import dataclasses
from pathlib import Path

import pytest

from hosttune.profile import measured as M
from hosttune.profile.settings import Profile


def test_normalise_token_by_token() -> None:
    cmd = ["/usr/bin/torchrun", "--nproc_per_node=2", "--master_port", "29500", "--rdzv-id=x", "-v", "--node-rank",
           "--flag", "train.py", "--", "--run-dir", "/r", "--lr", "1", "--"]
    assert M.normalise(cmd) == ["torchrun", "--nproc-per-node", "2", "-v", "--flag", "train.py", "--", "--lr", "1",
                                "--"]
    assert M.normalise([]) == [] and M.normalise(["a"]) == ["a"]
    assert M.normalise(["x", "--master-port", "-1"]) == ["x", "-1"]  # a value that looks like an option stays
    assert M.normalise(["x", "--master-addr"]) == ["x"]
    assert M.normalise(["x", "--batch_size=8", "--batch-size", "8"]) == ["x", "--batch-size", "8", "--batch-size",
                                                                         "8"]
    for opt in sorted(M.VOLATILE):
        assert M.normalise(["x", opt, "v", "y"]) == ["x", "y"], opt
        assert M.normalise(["x", opt.replace("-", "_").replace("__", "--", 1) + "=v"]) == ["x"], opt


def test_job_key() -> None:
    assert M.job_key(["torchrun", "train.py"]) == "d6f55f3c54390b3e"
    assert M.job_key(["/opt/bin/torchrun", "train.py", "--master-port", "1"]) == "d6f55f3c54390b3e"
    assert M.job_key(["torchrun", "train.py", "--batch", "64"]) != M.job_key(["torchrun", "train.py"])
    assert len(M.job_key([])) == 16


def test_dirs_and_find_user_first(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOSTTUNE_ETC_DIR": str(tmp_path / "etc")}
    user, system = tmp_path / "cfg/hosttune/measured", tmp_path / "etc/measured"
    assert M.dirs(env) == [user, system]
    cmd = ["torchrun", "t.py"]
    assert M.find(cmd, env) is None
    system.mkdir(parents=True)
    (system / f"{M.job_key(cmd)}.yaml").write_text("x: 1\n")
    assert M.find(cmd, env) == system / f"{M.job_key(cmd)}.yaml"
    user.mkdir(parents=True)
    (user / f"{M.job_key(cmd)}.yaml").mkdir()  # a directory is not an overlay
    assert M.find(cmd, env) == system / f"{M.job_key(cmd)}.yaml"
    (user / f"{M.job_key(cmd)}.yaml").rmdir()
    (user / f"{M.job_key(cmd)}.yaml").write_text("x: 2\n")
    assert M.find(cmd, env) == user / f"{M.job_key(cmd)}.yaml"
    assert M.find(["other"], env) is None


def _p(**kw: object) -> Profile:
    return dataclasses.replace(Profile("base", "s", "src"), **kw)  # type: ignore[arg-type]


def test_changes_lists_exactly_what_differs() -> None:
    base = _p(env={"A": "1", "B": "2"}, tcmalloc={"T": "1"})
    win = dataclasses.replace(base, allocator="jemalloc", env={"A": "1", "B": "3", "C": "4"}, tcmalloc={"T": "1"},
                              dataloader=dataclasses.replace(base.dataloader, num_workers=4))
    assert M.changes(base, win) == ["allocator", "dataloader.num_workers", "env.B", "env.C"]
    assert M.changes(base, base) == []


def test_overlay_provenance_and_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M.time, "gmtime", lambda *a: (2026, 12, 2, 0, 0, 0, 2, 336, 0))
    base = _p()
    win = dataclasses.replace(base, allocator="jemalloc", reasons={"allocator": "faster"})
    top = M.overlay(base, win, command=["/bin/torchrun", "t.py", "--master-port", "9"], fingerprint="fp",
                    candidate="jem", ratio=1.23456, lo=1.1, hi=1.4, rounds=6)
    key = M.job_key(["torchrun", "t.py"])
    assert top.name == f"measured-{key}" and top.fingerprint == "fp" and top.allocator == "jemalloc"
    assert top.summary == "measured by hosttune autotune on 2026-12-02: jem x1.235 the default (95% CI 1.100-1.400, " \
                          "6 rounds)"
    assert M.provenance(top) == {"candidate": "jem", "ratio": "1.235", "interval": "1.100-1.400", "rounds": "6",
                                 "date": "2026-12-02", "job": "torchrun t.py", "changes": "allocator"}
    assert top.reasons["allocator"] == "faster"
    assert M.provenance(base) == {k: "" for k in M.PROVENANCE}


def test_lay_takes_only_the_named_keys_with_their_provenance() -> None:
    base = _p(env={"A": "1"}, tcmalloc={"T": "0"}, reasons={"env.A": "base's"})
    top = _p(allocator="jemalloc", env={"A": "9", "B": "8"}, tcmalloc={"T": "5"}, threads=3,
             dataloader=dataclasses.replace(base.dataloader, num_workers=4, pin_memory=True),
             reasons={"env.A": "top's", "allocator": "why"})
    laid = M._lay(base, top, ["allocator", "env.A", "tcmalloc.T", "dataloader.num_workers", "env.Z", "nope.x"], "W")
    assert (laid.allocator, laid.env, laid.tcmalloc) == ("jemalloc", {"A": "9"}, {"T": "5"})
    assert laid.dataloader.num_workers == 4 and laid.dataloader.pin_memory == base.dataloader.pin_memory
    assert laid.threads == base.threads  # not named: not taken
    assert {k: v for k, v in laid.provenance.items() if v == "W"} == {
        "allocator": "W", "env.A": "W", "tcmalloc.T": "W", "dataloader.num_workers": "W"}
    assert laid.reasons["env.A"] == "top's" and laid.reasons["allocator"] == "why"
    assert base.env == {"A": "1"} and base.tcmalloc == {"T": "0"}  # the base is not changed in place
