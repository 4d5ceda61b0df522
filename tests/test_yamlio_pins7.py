"""Pins for hosttune/yamlio.py (issue 21, practice round HTOP): a refusal is the first line of PyYAML's message."""

import pytest

from hosttune import yamlio
from hosttune.errors import UserError


@pytest.mark.parametrize("text,error", [
    # ReaderError: a YAMLError without marks, whose message goes on with '  in "<unicode string>", position 3'
    ("a: \x01\n", "unacceptable character #x0001: control characters are not allowed"),
    ("a: b\n\x07", "unacceptable character #x0007: control characters are not allowed"),
    ("a: \x1b[2J\n", "unacceptable character #x001b: control characters are not allowed"),
])
def test_a_yaml_error_is_one_line(text: str, error: str) -> None:
    with pytest.raises(UserError) as info:
        yamlio.load(text, "f.yaml")
    assert str(info.value) == f"f.yaml: not valid YAML: {error}"
