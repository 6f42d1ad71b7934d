# The two commands a newcomer needs: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SEEDS  ?= 20

PYTEST_ARGS ?=

.PHONY: setup run test test-fast test-real-mesos chaos bench bench-quick clean

$(STAMP): setup.cfg setup.py tools/install_pymesos.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
	# pymesos' http-parser no longer builds from its sdist on Python >= 3.11: see the script.
	$(BIN)/python tools/install_pymesos.py
	$(BIN)/pip install -q --disable-pip-version-check -e '.[tensorflow,test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: asynchronous parameter-server training (1 ps, 2 workers, 1 chief) on the embedded master.
run: $(STAMP)
	$(BIN)/tfmesos run examples/pss_digits/options.json

# Everything: unit, protocol, end-to-end (real TensorFlow), ZooKeeper and chromium (installed if missing), chaos.
test: $(STAMP)
	tools/ensure_test_deps.sh
	$(BIN)/python -m pytest -q $(PYTEST_ARGS) tests

# Under a minute: the pure core and the embedded master's protocol conformance, in FAST_WORKERS
# processes (pytest-xdist). These tests mostly wait (offer intervals, backoffs, timeouts: about a
# quarter of their wall time is CPU), so more workers than cores still pays on a 2-core machine.
FAST_WORKERS ?= 4
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) -m "(unit or protocol) and not zookeeper and not slow" $(PYTEST_ARGS) tests

# The multi-team scenarios against a real Apache Mesos built with the real-mesos scripts (about an
# hour once; not part of make test or CI): MESOS_TOOLS names the folder of those scripts.
MESOS_TOOLS ?= ../shared/tools/real-mesos
test-real-mesos: $(STAMP)
	TFMESOS_REAL_MESOS=$(MESOS_TOOLS) $(BIN)/python -m pytest -q $(PYTEST_ARGS) tests/e2e/test_teams_real_mesos.py

# Many seeded chaos runs (kill -9 of tasks, executors, the scheduler); writes chaos-summary.json.
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos.harness --seeds $(SEEDS) --summary chaos-summary.json

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run --out benchmarks/results.json

# Every benchmark once at small sizes (a smoke run; single samples): /tmp/tfmesos-bench-quick.json.
bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick --out /tmp/tfmesos-bench-quick/results.json

clean:
	rm -rf $(VENV) build *.egg-info
