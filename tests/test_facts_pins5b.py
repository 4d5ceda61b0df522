"""Pin for mutation round 5's survivor in hosttune/facts.py (issue 21): a torch install whose oneDNN version is not
known (a failed probe, a build that ships none) says null for it in `facts --json`, the same null as every other
unknown field, never an empty string; and it reads back as None."""

import json

from hosttune.detect import torchenv
from hosttune.facts import Facts, TorchInstall


def test_a_failed_torch_probe_has_a_null_onednn_in_the_json() -> None:
    t = torchenv.from_probe("/opt/py/bin/python3", {"error": "timed out after 20 s"}, None, ())
    assert t is not None and t.error == "timed out after 20 s" and t.onednn is None
    data = json.loads(Facts(torch=t).to_json())
    assert data["torch"]["onednn"] is None and data["torch"]["version"] is None
    assert Facts.from_dict(data).torch == t


def test_a_torch_without_onednn_has_null_and_one_with_it_has_its_version() -> None:
    none = torchenv.from_probe("/py", {"torch": {"__version__": "2.6.0", "cuda": None}}, None, ())
    assert none is not None and none.onednn is None
    assert json.loads(Facts(torch=none).to_json())["torch"]["onednn"] is None
    some = torchenv.from_probe("/py", {"torch": {"__version__": "2.6.0", "cuda": None, "onednn": "3.5.3"}}, None, ())
    assert some is not None and json.loads(Facts(torch=some).to_json())["torch"]["onednn"] == "3.5.3"
    assert TorchInstall(python="/py").onednn is None
