"""The console's cursor over a streamed task's output.log: a message seen again is dropped, one
that skips ahead leaves a gap to read back, a long gap is read from its last part."""
from tfmesos.scheduler.output_cursor import CATCH_UP_MAX_BYTES, line_size, read_window, take, whole_lines


def test_in_order_messages_are_shown_and_advance_the_cursor() -> None:
    first = take(0, 0, ["a", "bb"])
    assert first.gap is None and first.lines == ("a", "bb") and first.shown_to == 5
    assert take(first.shown_to, 5, ["c"]).lines == ("c",)


def test_a_message_already_shown_by_a_catch_up_is_dropped_and_one_overlapping_shows_its_new_lines() -> None:
    assert take(5, 0, ["a", "bb"]).lines == () and take(5, 0, ["a", "bb"]).shown_to == 5
    assert take(2, 0, ["a", "bb", "é"]).lines == ("bb", "é")
    assert line_size("é") == 3


def test_a_message_past_what_was_shown_leaves_the_gap_to_read_first() -> None:
    decided = take(5, 9, ["x"])
    assert decided.gap == (5, 9) and decided.lines == ("x",) and decided.shown_to == 11


def test_an_executor_without_offsets_is_shown_as_it_comes() -> None:
    assert take(7, -1, ["x"]).lines == ("x",) and take(7, -1, ["x"]).shown_to == 7


def test_whole_lines_leave_a_line_being_written_and_drop_a_partial_first_line_after_a_skip() -> None:
    assert whole_lines(b"a\nb\npart", False) == (["a", "b"], 4)
    assert whole_lines(b"tail of x\nb\n", True) == (["b"], 12)
    assert whole_lines(b"no newline", False) == ([], 0)
    assert read_window(0, 100) == (0, 0)
    assert read_window(0, CATCH_UP_MAX_BYTES + 10) == (10, 10)
