# SPDX-License-Identifier: BSD-2-Clause
# mkimage/: the image builder behind `sqk mkimage` (a library; cli/mkimage.c is the command).
MKIMAGE_SRCS := $(wildcard mkimage/*.c)
MKIMAGE_OBJS := $(MKIMAGE_SRCS:%.c=$(BUILD)/obj/%.o)
LIBMKIMAGE := $(BUILD)/lib/libsqkmkimage.a

$(LIBMKIMAGE): $(MKIMAGE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
