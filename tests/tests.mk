# SPDX-License-Identifier: BSD-2-Clause
# tests/: Check unit tests (one suite per module), lint checks, integration scripts, benchmarks.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
# Suites that need an optional feature are left out of a build without it, and say so: the
# codecs' suites need lzo and lz4, the remote backend's those that include its headers.
UNIT_NEEDS_LZO := test_compressors test_meta test_mkoptions
UNIT_NEEDS_LZ4 := $(UNIT_NEEDS_LZO)
UNIT_NEEDS_REMOTE := $(basename $(notdir $(shell grep -l '"reader/remote/' $(UNIT_SRCS))))
UNIT_FEATURES := LZO LZ4 REMOTE
UNIT_SKIPPED := $(sort $(foreach f,$(UNIT_FEATURES),$(if $(call feature_on,$(f)),,$(UNIT_NEEDS_$(f)))))
UNIT_BINS := $(filter-out $(UNIT_SKIPPED:%=$(BUILD)/tests/%),$(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%))
UNIT_HELPERS := $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c))
UNIT_HELPER_OBJS := $(UNIT_HELPERS:%.c=$(BUILD)/obj/%.o)

# Every suite links the builder, libsqk and the tools library; only the command line's own
# suites link its modules (test_mkoptions: sqk mkimage's parser; test_progress: the progress line).
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(UNIT_HELPER_OBJS) $(LIBMKIMAGE) $(LIBTOOLS) $(LIBSQK_ALL) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(CHECK_LIBS) $(PKG_LIBS)

$(BUILD)/tests/test_mkoptions: $(BUILD)/obj/cli/mkimage_options.o $(BUILD)/obj/cli/mkimage_mks.o
$(BUILD)/tests/test_progress: $(BUILD)/obj/cli/progress.o
$(BUILD)/tests/test_listing: $(BUILD)/obj/cli/listing.o $(BUILD)/obj/cli/select.o $(BUILD)/obj/cli/cmd.o $(BUILD)/obj/cli/progress.o
# test_diff: sqk diff's walk, sides and stored-block comparison (not its main).
$(BUILD)/tests/test_diff: $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out cli/diff.c,$(wildcard cli/diff*.c))) \
	$(BUILD)/obj/cli/cmd.o $(BUILD)/obj/cli/progress.o

# test_fuse_walk tests sqkfuse's walk detection (fuse/walk.c, which needs no libfuse).
$(BUILD)/tests/test_fuse_walk: $(BUILD)/obj/fuse/walk.o

SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The scout's suite asserts what reaches the page cache within a time, which a VM that reclaims
# pages on its own (DAMON) can upset; it runs up to three times, and fails when every run does.
UNIT_RETRY := test_prefetch

# The Check suites and the fuzz corpus's replay (tests/fuzz/fuzz.mk adds it to unit): seconds,
# no root.
check-unit: unit
unit_skip_why = $(foreach f,$(UNIT_FEATURES),$(if $(filter $(1),$(UNIT_NEEDS_$(f))),$(if $(call feature_on,$(f)),,HAVE_$(f)=0)))
unit: $(UNIT_BINS)
	@$(foreach t,$(UNIT_SKIPPED),echo "== skipped $(t): built with $(strip $(call unit_skip_why,$(t)))";) :
	@for t in $(UNIT_BINS); do echo "== $$t"; tries=1; \
		case " $(UNIT_RETRY) " in *" $${t##*/} "*) tries=3 ;; esac; n=1; \
		until CK_FORK=yes $$t; do \
			[ $$n -lt $$tries ] || exit 1; n=$$((n + 1)); \
			echo "== $$t again ($$n of $$tries: it depends on the page cache's timing)"; \
		done; done

TSAN_FLAGS := -fsanitize=thread

# The suites and the programs again under ASan/UBSan and under ThreadSanitizer (their programs
# serve the integration suite's t_40 and t_41).
check-san:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/san OPT='-O1 -g' \
		EXTRA_CFLAGS='$(SAN_FLAGS)' EXTRA_LDFLAGS='$(SAN_FLAGS)' unit all
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 $(MAKE) --no-print-directory BUILD=$(BUILD)/tsan \
		OPT='-O1 -g' EXTRA_CFLAGS='$(TSAN_FLAGS)' EXTRA_LDFLAGS='$(TSAN_FLAGS)' unit all

# Quick facts about the tree and the library: licence lines, the public headers in C99, C11 and
# C++17, the symbols libsqk exports, the options the docs name; and a clang build of the
# programs and the Check suites without a warning (gcc's is the default build).
unit-build: $(UNIT_BINS)
check-lint: all
	$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)/clang WERROR=1 all unit-build
	@set -e; for t in tests/lint/*.sh; do echo "== $$t"; \
		SQK=$(abspath $(BUILD)/bin/sqk) SQKFUSE=$(abspath $(BUILD)/bin/sqkfuse) \
		LIBSQK_DIR=$(abspath $(BUILD)/lib) bash $$t; done

# Real programs: kernel and FUSE mounts, the peers as oracles, nginx and S3 servers on loopback.
san_bin = $(if $(wildcard $(BUILD)/$(1)/bin/sqk),$(abspath $(BUILD)/$(1)/bin/sqk))
check-integration: all
	SQK=$(abspath $(BUILD)/bin/sqk) SQK_SAN=$(call san_bin,san) SQK_TSAN=$(call san_bin,tsan) \
		sh tests/integration/run.sh

# make check: the test tools first (installed as root; elsewhere the tests that need a missing
# one skip and say so), then everything with warnings as errors.
check:
	@if [ "$$(id -u)" = 0 ]; then sh scripts/install-deps.sh test; \
	else sh scripts/install-deps.sh test || echo "check: tests that need the missing tools skip"; fi
	$(MAKE) --no-print-directory WERROR=1 all check-unit check-lint check-san
	$(MAKE) --no-print-directory WERROR=1 check-integration

# The zstd floor tool (tests/bench/zstd_floor.c): sqk's zstd compressor beside raw libzstd
# settings, block by block, for bench_floor.sh.
FLOOR_BIN := $(BUILD)/bench/zstd_floor
$(FLOOR_BIN): $(BUILD)/obj/tests/bench/zstd_floor.o $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

# make bench runs every benchmark; BENCH_ONLY (make variable or environment) runs some of
# them: build (bench.sh), read, remote, many, app, floor (bench_floor.sh), e.g.
# `make bench BENCH_ONLY="app remote"`.
BENCH_ONLY ?= build read remote many app floor
bench_run = $(if $(filter $(1),$(BENCH_ONLY)),SQK=$(abspath $(BUILD)/bin/sqk) $(2),@: skipped $(1))

bench: all $(FLOOR_BIN)
	$(call bench_run,build,sh tests/bench/bench.sh)
	$(call bench_run,read,bash tests/bench/bench_read.sh)
	$(call bench_run,remote,bash tests/bench/bench_remote.sh)
	$(call bench_run,many,bash tests/bench/bench_many.sh)
	$(call bench_run,app,bash tests/bench/bench_app.sh)
	$(call bench_run,floor,ZSTD_FLOOR=$(abspath $(FLOOR_BIN)) sh tests/bench/bench_floor.sh)

.PHONY: unit unit-build check-unit check-san check-lint check-integration

include tests/fuzz/fuzz.mk

# test_select: the readers' selection of entries and option parser (cli/select.c, cmdopt.c).
$(BUILD)/tests/test_select: $(BUILD)/obj/cli/select.o $(BUILD)/obj/cli/cmdopt.o $(BUILD)/obj/cli/cmd.o $(BUILD)/obj/cli/progress.o
