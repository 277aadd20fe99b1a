"""The public surface: names in ``trizmq.__all__``, their module, the exception tree,
and the layering rule that the sans-I/O packages never import trio."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys

import pytest
import trio

import trizmq

SOCKETS = ["Pair", "Pub", "Sub", "XPub", "XSub", "Push", "Pull", "Req", "Rep", "Dealer", "Router"]


def test_every_public_name_exists_and_reports_trizmq() -> None:
    assert len(set(trizmq.__all__)) == len(trizmq.__all__)
    for name in trizmq.__all__:
        obj = getattr(trizmq, name)
        assert getattr(obj, "__module__", None) == "trizmq", name


def test_contract_names_are_exported() -> None:
    for name in [*SOCKETS, "Socket", "Message", "ZMQError", "EndpointError", "StateError"]:
        assert name in trizmq.__all__, name
    for name in ["HostUnreachable", "ProtocolError", "proxy"]:
        assert name in trizmq.__all__, name


@pytest.mark.parametrize("name", SOCKETS)
def test_socket_classes(name: str) -> None:
    cls = getattr(trizmq, name)
    assert issubclass(cls, trizmq.Socket)
    assert cls.socket_type == name.upper()


def test_every_exception_derives_from_zmq_error() -> None:
    exceptions = [
        obj
        for name in trizmq.__all__
        if isinstance(obj := getattr(trizmq, name), type) and issubclass(obj, BaseException)
    ]
    assert {e.__name__ for e in exceptions} >= {
        "ZMQError",
        "EndpointError",
        "StateError",
        "HostUnreachable",
        "NotSupportedError",
        "ProtocolError",
    }
    for exc in exceptions:
        assert issubclass(exc, trizmq.ZMQError), exc
        assert issubclass(exc, Exception), exc
    assert issubclass(trizmq.EndpointError, ValueError)


def test_bad_endpoint_raises_endpoint_error() -> None:
    with pytest.raises(trizmq.EndpointError):
        trizmq.Push(connect="nonsense://x")
    with pytest.raises(TypeError):
        trizmq.Push(no_such_option=1)
    with pytest.raises(TypeError):
        trizmq.Sub(xpub_verbose=True)
    with pytest.raises(ValueError, match="sndhwm"):
        trizmq.Push(sndhwm=-1)


async def test_str_topics_are_utf8() -> None:
    with trio.fail_after(5):
        async with trizmq.Sub() as sub:
            with pytest.raises(TypeError):
                sub.subscribe(1)  # type: ignore[arg-type]


# The parent package is replaced by a bare module so that trizmq/__init__.py (which
# imports the trio runtime) does not run: what is measured is the subpackage's own imports.
PROBE = """
import importlib, importlib.util, pkgutil, sys, types
spec = importlib.util.find_spec("trizmq")
parent = types.ModuleType("trizmq")
parent.__path__ = list(spec.submodule_search_locations)
sys.modules["trizmq"] = parent
package = sys.argv[1]
module = importlib.import_module(package)
for info in pkgutil.iter_modules(module.__path__, package + "."):
    if package == "trizmq.patterns" and info.name.startswith("trizmq.patterns.sockets"):
        continue  # the strategies know the runtime's types; the plain logic does not
    importlib.import_module(info.name)
assert "trio" not in sys.modules, "trio was imported"
others = sorted(
    m for m in sys.modules
    if m.startswith("trizmq.") and not m.startswith(package) and m != "trizmq._errors"
)
assert not others, others
"""


@pytest.mark.parametrize("package", ["trizmq.zmtp", "trizmq.patterns"])
def test_sans_io_packages_never_import_trio(package: str) -> None:
    assert importlib.util.find_spec("trizmq") is not None
    result = subprocess.run(
        [sys.executable, "-c", PROBE, package],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def _public_modules() -> list[str]:
    """Every module of trizmq whose dotted name has no private (``_``) part."""
    names = ["trizmq"]
    for info in pkgutil.walk_packages(trizmq.__path__, "trizmq."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def test_every_exception_in_a_public_module_derives_from_zmq_error() -> None:
    """API.md: every exception trizmq exposes is a ZMQError. An exception a module keeps
    to itself (caught inside the runtime) has a private name; any other exception class
    reachable under a public name of a public module is part of the hierarchy."""
    modules = _public_modules()
    assert {"trizmq.nursery.fastpath", "trizmq.nursery.handshake_io", "trizmq.zmtp"} <= set(modules)
    offenders = []
    checked = 0
    for name in modules:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not isinstance(obj, type):
                continue
            if not issubclass(obj, BaseException):
                continue
            if not getattr(obj, "__module__", "").startswith("trizmq"):
                continue  # trio's or the standard library's, imported for use
            checked += 1
            if not issubclass(obj, trizmq.ZMQError):
                offenders.append(f"{name}.{attr} ({obj.__module__}.{obj.__qualname__})")
    assert checked >= len(
        [
            n
            for n in trizmq.__all__
            if isinstance(getattr(trizmq, n), type)
            and issubclass(getattr(trizmq, n), BaseException)
        ]
    )
    assert not offenders, offenders
