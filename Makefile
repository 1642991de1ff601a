# flowgate — the commands users type.  Each target installs what is missing
# (Debian packages, hugepages) and then drives meson/ninja.
#
#   make build   release build in build/ (-O3, -march=x86-64-v2)
#   make test    release + ASan/UBSan builds, whole test suite (unit, fixtures,
#                namespace end-to-end, short fuzz run)
#   make demo    real load-balancing run in network namespaces + fgctl output
#   make bench   benchmarks that fit this machine -> bench/results, RESULTS.md
#   make test-clean-root   what CI runs (.ci/run): `make test` and `make demo`
#                in a clean Debian 12 root (debootstrap minbase), CUDA on the host

SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
HUGEPAGES ?= 1024
NINJA ?= ninja

.PHONY: all deps hugepages build build-asan build-fuzz test test-clean-root demo bench clean

all: build

deps:
	@scripts/install-deps.sh

hugepages:
	@scripts/hugepages.sh $(HUGEPAGES)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=release

build: deps $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dgpu=disabled

build-asan: deps $(ASAN_BUILD)/build.ninja
	$(NINJA) -C $(ASAN_BUILD)

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debug -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dgpu=disabled

build-fuzz: deps $(FUZZ_BUILD)/build.ninja
	$(NINJA) -C $(FUZZ_BUILD)

test: build build-asan build-fuzz hugepages
	meson test -C $(BUILD) --print-errorlogs --num-processes 1
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --print-errorlogs --num-processes 1 --no-suite e2e --no-suite slow
	meson test -C $(FUZZ_BUILD) --print-errorlogs --num-processes 1 --suite fuzz

test-clean-root:
	@bash .ci/run

demo: build hugepages
	@scripts/demo.sh $(BUILD)

bench: HUGEPAGES = 6144
bench: build hugepages
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
