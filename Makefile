# flowgate — the commands users type.  Each target installs what is missing
# (Debian packages, hugepages) and then drives meson/ninja.
#
#   make build   release build in build/ (-O3, -march=x86-64-v2)
#   make test    release + ASan/UBSan builds, whole test suite (unit, fixtures,
#                namespace end-to-end, short fuzz run)
#   make demo    real load-balancing run in network namespaces + fgctl output
#   make bench   benchmarks that fit this machine -> bench/results, RESULTS.md
#   make deb     Debian packages flowgate, flowgate-xdp, flowgate-bench (debian/)
#                -> ./flowgate_VERSION_amd64.deb ...; `apt-get install
#                ./flowgate_*.deb` installs one with its dependencies
#   make deb-check   make deb, then its file lists and lintian (scripts/deb-check.sh;
#                not part of `make test`: a package is a release build of its own)
#   make test-clean-root   what CI runs (.ci/run): `make test` and `make demo`
#                in a clean Debian 12 root (debootstrap minbase), CUDA on the host

SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
HUGEPAGES ?= 1024
NINJA ?= ninja

.PHONY: all deps hugepages build build-asan build-fuzz test test-clean-root demo bench install clean
.PHONY: deb deb-check

all: build

deps:
	@scripts/install-deps.sh

hugepages:
	@scripts/hugepages.sh $(HUGEPAGES)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=release -Db_lto=true

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

# Tests use --no-huge: no hugepages reserved.  After each meson run, which
# suites ran (scripts/test-report.py), whether they passed or not.
test: build build-asan build-fuzz
	meson test -C $(BUILD) --print-errorlogs --num-processes 1; rc=$$?; \
		scripts/test-report.py $(BUILD) "release build"; exit $$rc
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --print-errorlogs --num-processes 1 --no-suite e2e --no-suite slow; rc=$$?; \
		scripts/test-report.py $(ASAN_BUILD) "ASan/UBSan build (no e2e, slow)"; exit $$rc
	meson test -C $(FUZZ_BUILD) --print-errorlogs --num-processes 1 --suite fuzz; rc=$$?; \
		scripts/test-report.py $(FUZZ_BUILD) "fuzz build"; exit $$rc
	@echo "make test: PASS (release: every suite; ASan/UBSan: all but e2e and slow; fuzz)"

test-clean-root:
	@bash .ci/run

# only what the demo runs (not CUDA, bench or tests); --no-huge, so no
# hugepages reserved (scripts/demo.sh says why)
demo: deps $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD) dataplane/flowgate control/fgctl
	@scripts/demo.sh $(BUILD)

bench: HUGEPAGES = 6144
bench: build hugepages
	@scripts/bench.sh $(BUILD)

# meson install: flowgate, fgctl, flowgate-bench, the systemd unit, man
# pages, /etc/flowgate/flowgate.conf when none exists (DESTDIR= works)
install: build
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir $(DESTDIR))

# dpkg-buildpackage builds in obj-<triplet>/ (release, LTO, no CUDA, no tests:
# debian/rules) and writes the packages to the parent directory; they are
# moved here.  DEB_BUILD_OPTIONS=parallel=N as for any Debian package.
DEB_VERSION = $(shell dpkg-parsechangelog -S Version)
DEB_BUILD_OPTIONS ?= parallel=$(shell nproc)
deb: deps
	DEB_BUILD_OPTIONS="$(DEB_BUILD_OPTIONS)" dpkg-buildpackage -b -us -uc
	mv ../flowgate*_$(DEB_VERSION)_*.deb ../flowgate_$(DEB_VERSION)_*.buildinfo \
		../flowgate_$(DEB_VERSION)_*.changes .
	@ls -1 flowgate*_$(DEB_VERSION)_*.deb

deb-check: deb
	@scripts/deb-check.sh .

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
