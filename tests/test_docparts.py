"""The docstring parts twin methods share (trizmq._docparts): each lands whole, at the
indentation of the line that names it, and a name that is not a part fails at import."""

from __future__ import annotations

import inspect

import pytest

import trizmq
import trizmq.testing
from trizmq._docparts import PARTS, shares_doc


def test_a_part_lands_at_the_indentation_of_its_line() -> None:
    def twin() -> None:
        """Summary.

        Raises:
            {state_errors}
        """

    shares_doc(twin)
    assert inspect.getdoc(twin) == (
        "Summary.\n\nRaises:\n"
        "    trio.ClosedResourceError: once the socket is closed.\n"
        "    RuntimeError: before the socket is entered."
    )


def test_a_name_that_is_no_part_fails_where_it_is_written() -> None:
    def twin() -> None:
        """Summary.

        Raises:
            {no_such_part}
        """

    with pytest.raises(KeyError, match="no_such_part"):
        shares_doc(twin)


def test_on_a_class_every_method_that_names_a_part_is_completed() -> None:
    @shares_doc
    class Twins:
        def one(self) -> None:
            """One.

            Raises:
                {state_errors}
            """

        def other(self) -> None:
            """Other, naming no part."""

    assert "RuntimeError: before the socket is entered." in (inspect.getdoc(Twins.one) or "")
    assert inspect.getdoc(Twins.other) == "Other, naming no part."


def test_a_docstring_that_names_no_part_is_a_mistake() -> None:
    def plain() -> None:
        """Summary, with {braces} inside a line."""

    with pytest.raises(ValueError, match="no docstring names a shared part"):
        shares_doc(plain)


@pytest.mark.parametrize(
    ("method", "part"),
    [
        (trizmq.Radio.send, "radio_send_args"),
        (trizmq.Radio.send_nowait, "radio_send_errors"),
        (trizmq.Socket.recv_nowait, "recv_state_errors"),
        (trizmq.Socket.recv_multipart_nowait, "recv_state_errors"),
        (trizmq.Socket.unbind, "state_errors"),
        (trizmq.Socket.disconnect, "state_errors"),
        (trizmq.testing.VirtualNetwork.cut, "fault_endpoint_or_none_errors"),
        (trizmq.testing.VirtualNetwork.link_count, "fault_endpoint_or_none"),
    ],
)
def test_the_public_twins_read_whole(method: object, part: str) -> None:
    doc = inspect.getdoc(method) or ""
    assert "{" + part + "}" not in doc
    for line in PARTS[part].splitlines():
        assert line.strip() in doc
