"""hosttune.facts pins (issue 21, practice round HDET8): `hosttune facts --json` text keeps the fields in the
dataclasses' order (schema first, missing last), indented by two."""

import json

from hosttune.facts import Facts


def test_to_json_keeps_the_field_order_and_indent() -> None:
    f = Facts(hostname="node7", missing=("a: b",))
    text = f.to_json()
    assert text == json.dumps(f.to_dict(), indent=2)
    assert text.splitlines()[:5] == ["{", '  "schema": "hosttune.facts/1",', '  "root": "/",', '  "hostname": "node7",',
                                     '  "distro": {']
    assert text.endswith('  "missing": [\n    "a: b"\n  ]\n}')
    assert Facts.from_dict(json.loads(text)) == f
