# SPDX-License-Identifier: BSD-2-Clause
# squashkit — one non-recursive Makefile; each folder contributes a small .mk.
# Targets: all (default), check, bench, install, clean, deps.

# The version `sqk --version`, `sqkfuse --version` and libsqk.pc report.
VERSION := 0.2.0
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc
PKGS := libzstd liblzma zlib liblz4 lzo2 libxxhash libcrypto libcurl libarchive
TEST_PKGS := check

# Install missing Debian packages first (as root), or print the apt-get line.
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@sh scripts/install-deps.sh
	@touch $@

# libfuse3 is needed by `sqk mount` and sqkfuse only: without it (or with HAVE_FUSE=0) sqk is
# built without `mount` and sqkfuse is not built.
HAVE_FUSE ?= $(shell pkg-config --exists fuse3 2>/dev/null && echo 1 || echo 0)
FUSE_CFLAGS = $(if $(filter 1,$(HAVE_FUSE)),$(shell pkg-config --cflags fuse3 2>/dev/null),-DSQK_NO_FUSE)
# libcurl is needed by remote images (http, https, s3) only.
HAVE_REMOTE ?= $(shell pkg-config --exists libcurl 2>/dev/null && echo 1 || echo 0)
ifneq ($(HAVE_REMOTE),1)
PKGS := $(filter-out libcurl,$(PKGS))
endif
FEATURE_CFLAGS = $(if $(filter 1,$(HAVE_REMOTE)),-DSQK_HAVE_REMOTE=1)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(FUSE_CFLAGS) $(FEATURE_CFLAGS)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

OPT ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread -fPIC -fvisibility=hidden -I. -Iinclude
CFLAGS_ALL = $(BASE_CFLAGS) $(OPT) $(WARN) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS_ALL = -pthread $(EXTRA_LDFLAGS)

# Flags change => rebuild: objects depend on a stamp holding the flags.
FLAGS_STAMP := $(BUILD)/.flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL)' > $@
FORCE:

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The programs get VERSION; a new one rebuilds them (the stamp changes only with it).
VERSION_STAMP := $(BUILD)/.version
$(VERSION_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' > $@
VERSIONED_OBJS := $(BUILD)/obj/cli/sqk.o $(BUILD)/obj/fuse/mount.o $(BUILD)/obj/reader/lib/image.o
$(VERSIONED_OBJS): $(VERSION_STAMP)
$(VERSIONED_OBJS): CFLAGS_ALL += -DSQK_VERSION='"$(VERSION)"'

# The folders in dependency order (each includes and links only those before it):
# common/ -> reader/ (libsqk) -> mkimage/ (the builder) -> fuse/ -> cli/ (sqk, sqkfuse).
BINS :=
include common/common.mk
include reader/reader.mk
include mkimage/mkimage.mk
ifeq ($(HAVE_FUSE),1)
include fuse/fuse.mk
endif
include cli/cli.mk
include tests/tests.mk

.DEFAULT_GOAL := all
all: $(BINS) $(LIBS_OUT)

install: all install-lib install-cli
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/

# The manual pages (their .TH carrying VERSION) and the bash completion; sqkfuse's only when
# sqkfuse is built.
MANDIR := $(DESTDIR)$(PREFIX)/share/man
COMPLETIONDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
install_man = sed -e '/^\.TH/s/"squashkit [^"]*"/"squashkit $(VERSION)"/' $(1) > $(2) && chmod 644 $(2)
install-cli:
	install -d $(MANDIR)/man1 $(COMPLETIONDIR)
	$(call install_man,cli/man/sqk.1,$(MANDIR)/man1/sqk.1)
	install -m 644 cli/completion/sqk $(COMPLETIONDIR)/sqk
ifeq ($(HAVE_FUSE),1)
	install -d $(MANDIR)/man8
	$(call install_man,cli/man/sqkfuse.8,$(MANDIR)/man8/sqkfuse.8)
	ln -sf sqk $(COMPLETIONDIR)/sqkfuse
endif

deps:
	@sh scripts/install-deps.sh

clean:
	rm -rf $(BUILD)

.PHONY: all install install-cli deps clean check bench FORCE
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
