"""pyproject.toml ships every package of the tree: a package split into a directory (plan/, execcache/, ...) that is
not listed would be missing from a wheel, and so from the .deb/.rpm built from it."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_package_directory_is_listed_in_pyproject() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^packages = \[(.*?)\]", text, re.S | re.M)
    assert block, "no [tool.setuptools] packages list"
    listed = set(re.findall(r'"([\w.]+)"', block.group(1))) - {"hosttune.profiles"}
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "hosttune").rglob("__init__.py")
               if "_vendor" not in p.parts and "__pycache__" not in p.parts}
    assert listed == on_disk, (sorted(on_disk - listed), sorted(listed - on_disk))
