"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/runtime.py: unpin_group resets a group held as a
default argument in a torch module's functions and in the methods of its classes, a class with a metaclass of its
own (abc.ABCMeta, as many of torch's are) included, and leaves every other default alone. In-process: the module is
a stand-in registered under a torch.* name for the test only."""

import abc
import sys
import types

import pytest

pytest.importorskip("torch")

from hosttune.engine.runtime import unpin_group  # noqa: E402


def test_unpin_group_resets_defaults_in_functions_classes_and_abc_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    group, other = object(), object()
    module = types.ModuleType("torch._hosttune_pins7")

    def func(x, group=group, keep=other):
        return x

    def kwonly(x, *, group=group, keep=1):
        return x

    class Plain:
        def method(self, group=group):
            return group

    class Abstract(abc.ABC):
        def method(self, a=0, *, group=group):
            return group

        @abc.abstractmethod
        def run(self) -> None: ...

    module.func, module.kwonly, module.Plain, module.Abstract = func, kwonly, Plain, Abstract
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert unpin_group(group) == 4
    assert func.__defaults__ == (None, other)
    assert kwonly.__kwdefaults__ == {"group": None, "keep": 1}
    assert Plain.method.__defaults__ == (None,)
    assert Abstract.method.__defaults__ == (0,) and Abstract.method.__kwdefaults__ == {"group": None}
    assert unpin_group(group) == 0  # nothing left


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's, from torch.distributed's imports
@pytest.mark.parametrize("sharded,names", [
    (False, ["torch.distributed.nn.functional"]),
    (True, ["torch.distributed.nn.functional", "torch.distributed.optim.zero_redundancy_optimizer",
            "torch.distributed.fsdp.sharded_grad_scaler"]),
])
def test_the_modules_imported_before_the_group(monkeypatch: pytest.MonkeyPatch, sharded: bool, names: list) -> None:
    import importlib

    from hosttune.engine import runtime

    seen: list = []
    real = importlib.import_module

    def record(name: str, package=None):
        seen.append(name)
        return real(name, package)

    monkeypatch.setattr(runtime.importlib, "import_module", record)
    runtime.import_group_default_modules(sharded)
    assert seen == names
    assert all(name in sys.modules for name in names)
