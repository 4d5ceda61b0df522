"""`hosttune tune --root` never writes outside the tree: tuned's files (active_profile, profile_mode, the hosttune
profile) go through the no-follow tree writer like every other file, revert puts them back byte for byte, the names
read from the tree are tuned profile names, and a file at hosttune's name that an admin wrote is left alone.

"Outside" is a directory beside the tree standing in for the real host (a planted `etc/tuned -> /etc/tuned` in a
captured tree would point at the host's own /etc/tuned): every test snapshots it and checks it did not change."""

import errno
import os
import stat
from pathlib import Path

import pytest
from conftest import build_tree, run_cli
from test_tune import host_tree, snapshot

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.tune import programs, state, tuned
from hosttune.tune.model import MARKER
from hosttune.tune.rootfs import Tree, check_line

RUNNING = {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n"}  # the tree's tuned daemon runs


def outside_etc_tuned(tmp_path: Path) -> Path:
    """A stand-in for the host's /etc/tuned, with a profile of its own."""
    return build_tree(tmp_path / "host-etc-tuned", {"active_profile": "balanced\n", "profile_mode": "auto\n",
                                                    "balanced/tuned.conf": "[main]\nsummary=the host's\n"})


def one_error_line(res: "object") -> str:
    lines = res.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert res.returncode == 2 and len(lines) == 1, (res.returncode, res.stderr)  # type: ignore[attr-defined]
    assert "Traceback" not in res.stderr  # type: ignore[attr-defined]
    return lines[0]


def test_a_linked_etc_tuned_is_never_written_through(tmp_path: Path) -> None:
    outside = outside_etc_tuned(tmp_path)
    root = build_tree(host_tree(tmp_path / "host"), RUNNING, links={"etc/tuned": str(outside)})
    outside_before, before = snapshot(outside), snapshot(root)
    line = one_error_line(run_cli(["tune", "apply", "--root", str(root)]))
    assert "tune apply: tuned: " in line and "symbolic link in the tree" in line and "undone" in line, line
    assert snapshot(outside) == outside_before  # no hosttune profile, active_profile still balanced, mode auto
    assert snapshot(root) == before  # and the run's other changes were undone


def test_a_linked_hosttune_profile_directory_is_never_written_through(tmp_path: Path) -> None:
    outside = outside_etc_tuned(tmp_path)
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, "etc/tuned/active_profile": "balanced\n",
                                                     "etc/tuned/profile_mode": "auto\n"},
                      links={"etc/tuned/hosttune": str(outside)})
    outside_before, before = snapshot(outside), snapshot(root)
    with pytest.raises(UserError, match="symbolic link in the tree"):
        tune.apply(root)
    assert snapshot(outside) == outside_before and snapshot(root) == before
    with pytest.raises(OSError):
        tuned.write_profile(root, "balanced", {"thp": "madvise"})
    assert snapshot(outside) == outside_before
    assert tuned.remove_profile(root) is False and snapshot(outside) == outside_before


@pytest.mark.parametrize("name", ["active_profile", "profile_mode"])
def test_a_linked_active_profile_or_mode_is_refused_not_replaced(tmp_path: Path, name: str) -> None:
    outside = outside_etc_tuned(tmp_path)
    files = {**RUNNING, "etc/tuned/active_profile": "balanced\n", "etc/tuned/profile_mode": "auto\n"}
    del files[f"etc/tuned/{name}"]
    root = build_tree(host_tree(tmp_path / "host"), files, links={f"etc/tuned/{name}": str(outside / name)})
    outside_before, before = snapshot(outside), snapshot(root)
    with pytest.raises(UserError):
        tune.apply(root)
    assert snapshot(outside) == outside_before and snapshot(root) == before


def test_revert_never_writes_through_a_link_planted_after_apply(tmp_path: Path) -> None:
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, "etc/tuned/active_profile": "balanced\n",
                                                     "etc/tuned/profile_mode": "auto\n"})
    tune.apply(root)
    assert (root / "etc/tuned/active_profile").read_text() == "hosttune\n"
    # etc/tuned swapped for a link to the host's own directory (which holds a hosttune profile of the same text)
    outside = tmp_path / "host-etc-tuned"
    (root / "etc/tuned").rename(outside)
    (root / "etc/tuned").symlink_to(outside)
    outside_before = snapshot(outside)
    line = one_error_line(run_cli(["tune", "revert", "--root", str(root)]))
    assert "tune revert: " in line and "symbolic link in the tree" in line, line
    assert snapshot(outside) == outside_before


@pytest.mark.parametrize("files", [
    {"etc/tuned/active_profile": "throughput-performance\n", "etc/tuned/profile_mode": "auto\n"},
    {"etc/tuned/active_profile": "  balanced   intel-sst\n", "etc/tuned/profile_mode": "manual"},
    {"etc/tuned/profile_mode": "auto\n"},  # tuned runs with no active profile
    {"etc/tuned/tuned-main.conf": "daemon = 1\n"},  # neither file yet
], ids=["auto-mode", "odd-spacing-no-newline", "no-active-profile", "neither"])
def test_revert_restores_tuneds_files_byte_for_byte(tmp_path: Path, files: dict) -> None:
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, **files})
    if (root / "etc/tuned/profile_mode").exists():
        os.chmod(root / "etc/tuned/profile_mode", 0o600)  # and the permission bits
    before = snapshot(root)
    tune.apply(root)
    assert (root / "etc/tuned/active_profile").read_text() == "hosttune\n"
    assert (root / "etc/tuned/profile_mode").read_text() == "manual\n"
    assert (root / "etc/tuned/hosttune/tuned.conf").read_text().startswith(MARKER + "\n")
    res = run_cli(["tune", "revert", "--root", str(root)])
    assert res.returncode == 0, res.stderr
    assert "removed " in res.stdout and "restored tuned: hosttune -> " in res.stdout, res.stdout
    assert snapshot(root) == before


def test_a_second_apply_keeps_the_first_saved_tuned_files(tmp_path: Path) -> None:
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, "etc/tuned/active_profile": "balanced\n",
                                                     "etc/tuned/profile_mode": "auto\n"})
    before = snapshot(root)
    tune.apply(root, only=["thp"])
    tune.apply(root, only=["swappiness"])  # tuned already on hosttune: balanced and auto stay what revert restores
    text = (root / "etc/tuned/hosttune/tuned.conf").read_text()
    assert "include=balanced" in text and "vm.swappiness=10" in text
    tune.revert(root)
    assert snapshot(root) == before


@pytest.mark.parametrize("active", ["balanced [cpu] governor=powersave", "../../../tmp/evil", "balanced,hpc",
                                    "bal\x1banced"])
def test_an_active_profile_that_is_not_a_tuned_name_never_reaches_include(tmp_path: Path, active: str) -> None:
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, "etc/tuned/active_profile": active + "\n"})
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", "apply", "--root", str(root)]))
    assert "active_profile" in line and "is not a tuned profile name" in line and "undone" in line, line
    assert snapshot(root) == before


def test_tuned_profile_names_follow_tuneds_own_rule() -> None:
    for good in ("balanced", "throughput-performance", "intel-sst", "my_site.v2", "hosttune"):
        assert tuned.valid_name(good), good
    for bad in ("", ".", "..", "a/b", "a b", "a,b", "a;b", "[cpu]", "a\nb", "x" * 129, "é"):
        assert not tuned.valid_name(bad), bad
    with pytest.raises(ValueError):
        tuned.render_profile("../../etc", {"thp": "madvise"})
    with pytest.raises(ValueError):
        tuned.switch(Path("/nonexistent-tree"), "a;b")


def test_an_admins_own_hosttune_tuned_profile_is_left_alone(tmp_path: Path) -> None:
    admin = "[main]\ninclude=balanced\n[vm]\ntransparent_hugepages=always\n"
    root = build_tree(host_tree(tmp_path / "host"), {**RUNNING, "etc/tuned/active_profile": "balanced\n",
                                                     "etc/tuned/hosttune/tuned.conf": admin})
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", "apply", "--root", str(root)]))
    assert "not hosttune's (no marker line): not touched" in line and "etc/tuned/hosttune/tuned.conf" in line, line
    assert snapshot(root) == before
    with pytest.raises(OSError, match="no marker line"):
        tuned.write_profile(root, "balanced", {"thp": "madvise"})
    assert (root / "etc/tuned/hosttune/tuned.conf").read_text() == admin


@pytest.mark.parametrize("rel", ["etc/sysctl.d/90-hosttune.conf", "etc/security/limits.d/90-hosttune.conf",
                                 "etc/systemd/system/dev-shm.mount.d/hosttune.conf"])
def test_apply_refuses_an_admins_file_at_hosttunes_name(tmp_path: Path, rel: str) -> None:
    """Pinned: a file at hosttune's name without the marker line is the admin's. apply says so in one line, exit 2,
    and leaves it (and everything else) as it was; revert leaves it too."""
    root = build_tree(host_tree(tmp_path / "host"), {rel: "# the site's own\nvm.swappiness = 1\n"})
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", "apply", "--root", str(root)]))
    assert f"{rel}" in line and "not hosttune's (no marker line): not touched" in line, line
    assert snapshot(root) == before


def test_a_link_at_hosttunes_own_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "host-sysctl.conf"
    victim.write_text("kernel.panic = 10\n")
    root = build_tree(host_tree(tmp_path / "host"), {}, links={"etc/sysctl.d/90-hosttune.conf": str(victim)})
    with pytest.raises(UserError, match="swappiness|numa_balancing"):
        tune.apply(root)
    assert victim.read_text() == "kernel.panic = 10\n"
    assert os.path.islink(root / "etc/sysctl.d/90-hosttune.conf")


# ---- the tree writer itself -------------------------------------------------------------------------------------


def test_tree_writer_refuses_links_at_every_step(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("host\n")
    root = build_tree(tmp_path / "t", {"etc/x": "x\n"},
                      links={"etc/link": str(outside), "etc/flink": str(outside / "f")})
    tree = Tree(root)
    for rel in ("etc/link/new", "etc/link/f", "etc/flink"):
        with pytest.raises(OSError):
            tree.write_file(rel, "owned\n")
        with pytest.raises(OSError):
            tree.read_raw(rel)
    with pytest.raises(OSError):
        tree.write_attr("etc/flink", "1")
    with pytest.raises(OSError):
        tree.remove("etc/link/f")
    assert sorted(os.listdir(outside)) == ["f"] and (outside / "f").read_text() == "host\n"


def test_tree_writer_keeps_the_given_mode_and_reads_exact_bytes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    tree = Tree(root)
    made: list = []
    tree.write_file("etc/tuned/profile_mode", b"auto", made, 0o600)
    assert made == ["etc", "etc/tuned"]
    assert tree.read_raw("etc/tuned/profile_mode") == (b"auto", 0o600)
    assert stat.S_IMODE(os.stat(root / "etc/tuned/profile_mode").st_mode) == 0o600
    assert tree.read_raw("etc/tuned/active_profile") is None


@pytest.mark.parametrize("value", ["10\n", "madvise\nnever", "a\rb", "x\x00", "\x1b[31m"])
def test_every_written_line_refuses_a_newline_or_control_character(tmp_path: Path, value: str) -> None:
    root = build_tree(tmp_path / "t", {"proc/sys/vm/swappiness": "60\n"})
    with pytest.raises(OSError, match="newline or control character"):
        Tree(root).write_attr("proc/sys/vm/swappiness", value)
    assert (root / "proc/sys/vm/swappiness").read_text() == "60\n"
    with pytest.raises(OSError):
        check_line(value, "x")
    with pytest.raises(OSError):
        state.render_blocks({"memlock": [f"* soft memlock {value}"]}, {})
    with pytest.raises(OSError):
        programs.remount_shm(f"size={value}")  # refused before any mount runs
    with pytest.raises(ValueError):
        tuned.render_profile("balanced", {"governor": f"performance{value}x"})


def test_a_failed_attribute_write_names_the_whole_path(tmp_path: Path) -> None:
    # The write goes through the directory's descriptor; the error must still say which file (the package's removal
    # prints it when a revert fails), not the bare last name the kernel saw.
    root = build_tree(tmp_path / "t", {"proc/sys/vm/swappiness": "60\n"})
    tree = Tree(root)
    with pytest.raises(OSError) as err:
        tree.write_attr("proc/sys/vm/no_such_knob", "1")
    assert err.value.filename == tree.path("proc/sys/vm/no_such_knob") and err.value.errno == errno.ENOENT
    assert "proc/sys/vm/no_such_knob" in str(err.value)
