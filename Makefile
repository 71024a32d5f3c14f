# grainlab — the two commands of README.md, and what they stand on.
#
#   make demo    set up if needed, build, record an example, analyze it, serve the web app
#   make test    set up if needed, build, run the whole test suite
#
# Set-up is idempotent and cheap when everything is in place: Debian packages
# are checked with dpkg before apt is ever touched, pip runs only when
# pyproject.toml changed (stamp files in .stamps/), cmake configures once and
# ninja rebuilds only what changed. Runs as root (CI) or with sudo otherwise.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

# The system Python (3.11 on Debian 12) that makes .venv.
PYTHON ?= python3
VENV := .venv
BUILD := build
STAMPS := .stamps
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST_ARGS ?=
BENCH_ARGS ?=
NB_ARGS ?=
# make demo ends by serving the trace in the web app; SERVE=0 stops before.
SERVE ?= 1
PORT ?= 8050

CC_NATIVE := clang-19
CXX_NATIVE := clang++-19
# Debian packages the build and the tests need. libc6-dev is listed because
# gcc only recommends it and we install without recommends.
# chromium + chromium-driver: the web app's tests drive a real headless browser.
# time: GNU time, for the peak memory the benchmarks and a spool test read.
APT_PACKAGES := clang-19 libomp-19-dev libpapi-dev cmake ninja-build gcc g++ \
                libc6-dev python3 python3-venv chromium chromium-driver time \
                openmpi-bin libopenmpi-dev python3-otf2 otf2-tools
# Older LLVM libomp runtimes the tests record on (grainlab record --runtime
# llvm-N; docs/compatibility.md). Debian's libomp5-14/-15 conflict with
# libomp5-19 (all ship /usr/lib/x86_64-linux-gnu/libomp.so.5), so their
# libomp.so.5 is fetched with `apt-get download` and unpacked into
# $(BUILD)/runtimes/llvm-N/ instead of installed. Intel's libiomp5 comes
# from PyPI (intel-openmp, the dev extra).
OLD_LIBOMP := 14 15 16
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

GRAINLAB := $(VENV)/bin/grainlab
DEMO_TRACE := out/fib.parquet
DEMO_APP := $(BUILD)/examples/fib 32 10

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench notebooks build setup packages runtimes clean distclean help

help:
	@echo "make demo       set up, build, record build/examples/fib 32 10, summarize, analyze and serve it (SERVE=0: no server)"
	@echo "make test       set up, build, run the test suite (PYTEST_ARGS=... to pass options)"
	@echo "make bench      set up, build, run benchmarks/collector_overhead.py (BENCH_ARGS=...)"
	@echo "make notebooks  set up, build, record the suite and cutoff sweeps, execute notebooks/ into out/notebooks/ (NB_ARGS=...)"
	@echo "make screenshots regenerate docs/img (the web app in headless Chromium; SHOTS_ARGS=...)"
	@echo "make build      set up and build the collector and examples into $(BUILD)/"
	@echo "make setup      Debian packages and the .venv only"
	@echo "make clean      remove $(BUILD)/ and out/ (keeps .venv)"
	@echo "make distclean  also remove .venv and .stamps"

# ---- set-up -----------------------------------------------------------------

setup: packages $(STAMPS)/venv

# Always checked, but only with dpkg-query (dpkg's status database): a ready
# machine does no apt work at all.
packages:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  [ "$$(dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null)" = "install ok installed" ] \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "==> installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# pyvenv.cfg (a plain file, unlike the bin/python symlink) marks that the venv exists.
$(VENV)/pyvenv.cfg: | packages
	@echo "==> creating $(VENV) with $$(command -v $(PYTHON)) ($$($(PYTHON) --version 2>&1))"
	$(PYTHON) -m venv $(VENV)

# Editable install of grainlab with its dependencies and the dev extra.
# Re-run only when pyproject.toml changes or the venv is new.
$(STAMPS)/venv: pyproject.toml $(VENV)/pyvenv.cfg | packages
	@echo "==> pip install -e '.[dev]' into $(VENV)"
	$(VENV)/bin/python -m pip install -q -e '.[dev]'
	@# Debian's OTF2 bindings (python3-otf2) into the venv, and only them: a
	@# folder of links to the two packages, named by a .pth file.
	@mkdir -p $(VENV)/debian-otf2
	ln -sfn /usr/lib/python3/dist-packages/otf2 $(VENV)/debian-otf2/otf2
	ln -sfn /usr/lib/python3/dist-packages/_otf2 $(VENV)/debian-otf2/_otf2
	echo "$(CURDIR)/$(VENV)/debian-otf2" > "$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/grainlab-debian-otf2.pth"
	@mkdir -p $(STAMPS) && touch $@

# ---- native build (collector + examples) ------------------------------------

# Configure once. pyarrow must be installed first: the collector's Parquet
# writer shim compiles against the headers and libraries of the pyarrow wheel.
# -G Ninja only for a new build dir, so an existing one keeps its generator.
$(BUILD)/CMakeCache.txt: $(STAMPS)/venv | packages
	@echo "==> configuring $(BUILD)/"
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,-G Ninja) \
	  -DCMAKE_C_COMPILER=$(CC_NATIVE) -DCMAKE_CXX_COMPILER=$(CXX_NATIVE) \
	  -DGRAINLAB_PYTHON=$(CURDIR)/$(VENV)/bin/python
	@touch $@

build: $(BUILD)/CMakeCache.txt runtimes
	cmake --build $(BUILD) -j$(JOBS)

# LLVM libomp $(OLD_LIBOMP) into $(BUILD)/runtimes/llvm-N/libomp.so.5 (see
# OLD_LIBOMP), unless the system has it; ~1.5 MB, once.
runtimes: | packages
	@for v in $(OLD_LIBOMP); do \
	  [ -f /usr/lib/llvm-$$v/lib/libomp.so.5 ] && continue; \
	  [ -f $(BUILD)/runtimes/llvm-$$v/libomp.so.5 ] && continue; \
	  echo "==> fetching Debian's libomp5-$$v into $(BUILD)/runtimes/llvm-$$v/"; \
	  tmp=$$(mktemp -d); \
	  ( cd $$tmp && apt-get download -q libomp5-$$v >/dev/null 2>&1 ) \
	    || { $(SUDO) apt-get update -qq && ( cd $$tmp && apt-get download -q libomp5-$$v >/dev/null 2>&1 ); } \
	    || { echo "make: apt-get download libomp5-$$v failed"; rm -rf $$tmp; exit 1; }; \
	  dpkg-deb -x $$tmp/libomp5-$${v}_*.deb $$tmp/x; \
	  mkdir -p $(BUILD)/runtimes/llvm-$$v; \
	  cp $$tmp/x/usr/lib/llvm-$$v/lib/libomp.so.5 $(BUILD)/runtimes/llvm-$$v/; \
	  rm -rf $$tmp; \
	done

# ---- the two commands -------------------------------------------------------

# pytest's own summary is the last line on success. Exit 5 ("no tests ran")
# is a failure here, never a silent pass.
test: build
	@echo "==> $(VENV)/bin/ruff check (pyproject.toml [tool.ruff])"
	$(VENV)/bin/ruff check grainlab tests benchmarks
	@echo "==> $(VENV)/bin/pytest -q tests"
	@status=0; $(VENV)/bin/pytest -q -rfEs $(PYTEST_ARGS) tests || status=$$?; \
	case $$status in \
	  0) ;; \
	  5) echo "make test: FAILED: pytest collected no tests";; \
	  *) echo "make test: FAILED (pytest exit status $$status)";; \
	esac; \
	exit $$status

demo: build
	@if ! $(VENV)/bin/python -c 'import grainlab.cli' 2>/dev/null; then \
	  echo "make demo: the grainlab CLI (grainlab/cli.py) is not in this tree yet; nothing to run"; \
	  exit 1; \
	fi
	@mkdir -p out
	@echo "==> grainlab record -o $(DEMO_TRACE) -- $(DEMO_APP)"
	$(GRAINLAB) record -o $(DEMO_TRACE) -- $(DEMO_APP)
	@echo "==> grainlab info $(DEMO_TRACE)"
	$(GRAINLAB) info $(DEMO_TRACE)
	@echo "==> grainlab analyze $(DEMO_TRACE)"
	$(GRAINLAB) analyze $(DEMO_TRACE)
	@if [ "$(SERVE)" != 0 ]; then \
	  echo "==> grainlab serve $(DEMO_TRACE)   (open the URL below; Ctrl-C stops; make demo SERVE=0 skips this)"; \
	  $(GRAINLAB) serve --port $(PORT) $(DEMO_TRACE); \
	fi

# Collector overhead: app alone / empty OMPT tool / collector, side by side.
# (benchmarks/analyze_scale.py, the analysis at 1e5..1e7 grains, is run by hand.)
bench: build
	$(VENV)/bin/python benchmarks/collector_overhead.py $(BENCH_ARGS)

# The notebooks: record the example suite at three sizes and two cutoff
# sweeps, execute every notebook into out/notebooks/NAME.ipynb and NAME.html,
# figures and tables into out/notebooks/figures/NAME/ (docs/notebooks.md).
# NB_ARGS=--quick: the smaller set tests/test_notebooks.py runs; --reuse keeps
# what is recorded; --publish also writes the executed notebooks to notebooks/.
notebooks: build
	$(VENV)/bin/python -m grainlab.suite.notebooks -o out/notebooks $(NB_ARGS)

# ---- cleaning ----------------------------------------------------------------

clean:
	rm -rf $(BUILD) out

distclean: clean
	rm -rf $(VENV) $(STAMPS)

# The web app's pictures in docs/img, regenerated from the current code
# (benchmarks/screenshots.py: records the examples, serves each, Chromium).
# SHOTS_ARGS='--only fib,sort' for some of them.
.PHONY: screenshots
screenshots: build
	$(VENV)/bin/python benchmarks/screenshots.py $(SHOTS_ARGS)
