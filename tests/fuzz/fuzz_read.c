/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target for libsqk's read path: opens the input as an image on a memory I/O object and
 * touches everything a mount would: every directory (walked iteratively, each visited once),
 * every inode, symlink target, xattr and regular file byte, with a bounded amount of work so a
 * crafted image that claims huge sizes or loops cannot stall a run. Then once more with reads
 * verified against the image's integrity data (with a smaller budget). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/io.h"
#include "sqk/sqk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	MAX_DIRS = 4096,           /* directories queued per input */
	MAX_ENTRIES = 1u << 16,    /* directory entries handled per input */
	MAX_LOOKUPS = 256,         /* sqk_lookup calls per input (exercise the directory index) */
	MAX_XATTR_CALLS = 512,     /* xattr list/get calls per input: each may scan a whole set */
	CHUNK = 64 * 1024,
	MAX_XATTR_LIST = 1u << 20,
};

#define MAX_OUTPUT ((uint64_t)64 << 20) /* file bytes read per input */

struct walk {
	struct sqk_image *img;
	struct sqk_inode *queue; /* directories still to list */
	size_t qhead, qlen;
	uint64_t *seen;          /* open-addressed set of directory refs (0 = empty slot) */
	size_t nseen;
	uint64_t out_left;
	unsigned entries, lookups, xattr_calls;
	uint8_t *buf;
};

/* Marks a directory ref as visited; false if it already was (or the set is full). */
static bool mark_seen(struct walk *w, uint64_t ref)
{
	uint64_t key = ref + 1; /* ref 0 is valid; 0 marks an empty slot */
	size_t cap = 2 * MAX_DIRS, i = (size_t)(key * 0x9e3779b97f4a7c15ull) % cap;

	if (w->nseen >= MAX_DIRS)
		return false;
	while (w->seen[i]) {
		if (w->seen[i] == key)
			return false;
		i = (i + 1) % cap;
	}
	w->seen[i] = key;
	w->nseen++;
	return true;
}

static void read_file(struct walk *w, const struct sqk_inode *in)
{
	uint64_t off = 0;

	/* First a read in the middle: the block index is entered without a sequential lead-in. */
	if (in->size > 2 * CHUNK && w->out_left >= CHUNK) {
		ssize_t n = sqk_read(w->img, in, w->buf, CHUNK, in->size / 2);
		if (n < 0)
			return;
		w->out_left -= (uint64_t)n;
	}
	while (w->out_left > 0) {
		size_t want = w->out_left < CHUNK ? (size_t)w->out_left : CHUNK;
		ssize_t n = sqk_read(w->img, in, w->buf, want, off);
		if (n <= 0)
			break;
		off += (uint64_t)n;
		w->out_left -= (uint64_t)n;
	}
}

static void read_xattrs(struct walk *w, const struct sqk_inode *in)
{
	size_t len = 0, vlen;
	char *names;

	if (in->xattr_idx == SQK_NONE32 || w->xattr_calls >= MAX_XATTR_CALLS)
		return;
	w->xattr_calls++;
	if (sqk_xattr_list(w->img, in, NULL, 0, &len) < 0 || len == 0 || len > MAX_XATTR_LIST)
		return;
	names = malloc(len);
	if (!names)
		return;
	if (sqk_xattr_list(w->img, in, names, len, &len) == 0) {
		for (size_t p = 0; p < len; p += strlen(names + p) + 1) {
			if (!memchr(names + p, 0, len - p) || w->xattr_calls >= MAX_XATTR_CALLS)
				break;
			w->xattr_calls++;
			if (sqk_xattr_get(w->img, in, names + p, NULL, 0, &vlen) == 0)
				sqk_xattr_get(w->img, in, names + p, w->buf, CHUNK, &vlen);
		}
	}
	free(names);
}

static void visit(struct walk *w, const struct sqk_inode *in)
{
	char target[4096];
	size_t tlen;

	read_xattrs(w, in);
	if (S_ISLNK(in->mode))
		sqk_readlink(w->img, in, target, sizeof(target), &tlen);
	else if (S_ISREG(in->mode))
		read_file(w, in);
	else if (S_ISDIR(in->mode) && w->qlen < MAX_DIRS && mark_seen(w, in->ref))
		w->queue[w->qlen++] = *in;
}

static void list_dir(struct walk *w, const struct sqk_inode *dir)
{
	struct sqk_dir_iter *it;
	struct sqk_dirent e;
	struct sqk_inode in, found;

	if (sqk_dir_open(w->img, dir, &it) < 0)
		return;
	while (w->entries < MAX_ENTRIES && sqk_dir_next(it, &e) == 1) {
		w->entries++;
		/* The first entries, then a sample further on where the directory index matters. */
		if (w->lookups < MAX_LOOKUPS &&
		    (sqk_dir_index(it) <= 16 || sqk_dir_index(it) % 64 == 0)) {
			w->lookups++;
			sqk_lookup(w->img, dir, e.name, e.name_len, &found);
		}
		if (sqk_inode_get(w->img, e.ref, &in) == 0)
			visit(w, &in);
	}
	sqk_dir_close(it);
}

/* Path resolution from the root, with "." and repeated slashes, one level down. */
static void lookup_paths(struct walk *w, const struct sqk_inode *root)
{
	struct sqk_dir_iter *it;
	struct sqk_dirent e;
	struct sqk_inode in;
	char path[2 * SQK_NAME_MAX + 16];

	if (sqk_dir_open(w->img, root, &it) < 0)
		return;
	for (int i = 0; i < 8 && sqk_dir_next(it, &e) == 1; i++) {
		snprintf(path, sizeof(path), "./%.*s//", (int)e.name_len, e.name);
		if (sqk_lookup_path(w->img, path, &in) == 0 && S_ISDIR(in.mode)) {
			snprintf(path, sizeof(path), "/%.*s/./%.*s", (int)e.name_len, e.name,
				 (int)e.name_len, e.name);
			sqk_lookup_path(w->img, path, &in);
		}
	}
	sqk_dir_close(it);
}

/* Opens the image and walks it (verify: reads checked against the integrity data). */
static void walk_image(struct sqk_io *io, bool verify, uint64_t budget)
{
	struct sqk_open_opts opts = {
		.size = sizeof(opts),
		.cache_bytes = verify ? 16u << 10 : 256u << 10, /* small: eviction happens */
		.readahead_blocks = 4,
		.threads = 1,
		.name = "fuzz",
		.no_verify = !verify,
	};
	struct walk w = { .out_left = budget };
	struct sqk_integ_trailer tr;
	struct sqk_inode root;

	w.queue = calloc(MAX_DIRS, sizeof(*w.queue));
	w.seen = calloc(2 * MAX_DIRS, sizeof(*w.seen));
	w.buf = malloc(CHUNK);
	if (!w.queue || !w.seen || !w.buf || sqk_image_open_io(io, &opts, &w.img) < 0)
		goto out;
	sqk_image_verified(w.img);
	sqk_image_integrity(w.img, &tr);
	sqk_lookup_path(w.img, "/", &root);
	if (sqk_image_root(w.img, &root) == 0) {
		mark_seen(&w, root.ref);
		read_xattrs(&w, &root);
		w.queue[w.qlen++] = root;
		lookup_paths(&w, &root);
	}
	while (w.qhead < w.qlen && w.entries < MAX_ENTRIES)
		list_dir(&w, &w.queue[w.qhead++]);
#ifdef FUZZ_VERBOSE
	fprintf(stderr, "verify %d: dirs %zu entries %u bytes %llu\n", verify, w.qlen, w.entries,
		(unsigned long long)(budget - w.out_left));
#endif
out:
	sqk_image_close(w.img);
	free(w.buf);
	free(w.seen);
	free(w.queue);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sqk_io *io = NULL;

	if (sqk_io_mem_create(data, size, &io) < 0)
		return 0;
	walk_image(io, false, MAX_OUTPUT);
	walk_image(io, true, MAX_OUTPUT / 16);
	sqk_io_destroy(io);
	return 0;
}
