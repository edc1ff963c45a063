# SPDX-License-Identifier: BSD-2-Clause
# reader/: the libsqk library (sources in reader/lib/, the HTTP/S3 backend in reader/remote/,
# public headers in include/sqk/, included as "sqk/sqk.h" through -Iinclude).
LIBSQK_SRCS := $(wildcard reader/lib/*.c) $(wildcard reader/remote/*.c)
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

$(LIBSQK_PC): reader/libsqk.pc.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install-lib: $(LIBS_OUT)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/sqk \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBSQK_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSQK_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIBSQK_SONAME) $(DESTDIR)$(PREFIX)/lib/libsqk.so
	install -m 644 $(LIBSQK_HEADERS) $(DESTDIR)$(PREFIX)/include/sqk/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' reader/libsqk.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libsqk.pc

.PHONY: install-lib
