"""Each example's README says how to make it train longer (issue 32): the knob its script reads
(TRAIN_STEPS, --steps), and, for an options file, in the form the options take (a task gets the
options' environment, not the shell's)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfmesos.options.load import deep_merge, resolve_options

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*/*.py") if "TRAIN_STEPS" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.parent.name)
def test_the_readme_says_how_to_train_longer(script: Path) -> None:
    readme = (script.parent / "README.md").read_text()
    assert "To train longer" in readme and "TRAIN_STEPS" in readme, script.parent.name
    options = script.parent / "options.json"
    if options.exists():  # the env setting it shows is one the options take
        shown = re.search(r'`("(?:roles|job)": \{.*?\]\}\}?)`', readme.replace("\n", " "), re.S)
        assert shown, readme
        text = shown.group(1)
        fragment = json.loads("{" + re.sub(r"\s+", " ", text) + ("}" if text.count("{") > text.count("}") else "") + "}")
        resolved = resolve_options(deep_merge(json.loads(options.read_text()), fragment))
        env = resolved["job"]["env"] + [e for r in resolved["roles"].values() for e in r.get("env", [])]
        assert any(e.startswith("TRAIN_STEPS=") for e in env), env


def test_every_example_with_a_training_loop_is_covered() -> None:
    assert {p.parent.name for p in SCRIPTS} >= {"pss_digits", "mwms_digits", "tfrun_between_graph", "notebook_pss"}
