# rebench: `make demo` sets up and runs the main job; `make test` sets up and runs the tests.
VENV ?= .venv
BIN := $(VENV)/bin
ENV ?= triton_cumsum
PROFILE ?= cpu

.PHONY: setup demo test test-fast test-all check fmt

setup:
	@bash scripts/setup.sh

# The main job on the offline default (cpu profile): prepare, calibrate this machine's
# anchors, run the starting and the reference agent, list the runs, write the report.
demo: setup
	$(BIN)/rebench prepare $(ENV) --profile $(PROFILE)
	@# A timing environment's calibration refuses a busy machine (after measuring twice):
	@# the demo then goes on with the profile's anchors, and says so.
	$(BIN)/rebench calibrate $(ENV) --profile $(PROFILE) --repeats 3 || \
	  echo "demo: calibration refused (busy machine); the runs use the profile's anchors"
	$(BIN)/rebench run $(ENV) --agent start --profile $(PROFILE) --budget 10m
	$(BIN)/rebench run $(ENV) --agent reference --profile $(PROFILE) --budget 10m
	$(BIN)/rebench runs
	$(BIN)/rebench report --out runs/report

# Default suite: everything but GPU tests (skipped without CUDA), in two passes that
# together collect every test: first all but the `timing` ones, on TEST_WORKERS
# pytest-xdist workers (`--dist loadgroup`: each environment's tests go to one worker, which
# prepares it once; the workers share one cache, and a prepare is locked across processes:
# tests/conftest.py), then the `timing` tests (a timing environment's: they compare
# wall-clock times) alone on the cores. Both passes run; the target fails if either does.
# The default is 2 workers: with OpenMP's passive waits (decision 0016) two workers' torch
# trainings share 2 cores without the spin-wait slowdown that made -n 2 no faster before
# (docs/benchmarks/test-suite.md); TEST_WORKERS=0 runs the first pass in one process.
# TEST_JUNIT=DIR writes DIR/parallel.xml and DIR/timing.xml (benchmarks/suite_times.py
# reads both). Both passes share one cache of prepared environments and built solutions
# ($REBENCH_TEST_CACHE, a temporary folder removed at the end): the timing pass reuses what
# the first pass prepared.
# TEST_THREADS: the OpenMP/MKL threads of every process of the first pass (1: the two
# workers run a thread each on 2 cores instead of four threads contending; the timing pass
# keeps the default). An environment that sets its own torch thread count keeps it.
# TIMING_RERUNS: a timing test that fails is run once more, after 5 s (pytest-rerunfailures;
# the summary counts it as R): one comparison of wall-clock times can lose to a burst of
# load on a shared machine; a real regression fails both times.
TEST_WORKERS ?= 2
TEST_THREADS ?= 1
TIMING_RERUNS ?= --reruns 1 --reruns-delay 5
TEST_JUNIT ?=
junit = $(if $(TEST_JUNIT),--junitxml=$(TEST_JUNIT)/$(1).xml)
test: setup
	rc=0; cache=$$(mktemp -d -t rebench-test-cache.XXXXXX); \
	export REBENCH_TEST_CACHE=$$cache; \
	OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not timing" \
	  --durations=15 $(call junit,parallel) || rc=$$?; \
	$(BIN)/python -m pytest -q -m timing $(TIMING_RERUNS) --durations=15 \
	  $(call junit,timing) || rc=$$?; \
	rm -rf "$$cache"; exit $$rc

# The edit loop: no slow test, no environment prepare but the instant ones (a test that
# needs one is skipped, saying which), and none of the suites that score real submissions
# of an environment (goldens, cheats, degenerate policies, timing); the same two passes as
# `make test`. Not what gates a merge: `make test` is.
FAST_IGNORE := $(foreach f,test_degenerate_policies.py test_golden_all_environments.py   triton_cumsum/test_triton_cumsum_golden.py triton_cumsum/test_triton_cumsum_timing.py,--ignore=tests/environments/$(f))
test-fast: setup
	rc=0; export REBENCH_TEST_TIER=fast; \
	OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow and not timing" \
	  $(FAST_IGNORE) --durations=10 || rc=$$?; \
	$(BIN)/python -m pytest -q -m "not slow and timing" $(FAST_IGNORE) --durations=10 || rc=$$?; \
	exit $$rc

check: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

fmt: setup
	$(BIN)/ruff check --fix src tests benchmarks
