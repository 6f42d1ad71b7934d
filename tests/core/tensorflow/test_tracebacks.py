"""The exception line of a failed task (core/tensorflow/tracebacks.py), from real stderr: TensorFlow's, as
recorded in tests/data/tracebacks/, and this Python's own, written by running the scripts here."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfmesos.core.tensorflow.tracebacks import MAX_CHARS, TracebackReader, exception_line, shorten

DATA = Path(__file__).resolve().parents[2] / "data" / "tracebacks"


def stderr_of(script: str, tmp_path: Path) -> list[str]:
    """What this Python writes on stderr running ``script`` as a file (it must fail)."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(script))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, done.stderr
    return done.stderr.splitlines()


def test_a_tensorflow_chained_exception_with_a_tensor_dump_and_shutdown_noise_gives_its_first_line():
    lines = (DATA / "tf_perreplica_chained.stderr").read_text().splitlines()
    # What the task's last bytes are: the shutdown noise, then the dump's end before it.
    assert lines[-1] == "RuntimeError: iterator closed twice"
    assert exception_line(lines) == "ValueError: Attempt to convert a value (PerReplica:{"


def test_a_tensorflow_error_keeps_its_dotted_type_after_grpc_logging():
    lines = (DATA / "tf_grpc_port_taken.stderr").read_text().splitlines()
    assert exception_line(lines) == "tensorflow.python.framework.errors_impl.UnknownError: Could not start gRPC server"


@pytest.mark.parametrize("recorded, expected", [
    # Keras 2 (tf-keras, TF_USE_LEGACY_KERAS=1): model.fit's train step is a tf.function, whose
    # error says "in user code:"; Keras' own message is on the lines under the traced frames.
    ("tf_keras_shape_bug", 'ValueError: Input 0 of layer "sequential" is incompatible with the layer: '
                           "expected shape=(None, 32), found shape=(32, 64)"),
    # Keras 3: "Exception encountered when calling Sequential.call()." then the message, in bold.
    ("keras3_shape_bug", "ValueError: Input 0 with name 'None' of layer 'dense' is incompatible with the layer: "
                         "expected axis -1 of input shape to have value 32, but received input with shape (32, 64)"),
    # A layer of the script's own: Keras 2 wraps "in user code:" in "Exception encountered when calling layer".
    ("tf_keras_layer_bug", "ValueError: the batch holds 64 features, the checkpoint's model 32"),
    # Keras 3, where it could not infer the layer's output: the cause follows "Error encountered:".
    ("keras3_layer_bug", "ValueError: the batch holds 64 features, the checkpoint's model 32"),
    # A plain tf.function (no Keras): TensorFlow's shape error, cut at MAX_CHARS.
    ("tf_function_user_code", "ValueError: Dimensions must be equal, but are 5 and 3 for '{{node MatMul}} = "
                              "MatMul[T=DT_FLOAT, grad_a=false, grad_b=false, transpose_a=false, transpose_b=false]"
                              "(x, ones)' with input shapes: [2,5]…"),
])
def test_a_keras_or_tf_function_error_gives_the_line_that_says_why(recorded, expected):
    lines = (DATA / f"{recorded}.stderr").read_text().splitlines()
    assert exception_line(lines) == expected
    reader = TracebackReader()  # the executor's way: a line at a time
    for line in lines:
        reader.feed(line + "\n")
    assert reader.line == expected


def test_an_in_user_code_message_cut_short_keeps_its_first_line():
    lines = (DATA / "tf_keras_shape_bug.stderr").read_text().splitlines()
    cut = lines[: next(i for i, line in enumerate(lines) if line.startswith("    File"))]
    assert exception_line(cut) == "ValueError: in user code:"


def test_a_bare_raise_in_a_traced_frames_source_is_not_the_exception():
    lines = (DATA / "tf_function_user_code.stderr").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("        return tf.matmul"))
    lines[at + 1:at + 1] = ['    File "/home/user/job/train.py", line 3, in again  *', "        raise"]
    assert exception_line(lines).startswith("ValueError: Dimensions must be equal")


def test_fed_a_line_at_a_time_it_finds_the_same_line():
    reader = TracebackReader()
    for line in (DATA / "tf_perreplica_chained.stderr").read_text().splitlines(keepends=True):
        reader.feed(line)
    assert reader.line == "ValueError: Attempt to convert a value (PerReplica:{"


@pytest.mark.parametrize("script, expected", [
    # "During handling of the above exception": the one raised last ended the process.
    ("""
     try:
         {}["loss"]
     except KeyError:
         raise ValueError("no loss in the logs")
     """, "ValueError: no loss in the logs"),
    # "The above exception was the direct cause of the following exception"
    ("""
     def step():
         raise KeyError("x")
     try:
         step()
     except KeyError as exc:
         raise RuntimeError("training step 12 failed") from exc
     """, "RuntimeError: training step 12 failed"),
    # A multi-line message: its first line.
    ("""
     raise ValueError("shapes differ:\\n  (32, 10)\\n  (32, 11)")
     """, "ValueError: shapes differ:"),
    # A message that starts on the next line: that line.
    ("""
     raise ValueError("\\n  the real reason")
     """, "ValueError: the real reason"),
    # No message; a class of the script (no module prefix) and one of a module (dotted).
    ("""
     class Stop(Exception):
         pass
     raise Stop
     """, "Stop"),
    ("""
     import json
     json.loads("{")
     """, "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    # "[Previous line repeated 996 more times]" among the frames.
    ("""
     def f(n):
         return f(n + 1)
     f(0)
     """, "RecursionError: maximum recursion depth exceeded"),
    # Noise after the traceback: a failing __del__ at shutdown, a thread's traceback, logging.
    ("""
     import sys, threading
     class Held:
         def __del__(self):
             raise RuntimeError("closed twice")
     held = Held()
     t = threading.Thread(target=lambda: 1 / 0)
     t.start(); t.join()
     raise KeyError("epoch")
     """, "KeyError: 'epoch'"),
    # Only a thread's traceback, then an exit without one: that one still says something.
    ("""
     import sys, threading
     t = threading.Thread(target=lambda: 1 / 0)
     t.start(); t.join()
     sys.exit(3)
     """, "ZeroDivisionError: division by zero"),
    # A syntax error in the script itself: no "Traceback" header.
    ("""
     def broken(:
         pass
     """, "SyntaxError: invalid syntax"),
])
def test_a_real_traceback_of_this_python_gives_its_exception_line(tmp_path, script, expected):
    assert exception_line(stderr_of(script, tmp_path)) == expected


def test_an_exception_group_gives_the_groups_line(tmp_path):
    lines = stderr_of("""
     raise ExceptionGroup("two workers failed", [ValueError("a"), TypeError("b")])
     """, tmp_path)
    assert exception_line(lines) == "ExceptionGroup: two workers failed (2 sub-exceptions)"


def test_a_log_line_of_another_thread_amid_the_frames_is_not_the_exception(tmp_path):
    lines = stderr_of("""
     def fit():
         raise OSError("checkpoint dir gone")
     fit()
     """, tmp_path)
    noisy = lines[:2] + ["I1127 21:00:00.000000  4242 coordination_service.cc:1] heartbeat",
                         "2026-11-27 21:00:00.000000: W tensorflow/core/x.cc:1] slow"] + lines[2:]
    assert exception_line(noisy) == "OSError: checkpoint dir gone"


def test_a_long_message_is_cut_at_a_word(tmp_path):
    lines = stderr_of(f"""
     raise ValueError("{'tensor ' * 100}end")
     """, tmp_path)
    line = exception_line(lines)
    assert line.startswith("ValueError: tensor tensor") and line.endswith("tensor…")
    assert len(line) <= MAX_CHARS


@pytest.mark.parametrize("output", [
    [],
    ["python3: can't open file '/x/train.py': [Errno 2] No such file or directory"],
    ["sh: 1: tfserver: not found"],
    ["loss 0.31", "Error: the dataset is empty"],  # not after a traceback: the tail says it
])
def test_output_without_a_traceback_has_no_exception_line(output):
    assert exception_line(output) == ""


def test_shorten_keeps_short_text_and_collapses_whitespace():
    assert shorten("ValueError:  a\tb") == "ValueError: a b"
    assert shorten("x" * 300) == "x" * (MAX_CHARS - 1) + "…"
