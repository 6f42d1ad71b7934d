"""The resources map: any Mesos scalar by name, with arithmetic and fit (plain data)."""
import pickle

import pytest

from tfmesos.core.spec import EXECUTOR_CPUS, EXECUTOR_MEM, Resources
from tests.core.helpers import spec_of


def test_zeros_are_left_out_and_the_usual_names_read_as_attributes():
    r = Resources(1, 1024, scalars={"licences": 0.5, "fpgas": 2, "nics": 0})
    assert list(r) == ["cpus", "mem", "licences", "fpgas"]  # the usual four first, then as given
    assert (r.cpus, r.mem, r.disk, r.gpus, r.get("fpgas"), r.get("absent")) == (1.0, 1024.0, 0.0, 0, 2.0, 0.0)


def test_equal_maps_are_equal_and_hash_alike_however_built():
    a = Resources(1, 512, gpus=1, scalars={"fpgas": 1})
    b = Resources.of({"fpgas": 1, "gpus": 1, "mem": 512, "cpus": 1})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Resources(1, 512, gpus=1)
    assert pickle.loads(pickle.dumps(a)) == a


def test_add_subtract_and_fit_treat_every_name_alike():
    a = Resources(1, 512, scalars={"fpgas": 1})
    assert a + {"fpgas": 1, "licences": 2} == Resources(1, 512, scalars={"fpgas": 2, "licences": 2})
    assert a - a == Resources() and not (a - a)
    assert a.fits_in({"cpus": 2, "mem": 1024, "fpgas": 1})
    assert not a.fits_in({"cpus": 2, "mem": 1024})
    assert a.shortfall({"cpus": 2, "mem": 100}) == Resources.of({"mem": 412, "fpgas": 1})


def test_a_role_s_resources_list_joins_its_fields_and_the_demand_adds_the_executor():
    spec = spec_of(worker={"count": 1, "cpus": 1, "mem": 512, "resources": ["fpgas:2", "licences:0.5"]})
    role = spec.role("worker")
    assert role.resources == Resources(1, 512, scalars={"fpgas": 2, "licences": 0.5})
    assert role.demand == role.resources + Resources(EXECUTOR_CPUS, EXECUTOR_MEM)


@pytest.mark.parametrize("entry, words", [
    ("cpus:1", "$.roles.worker.resources[0]: 'cpus:1' names cpus, which is $.roles.worker.cpus"),
    ("gpus:1", "$.roles.worker.resources[0]: 'gpus:1' names gpus, which is $.roles.worker.gpus"),
    ("ports:1", "$.roles.worker.resources[0]: 'ports:1': ports are ranges"),
    ("fpgas=1", '$.roles.worker.resources[0]: "fpgas=1" is invalid: expected NAME:AMOUNT'),
    ("fpgas:-1", '$.roles.worker.resources[0]: "fpgas:-1" is invalid: expected NAME:AMOUNT'),
    ("fp gas:1", '$.roles.worker.resources[0]: "fp gas:1" is invalid: expected NAME:AMOUNT'),
])
def test_bad_resources_entries_are_refused_naming_the_field(entry, words):
    from tfmesos.options.load import OptionsError

    with pytest.raises(OptionsError) as err:
        spec_of(worker={"count": 1, "resources": [entry]})
    assert words in str(err.value), str(err.value)


def test_a_resource_named_twice_is_refused():
    from tfmesos.options.load import OptionsError

    with pytest.raises(OptionsError, match=r"resources\[1\]: 'fpgas:2' names fpgas a second time"):
        spec_of(worker={"count": 1, "resources": ["fpgas:1", "fpgas:2"]})
