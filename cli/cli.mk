# SPDX-License-Identifier: BSD-2-Clause
# cli/: the command line: the sqk dispatcher (cli/sqk.c) and its subcommands, sqkfuse
# (cli/sqkfuse.c), the manual pages (cli/man/) and the bash completion (cli/completion/).
# Linked last, on mkimage/, fuse/ and libsqk.
SQK_BIN := $(BUILD)/bin/sqk
CLI_SRCS := $(filter-out cli/sqk.c cli/sqkfuse.c,$(wildcard cli/*.c))
# `sqk tar` writes with libarchive (HAVE_TAR).
ifneq ($(HAVE_TAR),1)
CLI_SRCS := $(filter-out cli/tar.c cli/tar_walk.c,$(CLI_SRCS))
endif
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
SQK_OBJS := $(BUILD)/obj/cli/sqk.o $(CLI_OBJS)
BINS += $(SQK_BIN)

# The tools library (cli/lib/): what the programs share and libsqk's users do not need, the
# signal thread and the temporary-then-rename output file.
LIBTOOLS_SRCS := $(wildcard cli/lib/*.c)
LIBTOOLS := $(BUILD)/lib/libsqktools.a
$(LIBTOOLS): $(LIBTOOLS_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SQK_BIN): $(SQK_OBJS) $(LIBMKIMAGE) $(LIBTOOLS) $(LIBSQK_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(SQK_LINK_EXTRA) $(PKG_LIBS)

ifeq ($(HAVE_FUSE),1)
SQKFUSE_BIN := $(BUILD)/bin/sqkfuse
BINS += $(SQKFUSE_BIN)

$(SQKFUSE_BIN): $(BUILD)/obj/cli/sqkfuse.o $(SQKFUSE_LIB_OBJS) $(LIBTOOLS) $(LIBSQK_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(FUSE_LIBS) $(PKG_LIBS)

# `sqk mount` is the same front-end inside the sqk tool.
$(SQK_BIN): $(SQKFUSE_LIB_OBJS)
SQK_LINK_EXTRA = $(FUSE_LIBS)
endif
