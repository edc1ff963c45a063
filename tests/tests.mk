# SPDX-License-Identifier: BSD-2-Clause
# tests/: Check unit tests (one suite per module), integration scripts, benchmarks.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
# The suites of the remote backend (those including its headers) need it: not built, and said
# so, with HAVE_REMOTE=0.
ifneq ($(HAVE_REMOTE),1)
UNIT_SKIPPED := $(shell grep -l '"reader/remote/' $(UNIT_SRCS))
UNIT_SRCS := $(filter-out $(UNIT_SKIPPED),$(UNIT_SRCS))
endif
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_HELPERS := $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c))
UNIT_HELPER_OBJS := $(UNIT_HELPERS:%.c=$(BUILD)/obj/%.o)

# The suites that build images fill the builder's options through sqk mkimage's parser
# (cli/mkimage_options.c); the output-file and signal modules are the programs'.
UNIT_CLI_OBJS := $(BUILD)/obj/cli/mkimage_options.o $(SIGWATCH_OBJ) $(OUTFILE_OBJ)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(UNIT_HELPER_OBJS) $(UNIT_CLI_OBJS) $(LIBMKIMAGE) $(LIBSQK_A) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)

# test_progress tests a module of the sqk command itself (cli/progress.c), linked after
# the libraries: they come again after it for what it calls.
$(BUILD)/tests/test_progress: $(BUILD)/obj/cli/progress.o
$(BUILD)/tests/test_progress: CHECK_LIBS += $(LIBSQK_A) $(LIBCOMMON)

# test_fuse_walk tests sqkfuse's walk detection (fuse/walk.c, which needs no libfuse).
$(BUILD)/tests/test_fuse_walk: $(BUILD)/obj/fuse/walk.o

SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

unit: $(UNIT_BINS)
	@for t in $(basename $(notdir $(UNIT_SKIPPED))); do \
		echo "skipped $$t: built with HAVE_REMOTE=0"; done
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; CK_FORK=yes $$t; done

TSAN_FLAGS := -fsanitize=thread

# make check: unit tests, the same under ASan/UBSan and under ThreadSanitizer, then the
# integration suite (which runs the sanitized programs too).
check: all unit
	$(MAKE) --no-print-directory BUILD=$(BUILD)/san OPT='-O1 -g' \
		EXTRA_CFLAGS='$(SAN_FLAGS)' EXTRA_LDFLAGS='$(SAN_FLAGS)' unit all
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 $(MAKE) --no-print-directory BUILD=$(BUILD)/tsan \
		OPT='-O1 -g' EXTRA_CFLAGS='$(TSAN_FLAGS)' EXTRA_LDFLAGS='$(TSAN_FLAGS)' unit all
	SQK=$(abspath $(BUILD)/bin/sqk) SQK_SAN=$(abspath $(BUILD)/san/bin/sqk) \
		SQK_TSAN=$(abspath $(BUILD)/tsan/bin/sqk) sh tests/integration/run.sh

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

.PHONY: unit

include tests/fuzz/fuzz.mk
