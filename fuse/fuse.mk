# fuse/: the FUSE 3 file system on libsqk (the library part of sqkfuse and `sqk mount`; the
# programs are linked by cli/cli.mk).
FUSE_LIBS = $(shell pkg-config --libs fuse3 2>/dev/null)
SQKFUSE_LIB_OBJS := $(BUILD)/obj/fuse/ops.o $(BUILD)/obj/fuse/mount.o $(BUILD)/obj/fuse/nodes.o \
	$(BUILD)/obj/fuse/store.o $(BUILD)/obj/fuse/trace.o

# Temporary (issue 18, branch i18-walk): the FUSE operations keep libsqk's by-value directory
# iterator through a private shim until they move to sqk_dir_open.
$(SQKFUSE_LIB_OBJS): CFLAGS_ALL += -include reader/lib/dir_compat.h
