"""TensorFlow's start-up noise in a task's output: the lines TensorFlow (absl, oneDNN, CUDA, XLA)
writes as it is imported, twice when a process imports it twice (a task and its built-in server).
The console folds them (``scheduler/console.py``); the task's logs keep every line."""
from __future__ import annotations

import re

_PHRASES = (
    "absl::InitializeLog()",
    "oneDNN custom operations are on",
    "Unable to register cuDNN factory", "Unable to register cuFFT factory", "Unable to register cuBLAS factory",
    "computation placer already registered",
    "TF-TRT Warning",
    "Could not find cuda drivers", "failed call to cuInit", "CUDA_ERROR_NO_DEVICE",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "rebuild TensorFlow with the appropriate compiler flags",
)
# absl's informational lines (``I0000 00:00:1795815376.665209   10037 port.cc:153] ...``): warnings
# and errors (W..., E...) are not folded unless they are one of the phrases above.
_ABSL_INFO = re.compile(r"^I\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] ")


def is_start_up_noise(line: str) -> bool:
    return bool(_ABSL_INFO.match(line)) or any(phrase in line for phrase in _PHRASES)
