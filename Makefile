# The commands users type (see README): `make` builds, `make demo` builds and runs the main job,
# `make test` builds and runs every test. Each first installs what it needs and is missing on a
# Debian 12 machine (scripts/setup-debian.sh): building and the demo need the compilers and
# libraries only; the tests add their tools (Podman, Chromium, Prometheus, ...).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
# Warnings fail the build here as in CI (.ci/run), so a warning is caught before it is pushed:
# every build made through this file uses Debian 12's compilers, the ones CI uses.
# `make demo WERROR=OFF` builds past one.
WERROR ?= ON
# What setup installs: `build` unless the goal is the tests (target-specific values reach the
# prerequisites too).
SETUP_PROFILE ?= build
test: SETUP_PROFILE = test
# The build's own make runs beneath this one: without this, each of its ~800 recursive calls
# prints "Entering directory" and "Leaving directory".
MAKEFLAGS += --no-print-directory

.DEFAULT_GOAL := build
.PHONY: setup configure build test demo clean format

setup:
	@bash scripts/setup-debian.sh $(SETUP_PROFILE)

configure: setup
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGSIDE_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The demo builds only what it runs: `ringside` and the daemons it starts.
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target ringside
	@$(BUILD_DIR)/bin/ringside compare --json=ringside-compare.json --report=ringside-compare.html

format:
	@clang-format -i $$(git ls-files --cached --others --exclude-standard '*.h' '*.cc' '*.cu' ':!tests/deploy/node_modules')

clean:
	@rm -rf $(BUILD_DIR)
