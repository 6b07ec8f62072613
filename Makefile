# The two commands users type (see README): `make demo` and `make test`. Both install what is
# missing on a Debian 12 machine, configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
# Warnings fail the build here as in CI (.ci/run), so a warning is caught before it is pushed:
# every build made through this file uses Debian 12's compilers, the ones CI uses.
# `make demo WERROR=OFF` builds past one.
WERROR ?= ON

.PHONY: setup configure build test demo clean format

setup:
	@bash scripts/setup-debian.sh

configure: setup
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGSIDE_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

demo: build
	@$(BUILD_DIR)/bin/ringside compare --json=ringside-compare.json --report=ringside-compare.html

format:
	@clang-format -i $$(git ls-files --cached --others --exclude-standard '*.h' '*.cc' '*.cu' ':!tests/deploy/node_modules')

clean:
	@rm -rf $(BUILD_DIR)
