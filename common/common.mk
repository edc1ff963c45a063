# SPDX-License-Identifier: BSD-2-Clause
# common/: format structures, errors, I/O vtable, compressors, metadata blocks (what the reader
# and the builder share; the HTTP/S3 backend is the reader's, in reader/remote/).
COMMON_SRCS := common/error.c common/abi.c common/grow.c common/format.c common/io.c common/meta.c \
	common/integ_trailer.c common/integ_writer.c common/integ_reader.c common/integ_fast.c \
	common/integ_extent.c common/integ_locate.c common/sig_keys.c common/sig_block.c \
	common/sig_sign.c \
	common/hint.c common/parse.c common/datestr.c common/inode_codec.c common/compressor.c common/bytes.c \
	common/json.c common/verity.c common/thread.c common/comp_zstd.c common/comp_xz.c common/comp_gzip.c \
	$(if $(filter 1,$(HAVE_LZ4)),common/comp_lz4.c) $(if $(filter 1,$(HAVE_LZO)),common/comp_lzo.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/obj/%.o)
LIBCOMMON := $(BUILD)/lib/libsqkcommon.a
$(LIBCOMMON): $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
