"""trizmq.metrics imports each half (Prometheus, OpenTelemetry) only when one of its
names is first used, and names the distribution that is missing when it cannot."""

from __future__ import annotations

import importlib
import sys

import pytest

import trizmq.metrics

#: each half's private module -> (the distribution it needs, the import that fails without it)
HALVES = {
    "trizmq.metrics._prometheus": ("prometheus_client", "prometheus_client"),
    "trizmq.metrics._otel": ("opentelemetry-api", "opentelemetry"),
}


def test_every_public_name_comes_from_its_half() -> None:
    homes = {
        name: module_name
        for module_name in HALVES
        for name in importlib.import_module(module_name).__all__
    }
    for name in trizmq.metrics.__all__:
        module = importlib.import_module(homes[name])
        assert getattr(trizmq.metrics, name) is getattr(module, name), name


@pytest.mark.parametrize("module_name", sorted(HALVES))
def test_a_missing_distribution_is_named(module_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    needs, library = HALVES[module_name]
    half = importlib.import_module(module_name).__all__
    public = [name for name in trizmq.metrics.__all__ if name in half]
    assert public
    monkeypatch.delitem(sys.modules, module_name)
    monkeypatch.setitem(sys.modules, library, None)  # importing it now fails
    for name in public:
        monkeypatch.delattr(trizmq.metrics, name, raising=False)
        with pytest.raises(ModuleNotFoundError) as caught:
            getattr(trizmq.metrics, name)
        assert str(caught.value) == (
            f"trizmq.metrics.{name} needs {needs} ({library} is missing): "
            "pip install 'trizmq[metrics]'"
        )
        assert caught.value.name == library


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(trizmq.metrics, "no_such_name")  # noqa: B009
