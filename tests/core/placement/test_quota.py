"""When the scheduler asks the master whether quota holds a job back."""
from tfmesos.core.placement.quota import HELD_BACK_AFTER_SECONDS, ask_about_quota


def test_a_failed_placement_round_is_asked_about_at_once():
    assert ask_about_quota(0.0, unplaced=True)


def test_no_round_at_all_is_asked_about_after_two_allocation_intervals_not_near_the_timeout():
    assert not ask_about_quota(HELD_BACK_AFTER_SECONDS - 0.1, unplaced=False)
    assert ask_about_quota(HELD_BACK_AFTER_SECONDS, unplaced=False)
    assert HELD_BACK_AFTER_SECONDS <= 5.0
