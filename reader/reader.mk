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
# The SONAME's number is the ABI's (README, "Library ABI"); the version script exports exactly
# the API, every other symbol (the codecs, the builder's and the tools' helpers) stays local:
# they come from the static libraries.
LIBSQK_SONAME := libsqk.so.2
LIBSQK_MAP := reader/libsqk.map
LIBSQK_SO := $(BUILD)/lib/$(LIBSQK_SONAME)
LIBSQK_PC := $(BUILD)/lib/libsqk.pc
# The public headers, installed as <sqk/*.h>: include/sqk/ holds exactly what is installed.
LIBSQK_HEADERS := $(wildcard include/sqk/*.h)

LIBS_OUT := $(LIBSQK_A) $(LIBSQK_SO) $(LIBSQK_PC)

# The static and shared libraries carry common/ so users link one library.
$(LIBSQK_A): $(LIBSQK_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSQK_SO): $(LIBSQK_OBJS) $(COMMON_OBJS) $(LIBSQK_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIBSQK_SONAME) -Wl,--version-script=$(LIBSQK_MAP) $(LDFLAGS_ALL) \
		-o $@ $(filter %.o,$^) $(PKG_LIBS)
	ln -sf $(LIBSQK_SONAME) $(BUILD)/lib/libsqk.so

# Without the remote backend, libsqk.pc requires no libcurl.
LIBSQK_PC_SED = -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	$(if $(filter 1,$(HAVE_REMOTE)),,-e 's| libcurl||')
$(LIBSQK_PC): reader/libsqk.pc.in Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	sed $(LIBSQK_PC_SED) $< > $@

install-lib: $(LIBS_OUT)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/sqk \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBSQK_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSQK_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIBSQK_SONAME) $(DESTDIR)$(PREFIX)/lib/libsqk.so
	install -m 644 $(LIBSQK_HEADERS) $(DESTDIR)$(PREFIX)/include/sqk/
	sed $(LIBSQK_PC_SED) reader/libsqk.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libsqk.pc

.PHONY: install-lib
