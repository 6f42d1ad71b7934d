"""Whether an ended task is relaunched: the kind of its end is data (retry_policy.EndKind), not text."""
from tfmesos.core.job import retry_policy
from tfmesos.core.job.retry_policy import EndKind, Ending


def test_a_startup_timeout_is_retryable_under_exit_code_whatever_its_exit_code():
    timed_out = Ending("TASK_FAILED", exit_code=1, kind=EndKind.STARTUP_TIMEOUT)
    assert timed_out.startup_timeout
    assert retry_policy.should_retry("ExitCode", timed_out) == (True, "lost to the infrastructure, retryable under ExitCode")


def test_a_reported_end_is_judged_by_its_exit_code():
    reported = Ending("TASK_FAILED", exit_code=1)
    assert reported.kind is EndKind.REPORTED and not reported.startup_timeout
    assert retry_policy.should_retry("ExitCode", reported) == (False, "exit code 1 is permanent (1-127) under ExitCode")


def test_a_startup_timeout_is_still_no_retry_under_never():
    assert not retry_policy.should_retry("Never", Ending("TASK_FAILED", kind=EndKind.STARTUP_TIMEOUT))[0]
