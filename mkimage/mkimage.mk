# mkimage/: the image builder behind `sqk mkimage`.
MKIMAGE_SRCS := $(wildcard mkimage/*.c)
MKIMAGE_OBJS := $(MKIMAGE_SRCS:%.c=$(BUILD)/obj/%.o)
LIBMKIMAGE := $(BUILD)/lib/libsqkmkimage.a

$(LIBMKIMAGE): $(MKIMAGE_OBJS) $(SIGWATCH_OBJ) $(OUTFILE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
