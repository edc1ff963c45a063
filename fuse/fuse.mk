# fuse/: sqkfuse, the FUSE 3 front-end on libsqk (also reached as `sqk mount`).
FUSE_LIBS = $(shell pkg-config --libs fuse3 2>/dev/null)
SQKFUSE_BIN := $(BUILD)/bin/sqkfuse
SQKFUSE_LIB_OBJS := $(BUILD)/obj/fuse/sqkfuse.o $(BUILD)/obj/fuse/nodes.o $(BUILD)/obj/fuse/store.o \
	$(BUILD)/obj/fuse/trace.o

BINS += $(SQKFUSE_BIN)

# Temporary (issue 18, branch i18-walk): the FUSE operations keep libsqk's by-value directory
# iterator through a private shim until they move to sqk_dir_open.
$(SQKFUSE_LIB_OBJS): CFLAGS_ALL += -include reader/lib/dir_compat.h

$(SQKFUSE_BIN): $(BUILD)/obj/fuse/main.o $(SQKFUSE_LIB_OBJS) $(SIGWATCH_OBJ) $(OUTFILE_OBJ) $(LIBSQK_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(FUSE_LIBS) $(PKG_LIBS)

# `sqk mount` is the same front-end inside the sqk tool.
$(SQK_BIN): $(SQKFUSE_LIB_OBJS)
SQK_LINK_EXTRA = $(FUSE_LIBS)
