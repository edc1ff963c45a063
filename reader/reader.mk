# reader/: the sqk command-line tool (the reader library arrives with issue 3).
SQK_BIN := $(BUILD)/bin/sqk
SQK_OBJS := $(BUILD)/obj/reader/sqk.o
BINS += $(SQK_BIN)

$(SQK_BIN): $(SQK_OBJS) $(LIBMKIMAGE) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)
