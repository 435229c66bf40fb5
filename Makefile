# SPDX-License-Identifier: Apache-2.0
# Thin wrapper around the CMake presets in CMakePresets.json.
#   make build               configure (once) and build the default preset -> build/bin/backoff
#   make test [PRESET=...]   configure, build and run ctest for a preset (default: default)
#   make test-asan / test-tsan, bench, demo, format, clean, deps
#   make fuzz [FUZZ_SECONDS=60]  libFuzzer: each fuzzer for FUZZ_SECONDS (scripts/fuzz.sh)
#   make soak [SOAK_CLIENTS=10000 SOAK_SECONDS=60]  backoff serve under load and faults (tests/net/soak.sh)
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:
MAKEFLAGS += --no-print-directory

# CI (CI=true) builds with the ci preset: the default flags plus -Werror, in unity batches.
PRESET ?= $(if $(CI),ci,default)
JOBS ?= $(shell nproc)

# Binary directory of a configure preset (keep in sync with CMakePresets.json).
build_dir = $(if $(filter default,$(1)),build,build-$(1))
BUILD_DIR := $(call build_dir,$(PRESET))

FORMAT_DIRS := $(wildcard include src tests bench)

.PHONY: deps configure build test test-asan test-tsan bench bench-sim demo format clean fuzz soak

deps:
	scripts/install-deps.sh

configure: deps
	cmake --preset $(PRESET)

build: deps
	if [ ! -f "$(BUILD_DIR)/CMakeCache.txt" ]; then cmake --preset $(PRESET); fi
	cmake --build --preset $(PRESET) --parallel $(JOBS)

# Tests run with TMPDIR set to an empty folder of the build, and fail if anything is left in it:
# every test removes what it made, however it ends.
test: configure
	cmake --build --preset $(PRESET) --parallel $(JOBS)
	tmp="$(CURDIR)/$(BUILD_DIR)/test-tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp"; \
	rc=0; TMPDIR="$$tmp" ctest --preset $(PRESET) || rc=$$?; \
	left=$$(cd "$$tmp" && ls -A); \
	if [ -n "$$left" ]; then \
	  echo "make test: tests left these in TMPDIR ($$tmp):" $$left >&2; [ "$$rc" -ne 0 ] || rc=1; \
	fi; \
	exit "$$rc"

test-asan:
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) test PRESET=asan

# atexit_sleep_ms=0: TSan otherwise sleeps a second at the exit of every process that still has a
# thread (the retry commands' signal watcher is never joined, to start and end fast), which the
# CLI tests that time a run would count.
test-tsan:
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:atexit_sleep_ms=0 $(MAKE) test PRESET=tsan

bench:
	$(MAKE) build PRESET=default
	if [ ! -x build/bin/backoff_bench ]; then \
	  echo "bench: build/bin/backoff_bench was not built (no bench/*.cpp?)" >&2; exit 1; fi
	build/bin/backoff_bench $(BENCH_ARGS)

bench-sim:
	$(MAKE) build PRESET=default
	bench/sim_bench.sh build/bin/backoff

# The CLI, the retry tool alone, the man page and the shell completions, and the libraries they
# link; nothing else (no tests, no benchmarks).
DEMO_TARGETS := backoff_cli backoff_try_cli backoff_reference
demo: deps
	if [ ! -f build/CMakeCache.txt ]; then cmake --preset default; fi
	cmake --build --preset default --parallel $(JOBS) --target $(DEMO_TARGETS)
	build/bin/backoff presets --attempts 8
	@echo
	build/bin/backoff sim --out results --plot
	@echo "make demo: every scenario's outputs, charts and report.html are in results/<scenario>/;"
	@echo "           open results/index.html for all the reports."
	@echo "           Built: build/bin/backoff, build/bin/backoff-try (the retry tool alone),"
	@echo "           the man page build/reference/man1/backoff.1 (man -l it), and the completions"
	@echo "           build/reference/completions/backoff (bash: source it) and build/reference/zsh/_backoff"

FUZZ_SECONDS ?= 60
fuzz:
	scripts/install-deps.sh clang libclang-rt-14-dev
	scripts/fuzz.sh $(FUZZ_SECONDS)

SOAK_CLIENTS ?= 10000
SOAK_SECONDS ?= 60
soak:
	$(MAKE) build PRESET=default
	tests/net/soak.sh build/bin/backoff --clients $(SOAK_CLIENTS) --duration $(SOAK_SECONDS)

format:
	command -v clang-format >/dev/null || { echo "format: clang-format not found" >&2; exit 1; }
	if [ -z "$(FORMAT_DIRS)" ]; then echo "format: no source directories" >&2; exit 1; fi
	find $(FORMAT_DIRS) -type f \( -name '*.hpp' -o -name '*.cpp' \) -print0 \
	  | xargs -0 -r clang-format -i

clean:
	rm -rf build build-debug build-asan build-tsan build-ci build-fuzz
