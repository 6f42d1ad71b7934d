"""The exception that ended a Python task, from what it wrote on stderr: one short line.

The last bytes of a failed task's output are often not the cause: an exception whose message
holds a tensor dump (``ValueError: Attempt to convert a value (PerReplica:{`` and hundreds of
lines), or TensorFlow's logging after the traceback. The line that says why is the traceback's
exception line: its type and the first line of its message.

Read line by line (``TracebackReader.feed``), so that the executor can watch output it pumps
without keeping it, or all at once (``exception_line``). Pure: text in, one line (or "") out.

- The last traceback wins: a chained exception ("During handling of the above exception...",
  "The above exception was the direct cause...") prints the one that ended the process last.
- A traceback Python prints without ending the process (``Exception ignored in``, a thread's
  ``Exception in thread``, an atexit callback's) counts only when no other traceback was printed:
  such noise often follows the real one at interpreter shutdown.
- A SyntaxError in the script itself prints no ``Traceback`` header, only its ``File`` line.
- A line that does not look like one (a log line of another thread, printed amid the frames) is
  skipped: an exception line starts with the exception's (dotted) type name.
- Where the message's first line only says where the exception came from, the line that says why
  stands for it: ``tf.function``'s (and so Keras 2's ``model.fit``'s) ``X: in user code:`` is
  followed by the traced frames and the real exception's line, indented as the frames are; Keras'
  ``X: Exception encountered when calling ...`` by a blank line and the message (Keras 3 makes
  it bold: terminal escapes are dropped; where it could not infer a layer's output, its line ends
  ``Error encountered:`` and the cause follows). Each may hold the other; when the output ends
  first, the line read last is kept.
"""
from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the executor imports this module (typing costs each one ~4 ms)
    from typing import Iterable

MAX_CHARS = 200  # an exception line longer than this is cut (at a word where one is near)
ELLIPSIS = "…"

_HEADER = re.compile(r"(?:^|\s)(?:Exception Group )?Traceback \(most recent call last\):$")
# What Python prints before a traceback of an exception that did not end the process.
_NOT_FATAL = ("Exception ignored", "Exception in thread", "Exception in threading.excepthook",
              "Error in atexit._run_exitfuncs", "Error in sys.excepthook")
# A frame of a traceback printed without a header (a SyntaxError in the script itself).
_BARE_FRAME = re.compile(r'^  File "[^"]*", line \d+')
# The exception line: a (dotted) type name, then ": message" or nothing.
_EXCEPTION = re.compile(r"^[A-Za-z_<][\w.<>]*(?::(?:\s|$)|$)")
_TYPE_ALONE = re.compile(r"^[\w.<>]+:$")
# An exception group's margin: "  | " before each of its lines.
_GROUP_MARGIN = re.compile(r"^\s*\| ?")

# Messages whose first line says only where the exception came from (see the module's docstring).
_IN_USER_CODE = re.compile(r": in user code:$")
_CALLING = re.compile(r"^([\w.<>]+): (?:Exception encountered when calling |.*Error encountered:$)")
_FRAME = re.compile(r'^\s+File "')
_ESCAPES = re.compile(r"\x1b\[[0-9;]*m")

_IDLE, _FRAMES, _MESSAGE, _USER_CODE, _CALL = 0, 1, 2, 3, 4


class TracebackReader:
    """Fed a task's stderr a line at a time; ``line`` is the exception line of the traceback that
    ended it. Keeps O(1) state, whatever the output's length. (A plain class, not a dataclass:
    the executor imports it, and ``dataclasses`` costs each cold executor 5-10 ms.)"""

    def __init__(self) -> None:
        self.fatal = ""  # the exception line of the last traceback that may have ended the process
        self.noise = ""  # the last one of a traceback that did not (see _NOT_FATAL)
        self._state = _IDLE
        self._group = False  # inside an exception group's traceback: lines carry a "  | " margin
        self._counts = True  # the traceback being read may have ended the process
        self._previous = ""  # the last non-empty line before the current one
        self._pending = ""  # "Type:" whose message starts on the next line
        self._indent = -1  # in a tf.function's "in user code:" block: its frames' indent, once one is seen

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        if _HEADER.search(line.rstrip()):
            if not line.lstrip().startswith("|"):  # "| Traceback": a sub-exception of a group, read already
                self._start(group=line.lstrip().startswith("+"))
        elif self._state == _IDLE and _BARE_FRAME.match(line):
            self._start(group=False)
        elif self._state == _FRAMES:
            self._frame_or_exception(line)
        elif self._state == _MESSAGE and line.strip():
            self._found(f"{self._pending} {line.strip()}")
        elif self._state == _USER_CODE:
            self._user_code(line)
        elif self._state == _CALL and line.strip():
            self._found(f"{self._pending} {line.strip()}")
        if line.strip():
            self._previous = line

    def _start(self, group: bool) -> None:
        self._state, self._group, self._pending = _FRAMES, group, ""
        self._counts = not self._previous.lstrip().startswith(_NOT_FATAL)

    def _frame_or_exception(self, line: str) -> None:
        body = _GROUP_MARGIN.sub("", line, count=1) if self._group else line
        if not body.strip() or body[0] in " \t" or not _EXCEPTION.match(body):
            return  # a frame, its source and carets, "[Previous line repeated ...]", or noise
        text = body.rstrip()
        self._found(text)
        if _TYPE_ALONE.match(text):  # ``raise E("\n...")``: its message starts on the next line
            self._state, self._pending = _MESSAGE, text

    def _user_code(self, line: str) -> None:
        """A line of a tf.function's "in user code:" message: a traced frame, its source (deeper),
        or the real exception's line (as deep as the frames). Unindented lines are not its own."""
        body = line.rstrip()
        indent = len(body) - len(body.lstrip())
        if not indent:
            return
        if _FRAME.match(body):
            self._indent = indent
        elif indent == self._indent and _EXCEPTION.match(body.lstrip()):
            self._found(body.lstrip())

    def _found(self, text: str) -> None:
        text = _ESCAPES.sub("", text)
        if self._counts:
            self.fatal = text
        else:
            self.noise = text
        self._state, self._pending, self._indent = _IDLE, "", -1
        if _IN_USER_CODE.search(text):
            self._state = _USER_CODE
        elif calling := _CALLING.match(text):
            self._state, self._pending = _CALL, calling.group(1) + ":"

    @property
    def line(self) -> str:
        """The exception line, shortened to MAX_CHARS; "" when no traceback was seen."""
        return shorten(self.fatal or self.noise)


def exception_line(lines: Iterable[str]) -> str:
    """The exception line of the traceback in ``lines`` (a task's stderr), or ""."""
    reader = TracebackReader()
    for line in lines:
        reader.feed(line)
    return reader.line


def shorten(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` of at most ``limit`` characters: cut at a space in its last fifth where there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - len(ELLIPSIS)]
    space = cut.rfind(" ")
    if space >= limit * 4 // 5:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + ELLIPSIS
