# The two commands a newcomer needs: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SEEDS  ?= 20

PYTEST_ARGS ?=

.PHONY: setup run test test-fast test-real-mesos chaos bench bench-quick docs clean

$(STAMP): setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
	# A venv made when the extra named tensorflow-cpu: the `tensorflow` distribution replaces it.
	$(BIN)/pip uninstall -q -y tensorflow-cpu 2>/dev/null || true
	# README's route: one pip install brings tfmesos, TensorFlow and its tf-keras (setup.cfg's extras).
	$(BIN)/pip install -q --disable-pip-version-check -e '.[tensorflow,test]'
	touch $(STAMP)

# For the tests only, not the default path: they also drive the scheduler with pymesos (the
# pymesos extra, --driver pymesos), installed the way docs/install.md tells a user who wants it.
TEST_STAMP := $(VENV)/.installed-test
$(TEST_STAMP): $(STAMP) tools/install_pymesos.py
	$(BIN)/python tools/install_pymesos.py
	touch $(TEST_STAMP)

setup: $(STAMP)

# The main job: asynchronous parameter-server training (1 ps, 2 workers, 1 chief) on the embedded master.
run: $(STAMP)
	$(BIN)/tfmesos run examples/pss_digits/options.json

# Everything: unit, protocol, end-to-end (real TensorFlow), ZooKeeper and chromium (installed if missing), chaos,
# in TEST_WORKERS pytest-xdist workers side by side, the longest first (tests/durations.json) and at most one
# CPU-heavy test per core at once, the others waiting tests beside them (tests/side_by_side.py); the few tests
# marked serial run alone, those of an xdist_group in one worker (docs/developers/tests.md). TEST_WORKERS=0:
# one at a time. Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE):
# without the cache each worker rewrites every test module's asserts again (5 s of CPU each).
TEST_WORKERS ?= 3
# xdist hands out the tests in the order tests/conftest.py sorts them (its default would put each
# xdist_group first, by its number of tests, whatever its seconds).
DIST := --dist loadgroup --no-loadscope-reorder
BYTECODE_CACHE := PYTHONDONTWRITEBYTECODE=
test: $(TEST_STAMP)
	tools/ensure_test_deps.sh
	$(BYTECODE_CACHE) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(DIST) $(PYTEST_ARGS) tests

# Under a minute: the pure core and the embedded master's protocol conformance, in FAST_WORKERS
# processes (pytest-xdist). These tests mostly wait (offer intervals, backoffs, timeouts: about a
# quarter of their wall time is CPU), so more workers than cores still pays on a 2-core machine.
FAST_WORKERS ?= 4
test-fast: $(TEST_STAMP)
	$(BYTECODE_CACHE) $(BIN)/python -m pytest -q -n $(FAST_WORKERS) $(DIST) -m "(unit or protocol) and not zookeeper and not slow" $(PYTEST_ARGS) tests

# The real-Mesos suite (tests/e2e/test_*real_mesos*.py): the scenarios of the embedded-master tests,
# same assertions, against Apache Mesos 1.12 as MESOS_TOOLS/install.sh installs it (.ci/run does).
# Not part of make test: a bare clone has no Mesos. Each cluster gets a MESOS_HOME of its own under
# pytest's temp dir; its master listens on REAL_MESOS_PORT, its agents on the ports after it; in
# REAL_MESOS_WORKERS pytest-xdist workers, worker N's clusters 20 N ports further and its agents'
# task ports in a slice of their own (tests/e2e/real_mesos.py). REAL_MESOS_WORKERS=0: one at a time.
MESOS_TOOLS ?= ../shared/tools/real-mesos
REAL_MESOS_PORT ?= 5050
# Two side by side: the suite mostly waits (TensorFlow starting, offer intervals, relaunches), and
# two workers end it in about half the time (48 tests green twice in a row: 666 s and 523 s; one at
# a time 918 s, all on 2026-11-29 under other sessions' load). Three were no faster (768 s: two
# cores). The longest first (tests/durations-real-mesos.json); the images' cluster, an xdist_group,
# in one worker.
REAL_MESOS_WORKERS ?= 2
test-real-mesos: $(TEST_STAMP)
	TFMESOS_REAL_MESOS=$(MESOS_TOOLS) TFMESOS_REAL_MESOS_PORT=$(REAL_MESOS_PORT) \
		$(BIN)/python -m pytest -q -n $(REAL_MESOS_WORKERS) $(DIST) $(PYTEST_ARGS) \
		$(sort $(wildcard tests/e2e/test_*real_mesos*.py))

# Many seeded chaos runs (kill -9 of tasks, executors, the scheduler); writes chaos-summary.json.
chaos: $(TEST_STAMP)
	$(BIN)/python -m tests.chaos.harness --seeds $(SEEDS) --summary chaos-summary.json

bench: $(STAMP)
	TFMESOS_REAL_MESOS=$(MESOS_TOOLS) TFMESOS_REAL_MESOS_PORT=$(REAL_MESOS_PORT) \
		$(BIN)/python -m benchmarks.run --out benchmarks/results.json

# Every benchmark once at small sizes (a smoke run; single samples): /tmp/tfmesos-bench-quick.json.
bench-quick: $(STAMP)
	TFMESOS_REAL_MESOS=$(MESOS_TOOLS) TFMESOS_REAL_MESOS_PORT=$(REAL_MESOS_PORT) \
		$(BIN)/python -m benchmarks.run --quick --out /tmp/tfmesos-bench-quick/results.json

# The documentation site (mkdocs.yml, docs/) built strictly into site/ (not committed): open site/index.html.
# make test builds it too (tests/docs/test_site.py), into a temporary folder.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

# The tfmesos image (Dockerfile): tfmesos/tfmesos:<version> with the scheduler, the executor and
# TensorFlow (CPU), built with podman or docker (installed when missing, as make test does). BASE
# (default: a Debian 12 base built here from Debian packages), TF_VERSION, TF_PACKAGE, TAG pass
# through; e.g. make image BASE=docker.io/library/python:3.11-slim-bookworm TF_VERSION=2.16.2.
# image-export writes IMAGE_DIR/tfmesos/tfmesos:<tag>.tar for a Mesos agent's --docker_registry.
# images-real-mesos: what tests/e2e/test_images_real_mesos.py runs (this image, one with TF 2.16,
# and the bare base, which has no TensorFlow), exported to IMAGE_DIR.
.PHONY: image image-export images-real-mesos
VERSION     := $(shell sed -n 's/^version *= *//p' setup.cfg)
IMAGE_DIR   ?= $(HOME)/.cache/tfmesos-image/registry
OLD_TF      ?= 2.16.2
image:
	tools/image/build.sh
image-export: image
	tools/image/export.sh $(IMAGE_DIR) tfmesos/tfmesos:$(or $(TAG),$(VERSION))
images-real-mesos: image-export
	TAG=$(VERSION)-tf$(basename $(OLD_TF)) TF_VERSION=$(OLD_TF) tools/image/build.sh
	tools/image/export.sh $(IMAGE_DIR) tfmesos/tfmesos:$(VERSION)-tf$(basename $(OLD_TF)) tfmesos-base:bookworm

clean:
	rm -rf $(VENV) build site *.egg-info
