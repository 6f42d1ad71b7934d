"""``--dist loadgroup`` keeps an ``xdist_group``'s tests in one worker on pytest 9 too
(tests/e2e/conftest.py writes the ``@GROUP`` suffix where pytest reads the node id): without it
the images' module cluster started in both workers of the real-Mesos suite, on the same ports."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.e2e import conftest as e2e


class _Item:
    def __init__(self, nodeid: str, *groups: str):
        self._id = nodeid
        self.marks = [pytest.mark.xdist_group(g, reason="r").mark for g in groups]

    @property
    def nodeid(self) -> str:
        return self._id

    def iter_markers(self, name: str):
        return iter(self.marks if name == "xdist_group" else [])


def test_a_groups_tests_carry_its_suffix_once_and_others_none():
    items = [_Item("t.py::a", "mesos-images"), _Item("t.py::b[x]", "mesos-images"), _Item("t.py::c")]
    config = SimpleNamespace(option=SimpleNamespace(loadgroup=True))
    e2e.pytest_collection_modifyitems(config, items)
    e2e.pytest_collection_modifyitems(config, items)  # (xdist fixed one day: never twice)
    assert [i.nodeid for i in items] == ["t.py::a@mesos-images", "t.py::b[x]@mesos-images", "t.py::c"]


def test_without_loadgroup_nothing_changes():
    items = [_Item("t.py::a", "g")]
    e2e.pytest_collection_modifyitems(SimpleNamespace(option=SimpleNamespace(loadgroup=False)), items)
    assert items[0].nodeid == "t.py::a"
