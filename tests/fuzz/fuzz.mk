# SPDX-License-Identifier: BSD-2-Clause
# tests/fuzz/: libFuzzer targets over libsqk. `make unit` (so `make check`, normal and san builds)
# replays the checked-in corpus and crash reproducers through the same entry points with the
# normal compiler; `make fuzz SECONDS=N` builds them with clang + libFuzzer into build/fuzz/ and
# runs each for N seconds on a copy of its corpus (FUZZ_JOBS=N runs N processes per target).
# Seeds: tests/fuzz/corpus/NAME/ (regenerate with tests/fuzz/make_corpus.sh; the fuzz-* entries
# are inputs fuzzing found, merged by edge coverage with -merge=1 -use_counters=0, smallest first);
# reproducers of fixed crashes: tests/fuzz/crashes/, named after what they triggered, replayed by
# every target. fuzz_verify is also an oracle: an image the checker calls clean must read whole.
# fuzz_verify joins once the checker (sqk_check_image) is implemented in the library.
FUZZ_NAMES := read $(if $(shell grep -ls "^int sqk_check_image" reader/lib/*.c 2>/dev/null),verify)
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%)

$(BUILD)/tests/fuzz/replay_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o \
		$(BUILD)/obj/tests/fuzz/replay_main.o $(LIBSQK_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

# Every target replays its own corpus and all crash reproducers (any image is a valid input).
replay: $(FUZZ_REPLAYS)
	@set -e; for n in $(FUZZ_NAMES); do \
		$(BUILD)/tests/fuzz/replay_$$n tests/fuzz/corpus/$$n tests/fuzz/crashes; done

unit: replay

# --- make fuzz (clang, libFuzzer) ---
SECONDS ?= 60
FUZZ_JOBS ?= 1
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_RUN_FLAGS := -max_len=65536 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256

# Linked inside the clang sub-make below (BUILD=$(FUZZ_DIR)).
$(BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(LIBSQK_ALL)
	$(CC) $(LDFLAGS_ALL) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS)

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzz_%)

fuzz-build:
	@mkdir -p $(FUZZ_DIR)
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' \
		> $(FUZZ_DIR)/probe.c
	@clang -fsanitize=fuzzer $(FUZZ_DIR)/probe.c -o $(FUZZ_DIR)/probe 2>/dev/null || { \
		echo 'make fuzz needs clang with libFuzzer; install it with:'; \
		echo '  apt-get install -y clang libclang-rt-14-dev'; exit 1; }
	@rm -f $(FUZZ_DIR)/probe.c $(FUZZ_DIR)/probe
	$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) CC=clang OPT='-O1 -g' \
		EXTRA_CFLAGS='$(FUZZ_SAN) -fsanitize=fuzzer-no-link' EXTRA_LDFLAGS='$(FUZZ_SAN)' \
		fuzz-bins

# Runs each target for SECONDS on build/fuzz/corpus/NAME (seeded from the checked-in corpus and
# crashes; new inputs stay there, never in the source tree). Crashes go to build/fuzz/artifacts/.
fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/artifacts; status=0; \
	for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$n; \
		cp tests/fuzz/corpus/$$n/* tests/fuzz/crashes/* $(FUZZ_DIR)/corpus/$$n/ \
			2>/dev/null; \
		echo "== fuzz_$$n for $(SECONDS)s ($(FUZZ_JOBS) job(s))"; \
		if [ $(FUZZ_JOBS) -gt 1 ]; then par=-fork=$(FUZZ_JOBS); else par=; fi; \
		$(FUZZ_DIR)/fuzz_$$n $(FUZZ_RUN_FLAGS) $$par -max_total_time=$(SECONDS) \
			-artifact_prefix=$(FUZZ_DIR)/artifacts/$$n- $(FUZZ_DIR)/corpus/$$n \
			2> $(FUZZ_DIR)/fuzz_$$n.log || status=1; \
		tail -n 3 $(FUZZ_DIR)/fuzz_$$n.log; \
	done; \
	echo "logs: $(FUZZ_DIR)/fuzz_*.log; crashes (if any) in $(FUZZ_DIR)/artifacts/:"; \
	ls -l $(FUZZ_DIR)/artifacts/; exit $$status

.PHONY: replay fuzz fuzz-build fuzz-bins
.SECONDARY: $(FUZZ_NAMES:%=$(BUILD)/obj/tests/fuzz/fuzz_%.o) $(BUILD)/obj/tests/fuzz/replay_main.o
