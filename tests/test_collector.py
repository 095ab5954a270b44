"""The cycle collector is paused only while a document is read, and comes back as it was, however the read ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fleetgen.errors import FindingsError, InputError
from fleetgen.live.dumps import live_objects
from fleetgen.source.collector import collector_paused
from fleetgen.source.reader import parse_documents
from fleetgen.source.yaml_nodes import Limits

LIMITS = Limits(bytes=1 << 20, values=10_000, depth=32)


@pytest.fixture
def collector_on() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.enable()
    yield
    if not was_on:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_off_inside_and_on_after_a_read_a_problem_or_a_nested_pause() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "an inner pause must not end the outer one"
    assert gc.isenabled()

    assert parse_documents(b"a: 1\n", "f.yaml", LIMITS)[0].data == {"a": 1}
    assert gc.isenabled()
    with pytest.raises(FindingsError):
        parse_documents(b"a: [1\n", "f.yaml", LIMITS)
    assert gc.isenabled()
    with pytest.raises(InputError, match="expected a Kubernetes object"):
        live_objects(b"apiVersion: v1\nkind: List\nitems: [3]\n", "live.yaml")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    was_on = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        parse_documents(b"a: 1\n", "f.yaml", LIMITS)
        assert not gc.isenabled()
    finally:
        if was_on:
            gc.enable()
