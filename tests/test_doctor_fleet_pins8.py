"""Pins for hosttune.doctor.fleet (issue 21, practice round HDOC8): this node's Slurm name is $SLURMD_NODENAME, else
the short host name (`hostname -s`), never the FQDN."""

import socket

import pytest

from hosttune.doctor import fleet


def test_node_name_is_slurmds_or_the_short_hostname(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu07.cluster.example.org")
    assert fleet.node_name({}) == "gpu07"
    assert fleet.node_name({"SLURMD_NODENAME": ""}) == "gpu07"
    assert fleet.node_name({"SLURMD_NODENAME": "n7"}) == "n7"
    monkeypatch.setattr(socket, "gethostname", lambda: "plainhost")
    assert fleet.node_name({}) == "plainhost"
