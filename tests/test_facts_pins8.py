"""hosttune.facts pins (issue 21, practice round HDET8): `hosttune facts --json` text keeps the fields in the
dataclasses' order (schema first, missing last), indented by two."""

import json

import pytest

from hosttune.facts import Facts


def test_to_json_keeps_the_field_order_and_indent() -> None:
    f = Facts(hostname="node7", missing=("a: b",))
    text = f.to_json()
    assert text == json.dumps(f.to_dict(), indent=2)
    assert text.splitlines()[:5] == ["{", '  "schema": "hosttune.facts/1",', '  "root": "/",', '  "hostname": "node7",',
                                     '  "distro": {']
    assert text.endswith('  "missing": [\n    "a: b"\n  ]\n}')
    assert Facts.from_dict(json.loads(text)) == f


def test_another_schema_is_refused_naming_both() -> None:
    data = Facts().to_dict()
    data["schema"] = "hosttune.facts/2"
    with pytest.raises(ValueError) as info:
        Facts.from_dict(data)
    assert str(info.value) == "facts schema 'hosttune.facts/2' is not 'hosttune.facts/1'"
    del data["schema"]
    with pytest.raises(ValueError) as info:
        Facts.from_dict(data)
    assert str(info.value) == "facts schema None is not 'hosttune.facts/1'"
