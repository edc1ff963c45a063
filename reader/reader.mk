# SPDX-License-Identifier: BSD-2-Clause
# reader/: the libsqk library (sources in reader/lib/, the HTTP/S3 backend in reader/remote/,
# public headers in include/sqk/, included as "sqk/sqk.h" through -Iinclude).
# The backend (libcurl; libcrypto for S3) only with HAVE_REMOTE=1; else none.c defines the same
# exported functions, refusing URLs. url.c (which paths are URLs, header lines) is in both.
ifeq ($(HAVE_REMOTE),1)
LIBSQK_REMOTE_SRCS := $(filter-out reader/remote/none.c,$(wildcard reader/remote/*.c))
else
LIBSQK_REMOTE_SRCS := reader/remote/url.c reader/remote/none.c
endif
LIBSQK_SRCS := $(wildcard reader/lib/*.c) $(LIBSQK_REMOTE_SRCS)
LIBSQK_OBJS := $(LIBSQK_SRCS:%.c=$(BUILD)/obj/%.o)
LIBSQK_A := $(BUILD)/lib/libsqk.a
# The same objects with every symbol visible, for the tree's own programs and tests, which use
# the internals; libsqk.a is what users link.
LIBSQK_ALL := $(BUILD)/lib/internal/libsqk-all.a
# The SONAME's number is the ABI's (docs/library.md, "ABI and SONAME"); the version script
# exports exactly the API, every other symbol (the codecs, the builder's and the tools' helpers)
# stays local: they come from the static libraries.
LIBSQK_SONAME := libsqk.so.2
LIBSQK_MAP := reader/libsqk.map
LIBSQK_SO := $(BUILD)/lib/$(LIBSQK_SONAME)
LIBSQK_PC := $(BUILD)/lib/libsqk.pc
# The public headers, installed as <sqk/*.h>: include/sqk/ holds exactly what is installed.
LIBSQK_HEADERS := $(wildcard include/sqk/*.h)

LIBS_OUT := $(LIBSQK_A) $(LIBSQK_SO) $(LIBSQK_PC)

# The static and shared libraries carry common/ so users link one library. libsqk.a holds one
# object linked from all of them in which every symbol but the API (the hidden ones) is made
# local, so that a static link sees the same names as the shared library exports.
$(LIBSQK_ALL): $(LIBSQK_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSQK_A): $(LIBSQK_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(LD) -r -o $(BUILD)/lib/libsqk.o $^
	$(OBJCOPY) --localize-hidden $(BUILD)/lib/libsqk.o
	rm -f $@ && ar rcs $@ $(BUILD)/lib/libsqk.o

$(LIBSQK_SO): $(LIBSQK_OBJS) $(COMMON_OBJS) $(LIBSQK_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIBSQK_SONAME) -Wl,--version-script=$(LIBSQK_MAP) $(LDFLAGS_ALL) \
		-o $@ $(filter %.o,$^) $(LIBSQK_LIBS)
	ln -sf $(LIBSQK_SONAME) $(BUILD)/lib/libsqk.so

# libsqk.pc requires the libraries of the features built (LIBSQK_PKGS).
$(LIBSQK_PC): reader/libsqk.pc.in Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@REQUIRES@|$(LIBSQK_PKGS)|' $< > $@

install-lib: $(LIBS_OUT)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/sqk \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBSQK_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSQK_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIBSQK_SONAME) $(DESTDIR)$(PREFIX)/lib/libsqk.so
	install -m 644 $(LIBSQK_HEADERS) $(DESTDIR)$(PREFIX)/include/sqk/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@REQUIRES@|$(LIBSQK_PKGS)|' reader/libsqk.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libsqk.pc

.PHONY: install-lib
