"""The real-Apache-Mesos variants (test_*real_mesos*.py) run only when asked for (TFMESOS_REAL_MESOS
names the folder of the real-mesos scripts): without it they are not collected at all, rather than skipped."""
import os
from pathlib import Path

import pytest

collect_ignore = [] if os.environ.get("TFMESOS_REAL_MESOS") else [
    p.name for p in Path(__file__).parent.glob("test_*real_mesos*.py")]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup`` sends the tests of one ``xdist_group`` to one worker by a ``@GROUP``
    suffix of their node ids. pytest-xdist 3.8 writes it to ``item._nodeid``, which pytest 9 no
    longer reads (``nodeid`` is ``item._id``): the suffix was lost and a group's tests went to
    every worker (the images' module cluster started in both, on the same fixed ports). Written
    where pytest reads it, once."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and hasattr(item, "_id") and not item.nodeid.endswith(suffix):
            item._id = item.nodeid + suffix
