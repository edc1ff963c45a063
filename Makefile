# SPDX-License-Identifier: BSD-2-Clause
# squashkit — one non-recursive Makefile; each folder contributes a small .mk.
# Targets: all (default), install, clean, deps, check-deps, check (check-unit, check-san,
# check-lint, check-integration), bench.

# The version `sqk --version`, `sqkfuse --version` and libsqk.pc report.
VERSION := 0.3.0
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc
LD ?= ld
OBJCOPY ?= objcopy
# Required libraries (pkg-config names). `make deps` installs them on Debian; `make` installs
# nothing.
PKGS := libzstd liblzma zlib libxxhash libcrypto
TEST_PKGS := check

# Optional features: 1 when pkg-config finds the library, or forced on the command line
# (`make HAVE_REMOTE=0`). A feature left out gives a message naming it at run time.
have = $(shell pkg-config --exists $(1) 2>/dev/null && echo 1 || echo 0)
HAVE_FUSE ?= $(call have,fuse3)
HAVE_REMOTE ?= $(call have,libcurl)
HAVE_TAR ?= $(call have,libarchive)
HAVE_LZO ?= $(call have,lzo2)
HAVE_LZ4 ?= $(call have,liblz4)
feature_on = $(filter 1,$(HAVE_$(1)))
# libsqk's own libraries (it links them), then the programs' (libfuse3 for sqkfuse and
# `sqk mount`, libarchive for tar input and `sqk tar`): libsqk.so never links those.
LIBSQK_PKGS := $(PKGS) $(if $(call feature_on,REMOTE),libcurl) $(if $(call feature_on,LZO),lzo2) \
	$(if $(call feature_on,LZ4),liblz4)
PKGS := $(LIBSQK_PKGS) $(if $(call feature_on,FUSE),fuse3) $(if $(call feature_on,TAR),libarchive)
FEATURE_CFLAGS := $(foreach f,FUSE REMOTE TAR LZO LZ4,-DSQK_HAVE_$(f)=$(if $(call feature_on,$(f)),1,0))

# Targets that need no library at all.
NOLIB_GOALS := deps check-deps check clean help
ifneq ($(filter-out $(NOLIB_GOALS),$(or $(MAKECMDGOALS),all)),)
MISSING_PKGS := $(strip $(foreach p,$(PKGS),$(if $(filter 1,$(call have,$(p))),,$(p))))
ifneq ($(MISSING_PKGS),)
$(error missing libraries (pkg-config): $(MISSING_PKGS). Install them with `sudo make deps`, or leave optional features out: HAVE_FUSE=0 HAVE_REMOTE=0 HAVE_TAR=0 HAVE_LZO=0 HAVE_LZ4=0)
endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(FEATURE_CFLAGS)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LIBSQK_LIBS := $(shell pkg-config --libs $(LIBSQK_PKGS) 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

OPT ?= -O2 -g
# Warnings are errors only when asked (WERROR=1: CI and `make check`), so that a newer
# compiler's new warning does not break a user's build; it does not force a rebuild.
WERROR ?= 0
WERROR_FLAG := $(if $(filter 1,$(WERROR)),-Werror)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread -fPIC -fvisibility=hidden -I. -Iinclude
CFLAGS_ALL = $(BASE_CFLAGS) $(OPT) $(WARN) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS_ALL = -pthread $(EXTRA_LDFLAGS)

# Flags change => rebuild: objects depend on a stamp holding the flags.
FLAGS_STAMP := $(BUILD)/.flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL)' > $@
FORCE:

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(WERROR_FLAG) -MMD -MP -c $< -o $@

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
yesno = $(if $(call feature_on,$(1)),yes,no)
all: $(BINS) $(LIBS_OUT)
	@echo "squashkit $(VERSION) in $(BUILD)/: fuse=$(call yesno,FUSE) remote=$(call yesno,REMOTE) tar=$(call yesno,TAR) lzo=$(call yesno,LZO) lz4=$(call yesno,LZ4)"

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

# The Debian packages for building (deps) and for testing (check-deps): installed with apt-get
# as root, otherwise the command is printed.
deps:
	@sh scripts/install-deps.sh build

check-deps:
	@sh scripts/install-deps.sh test

clean:
	rm -rf $(BUILD)

.PHONY: all install install-cli deps check-deps clean check bench FORCE
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
