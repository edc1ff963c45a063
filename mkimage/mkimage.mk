# SPDX-License-Identifier: BSD-2-Clause
# mkimage/: the image builder behind `sqk mkimage` (a library; cli/mkimage.c is the command).
MKIMAGE_SRCS := $(wildcard mkimage/*.c)
# Tar input needs libarchive (HAVE_TAR).
ifneq ($(HAVE_TAR),1)
MKIMAGE_SRCS := $(filter-out mkimage/source_tar.c,$(MKIMAGE_SRCS))
endif
MKIMAGE_OBJS := $(MKIMAGE_SRCS:%.c=$(BUILD)/obj/%.o)
LIBMKIMAGE := $(BUILD)/lib/libsqkmkimage.a

$(LIBMKIMAGE): $(MKIMAGE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
