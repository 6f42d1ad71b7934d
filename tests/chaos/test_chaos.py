"""A few chaos seeds in every test run; `make chaos SEEDS=N` runs many more."""
import pytest

from tests.chaos.harness import EXAMPLES, plan, run_seed

# Seeds picked so that these three cover every kind of fault and both examples between them, each
# fault early (a run trains MARGIN steps past its last fault): 341 PSS, ps then scheduler (600
# steps); 330 PSS, an executor then the chief (500); 39 MultiWorkerMirrored, a worker (400). Seeds
# 1-3 (2,200 steps, two of them MultiWorkerMirrored) left the chief out; these are about 25 s of
# CPU fewer.
SEEDS = [341, 330, 39]


def test_seed_plans_are_deterministic_and_varied():
    assert plan(7) == plan(7)
    kinds = {f.target for s in range(1, 40) for f in plan(s)[1]}
    assert kinds == {"ps", "worker", "chief", "executor", "scheduler"}


def test_the_seeds_run_here_cover_every_fault_and_both_examples():
    plans = [plan(seed) for seed in SEEDS]
    assert {f.target for _, faults in plans for f in faults} == {"ps", "worker", "chief", "executor", "scheduler"}
    assert {example for example, _ in plans} == set(EXAMPLES)


@pytest.mark.parametrize("seed", SEEDS)
def test_chaos_seed(seed, tmp_path):
    outcome = run_seed(seed, tmp_path)
    assert outcome.ok, outcome.problems
    assert any(f.done for f in outcome.faults), "a fault was injected"
