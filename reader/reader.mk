# reader/: the libsqk library (sources in reader/lib/, public headers in reader/include/sqk/,
# included as "sqk/sqk.h" through -Ireader/include).
LIBSQK_SRCS := $(wildcard reader/lib/*.c)
LIBSQK_OBJS := $(LIBSQK_SRCS:%.c=$(BUILD)/obj/%.o)
LIBSQK_A := $(BUILD)/lib/libsqk.a
LIBSQK_SONAME := libsqk.so.0
LIBSQK_SO := $(BUILD)/lib/$(LIBSQK_SONAME)
LIBSQK_PC := $(BUILD)/lib/libsqk.pc
# Installed as <sqk/sqk.h>, <sqk/sqk_check.h> and <sqk/common/*.h> (the layout the public
# headers include each other by), so none of them shadows a system header of the same name.
LIBSQK_HEADERS := reader/include/sqk/sqk.h reader/include/sqk/sqk_check.h
LIBSQK_COMMON_HEADERS := common/api.h common/error.h common/format.h common/io.h common/io_http.h \
	common/compressor.h common/integrity.h common/hint.h common/counts.h

LIBS_OUT := $(LIBSQK_A) $(LIBSQK_SO) $(LIBSQK_PC)

# The static and shared libraries carry common/ so users link one library.
$(LIBSQK_A): $(LIBSQK_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSQK_SO): $(LIBSQK_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIBSQK_SONAME) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)
	ln -sf $(LIBSQK_SONAME) $(BUILD)/lib/libsqk.so

$(LIBSQK_PC): reader/libsqk.pc.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install-lib: $(LIBS_OUT)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/sqk/common \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBSQK_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSQK_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIBSQK_SONAME) $(DESTDIR)$(PREFIX)/lib/libsqk.so
	install -m 644 $(LIBSQK_HEADERS) $(DESTDIR)$(PREFIX)/include/sqk/
	install -m 644 $(LIBSQK_COMMON_HEADERS) $(DESTDIR)$(PREFIX)/include/sqk/common/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' reader/libsqk.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libsqk.pc

.PHONY: install-lib
