"""Every trio pyproject.toml admits: the fast path's probes against trio's fields.

``make test`` runs the suite against the oldest trio that pyproject.toml admits and
against the newest, with the fast path on, and once more with it off. Here each
probe of ``trizmq.nursery.fastpath`` must accept exactly where trio has the private
fields it reads (looked at independently, in ``fastpath_probes.fields_found``). A
trio that moved them is refused and runs the portable path: that is still correct,
so the test then skips, naming the trio and the probes that refused it, after it
has checked that sockets do take the portable path.
"""

from __future__ import annotations

import pytest
import trio
from fastpath_probes import PROBES, accepted_now, fields_found

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath import trio_probe


async def assert_sockets_run_the_portable_check() -> None:
    """A socket entered now awaits trio's own ``checkpoint_if_cancelled``, and a
    message still goes through, counting one cancel point per call."""
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://portable") as pull,
            trizmq.Push(connect="inproc://portable") as push,
        ):
            assert push._cancel_pending is None
            assert pull._cancel_pending is None
            task = trio.lowlevel.current_task()
            before = task._cancel_points
            await push.send(b"x")
            assert await pull.recv() == b"x"
            assert task._cancel_points == before + 2


@pytest.mark.fastpath
def test_the_probes_accept_a_trio_whose_fields_match() -> None:
    # synchronous, so that a skip leaves from outside trio.run with its reason intact
    async def probe() -> tuple[dict[str, bool], dict[str, bool]]:
        return accepted_now(), fields_found()

    accepted, found = trio.run(probe)
    # a probe that accepted fields that are not there would break every send; one
    # that refused fields that are would cost the fast path for nothing
    assert accepted == found, f"trio {trio.__version__}: probes {accepted}, fields {found}"
    refused = [name for name in PROBES if not accepted[name]]
    if not refused:
        return
    if "cancel check" in refused or "run context" in refused:
        trio.run(assert_sockets_run_the_portable_check)
    # a refused "TLS reads" is TlsInput.of giving None: wss readers keep trio's calls
    pytest.skip(
        f"trio {trio.__version__}: the fast path's probes refuse it for "
        f"{', '.join(refused)} (trio's private fields moved); the portable path runs "
        "there. Update the probes in trizmq.nursery.fastpath.trio_probe for this trio."
    )


async def test_a_refused_cancel_check_leaves_sockets_on_the_portable_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a trio the probe refuses gets, on any trio: the probe's verdict is cached
    once, so a refusal is set in its place."""
    monkeypatch.setattr(trio_probe, "_PROBED", False)
    assert trio_probe.cancel_pending() is None
    await assert_sockets_run_the_portable_check()


async def test_with_the_fast_path_off_no_probe_is_consulted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", False)
    accepted = accepted_now()
    assert not accepted["cancel check"]
    assert not accepted["TLS reads"]
    await assert_sockets_run_the_portable_check()
