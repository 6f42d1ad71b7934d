"""JobSpec.task_count counts what task_keys lists, without listing (a huge count is refused later)."""
import dataclasses

import pytest

from tests.core.helpers import spec_of
from tfmesos.core.spec import TaskKey

pytestmark = pytest.mark.unit


def test_task_count_is_the_number_of_task_keys_external_members_left_out():
    spec = spec_of(chief={"count": 1}, worker={"count": 3}, ps={"count": 2})
    assert spec.task_count() == len(spec.task_keys()) == 6
    outside = dataclasses.replace(spec, external=((TaskKey("chief", 0), "h:1"), (TaskKey("worker", 7), "h:2")))
    assert outside.task_count() == len(outside.task_keys()) == 5  # worker:7 is no task of the spec


def test_a_huge_count_is_counted_not_listed():
    spec = spec_of(worker={"count": 10**11})
    assert spec.task_count() == 10**11
