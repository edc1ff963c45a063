# SPDX-License-Identifier: BSD-2-Clause
# fuse/: the FUSE 3 file system on libsqk (the library part of sqkfuse and `sqk mount`; the
# programs are linked by cli/cli.mk).
FUSE_LIBS = $(shell pkg-config --libs fuse3 2>/dev/null)
SQKFUSE_LIB_OBJS := $(BUILD)/obj/fuse/ops.o $(BUILD)/obj/fuse/mount.o $(BUILD)/obj/fuse/nodes.o \
	$(BUILD)/obj/fuse/store.o $(BUILD)/obj/fuse/trace.o \
	$(BUILD)/obj/fuse/walk.o $(BUILD)/obj/fuse/daemon.o
