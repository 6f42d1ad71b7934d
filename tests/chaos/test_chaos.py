"""A few chaos seeds in every test run; `make chaos SEEDS=N` runs many more."""
import pytest

from tests.chaos.harness import plan, run_seed

# Seeds picked so that these three cover every kind of fault between them (see plan()).
SEEDS = [1, 2, 3]


def test_seed_plans_are_deterministic_and_varied():
    assert plan(7) == plan(7)
    kinds = {f.target for s in range(1, 40) for f in plan(s)[1]}
    assert kinds == {"ps", "worker", "chief", "executor", "scheduler"}


@pytest.mark.parametrize("seed", SEEDS)
def test_chaos_seed(seed, tmp_path):
    outcome = run_seed(seed, tmp_path)
    assert outcome.ok, outcome.problems
    assert any(f.done for f in outcome.faults), "a fault was injected"
