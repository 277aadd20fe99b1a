"""``trizmq.patterns`` stays pure: importing it pulls in neither trio nor another trizmq subpackage.

The top-level ``trizmq/__init__.py`` imports the whole socket runtime (and trio),
so the check loads ``trizmq.patterns`` under an empty stand-in for the ``trizmq``
package: what is then in ``sys.modules`` is exactly what the pattern modules import.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib.util, sys, types
spec = importlib.util.find_spec("trizmq")
stand_in = types.ModuleType("trizmq")
stand_in.__path__ = list(spec.submodule_search_locations)
sys.modules["trizmq"] = stand_in
import trizmq.patterns
from trizmq.patterns import backoff, routing, subscription_messages, subscriptions
assert "trio" not in sys.modules, "trio was imported"
others = sorted(
    name for name in sys.modules
    if name.startswith("trizmq.") and not name.startswith("trizmq.patterns")
)
assert not others, others
assert not any(name.startswith("trizmq.patterns.sockets") for name in sys.modules)
"""


def test_import_does_not_pull_in_trio_or_the_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_public_names() -> None:
    import trizmq.patterns as patterns

    assert sorted(patterns.__all__) == sorted(
        [
            "CANCEL",
            "SUBSCRIBE",
            "Distribution",
            "FairQueue",
            "RoundRobin",
            "SubscriptionTrie",
            "parse_subscription_message",
            "subscription_message",
        ]
    )
    for name in patterns.__all__:
        assert getattr(patterns, name) is not None
