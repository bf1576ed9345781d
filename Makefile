# trnsim top-level Makefile. The two commands a new user needs are `make run` and `make test`;
# both install missing Debian packages first (scripts/install-deps.sh) and build with CMake + Ninja.

BUILD_DIR   ?= build
BUILD_TYPE  ?= Release
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS  ?=
CTEST_ARGS  ?=
RUN_ARGS    ?=
LIST        ?= smoke
REGRESS_ARGS ?=
COVERAGE_ARGS ?=

.PHONY: all deps configure build test test-long test-sanitize fuzz soak qemu-test run lint check-verilator bench coverage clean help registers-doc isa-gen

all: build

help:
	@echo "trnsim make targets:"
	@echo "  make run        build trnsim and run the default workload, a GPT-2 transformer block (ends PASS/FAIL)"
	@echo "  make test       install deps, build, run the CTest suite (no 'long' tests)"
	@echo "  make test-long  the 'long' tests only (e.g. the 64x64 and 128x128 Tensor Engines), in $(BUILD_DIR)-long"
	@echo "  make test-sanitize  the default suite built with ASan + UBSan (every error fatal), in $(BUILD_DIR)-sanitize"
	@echo "  make fuzz       every libFuzzer target for FUZZ_SECONDS s (default 60; FUZZ_ARGS=\"-j 2 asm noc\"), docs/verification.md"
	@echo "  make soak       seeded programs, NoC traffic with link faults and collectives, round after round, for DURATION (default 10m; SOAK_SEED=1)"
	@echo "  make qemu-test  the QEMU guest tests (label qemu: the PCI function, the Linux module, a GEMM via /dev/trn0)"
	@echo "  make lint       verilator --lint-only -Wall over rtl/"
	@echo "  make check-verilator VERILATOR=/path/bin/verilator  lint, build and the default suite with another Verilator"
	@echo "  make regress    seeded regression, list smoke (LIST=full|long; REGRESS_ARGS=\"--seeds 20\"), docs/verification.md"
	@echo "  make bench      simulation-speed and build-cost benchmarks (docs/performance.md)"
	@echo "  make coverage   RTL line/toggle/functional coverage: build in $(BUILD_DIR)-cov, report in $(BUILD_DIR)/coverage (docs/verification.md)"
	@echo "  make registers-doc  regenerate docs/registers.md from spec/registers.json"
	@echo "  make isa-gen    regenerate the RTL packages' ISA regions (dtype codes, NMAX) from spec/isa.json"
	@echo "  make deps       install missing Debian packages"
	@echo "  make clean      remove $(BUILD_DIR)/"

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -LE long -j $(JOBS) $(CTEST_ARGS)

# The QEMU guests of docs/linux-driver.md (also part of `make test`): each boots Debian's kernel under TCG against
# `trnsim serve --qemu` and shows the guest console (--verbose).
qemu-test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure --verbose -L qemu $(CTEST_ARGS)

# In a build directory of its own, so that $(BUILD_DIR) keeps the default configuration. -DTRNSIM_LARGE_TE=ON adds
# the 64x64 and 128x128 Tensor Engines, verilated hierarchically during the build (rtl/CMakeLists.txt).
test-long: deps
	cmake -S . -B $(BUILD_DIR)-long -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTRNSIM_LARGE_TE=ON -DTRNSIM_FUZZ=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR)-long -j $(JOBS)
	ctest --test-dir $(BUILD_DIR)-long --output-on-failure -L long -j $(JOBS) $(CTEST_ARGS)

# The whole project (verilated models included) with AddressSanitizer and UndefinedBehaviorSanitizer, every report
# fatal, built with clang (-DTRNSIM_SANITIZE=ON: top-level CMakeLists.txt says why not GCC) in a build directory of
# its own; the default suite must pass clean (docs/verification.md, "Sanitizers"). The fuzz targets are left out:
# they carry the sanitizers already.
test-sanitize: deps
	cmake -S . -B $(BUILD_DIR)-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DTRNSIM_SANITIZE=ON -DTRNSIM_FUZZ=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR)-sanitize -j $(JOBS)
	UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizer/lsan.supp \
	  ctest --test-dir $(BUILD_DIR)-sanitize --output-on-failure -LE long -j $(JOBS) $(CTEST_ARGS)

# libFuzzer targets (tests/fuzz: built with clang in $(BUILD_DIR)/fuzz by the default build), each for FUZZ_SECONDS;
# working corpora and crash artifacts in $(BUILD_DIR)/fuzz-work (scripts/fuzz --help).
FUZZ_SECONDS ?= 60
FUZZ_ARGS ?=
# Soak (docs/verification.md, "Soak"): every round has its own seeds; the first failure stops it with its command.
DURATION ?= 10m
SOAK_SEED ?= 1
soak: build
	bash scripts/soak --duration $(DURATION) --seed $(SOAK_SEED) --build $(BUILD_DIR)

fuzz: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target trn_fuzz_build
	bash scripts/fuzz --bin $(BUILD_DIR)/fuzz/bin --work $(BUILD_DIR)/fuzz-work --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

# `make run` builds what the run needs (trnsim: the RTL, the chip model, cosim and firmware), not the test and
# benchmark binaries, so that a fresh machine gets to the result sooner; `make build` builds everything. The workload
# is `trnsim run`'s default, transformer-block (GPT-2 small, 128 tokens, tiny config, RTL Tensor Engine); pass others
# with RUN_ARGS="--workload NAME ...".
run: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target trnsim
	$(BUILD_DIR)/bin/trnsim run $(RUN_ARGS)

# Seeded regression of one list of tests/regress/lists.txt (docs/verification.md): builds the runner and the test
# binaries the list names, runs it on $(JOBS) cores and writes JUnit to <build>/regress/$(LIST).xml.
# LIST=long also needs the large Tensor Engines, so it runs in $(BUILD_DIR)-long (-DTRNSIM_LARGE_TE=ON) like test-long.
REGRESS_BUILD = $(if $(filter long,$(LIST)),$(BUILD_DIR)-long,$(BUILD_DIR))
.PHONY: regress
regress: deps
	$(if $(filter long,$(LIST)),cmake -S . -B $(REGRESS_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTRNSIM_LARGE_TE=ON $(CMAKE_ARGS),test -f $(REGRESS_BUILD)/build.ninja || cmake -S . -B $(REGRESS_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS))
	cmake --build $(REGRESS_BUILD) -j $(JOBS) --target trnsim_regress
	@targets=$$($(REGRESS_BUILD)/bin/trnsim_regress targets --list $(LIST)) || exit 2; \
	  echo "cmake --build $(REGRESS_BUILD) -j $(JOBS) --target" $$targets; \
	  cmake --build $(REGRESS_BUILD) -j $(JOBS) --target $$targets
	TRNSIM_BUILD_DIR=$(REGRESS_BUILD) scripts/regress --list $(LIST) -j $(JOBS) --junit $(REGRESS_BUILD)/regress/$(LIST).xml $(REGRESS_ARGS)

# RTL coverage (docs/verification.md, "Coverage"): a coverage build of the RTL in $(BUILD_DIR)-cov (-DTRNSIM_COVERAGE=ON),
# the RTL tests, verilator_coverage merge, genhtml HTML in $(BUILD_DIR)/coverage/html, a per-block summary on the terminal.
# COVERAGE_ARGS="--te-sizes 4x4,8x8" builds fewer Tensor Engine sizes.
coverage: deps
	bash scripts/coverage --build $(BUILD_DIR)-cov --out $(BUILD_DIR)/coverage -j $(JOBS) $(COVERAGE_ARGS)

lint: deps
	@bash scripts/lint-rtl.sh

# The same RTL, model and suite with another Verilator than Debian's (docs/verification.md, "Verilator versions"):
# lint, a build in build-verilator-<version>, the default suite. VERILATOR= names its bin/verilator.
VERILATOR ?=
check-verilator: deps
	@test -n "$(VERILATOR)" || { echo "make check-verilator: VERILATOR=/path/to/bin/verilator is required"; exit 2; }
	bash scripts/check-verilator --verilator $(VERILATOR) --jobs $(JOBS)

bench: deps
	bash scripts/bench.sh $(BUILD_DIR)-bench

# The register map is written once (spec/registers.json); the C++ header is generated at build time, the
# Markdown reference here (the test registers_doc_up_to_date checks it is current).
registers-doc:
	cmake -DIN=spec/registers.json -DDOC=docs/registers.md -P scripts/gen-registers.cmake

# The ISA facts (dtype codes, limits) are written once (spec/isa.json): the C++ header is generated at build time, the
# marked regions of rtl/fp/trn_fp_pkg.sv and rtl/te/trn_te_pkg.sv here (the test isa_spec_up_to_date checks them).
isa-gen:
	cmake -DIN=spec/isa.json -DSV_ROOT=. -P scripts/gen-isa.cmake

clean:
	rm -rf $(BUILD_DIR)
