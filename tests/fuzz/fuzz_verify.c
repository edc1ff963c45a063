/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target for the image checker, and an oracle for its verdict. sqk_check_image runs over the
 * input on a memory I/O object with one thread and a report callback that drops every finding:
 * it must survive any bytes (report, never crash, hang or allocate beyond what the image
 * justifies). When it calls the image clean (0 findings), everything a mount or an extraction
 * does must then work through the public API: the image opens, every directory lists to its end,
 * every entry is found again by name and its inode decodes as the entry says, every regular file
 * reads completely (byte count = size), every xattr lists and every value reads, every symlink
 * target reads (a C string, not empty), and the walk meets every inode number. Any failure
 * aborts, so the fuzzer records the image (either the checker missed a fault it must report, or
 * the reader fails on a valid image). The walk is bounded (entries, directories, bytes, lookup
 * and xattr work) and guards against directory loops itself. It runs unverified, then (for
 * images with integrity data) with every read verified. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/io.h"
#include "sqk/sqk.h"
#include "sqk/sqk_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	MAX_DIRS = 1u << 14,        /* directories walked per image */
	MAX_ENTRIES = 1u << 17,     /* directory entries handled per image */
	MAX_LOOKUP_WORK = 1u << 20, /* entries sqk_lookup may scan, summed over the lookups */
	MAX_XATTR_WORK = 1u << 18,  /* xattr pairs the list/get calls may scan, summed */
	CHUNK = 64 * 1024,          /* bytes per sqk_read call */
};

#define MAX_BYTES ((uint64_t)16 << 20) /* file and xattr value bytes read per walk */

/* An open-addressed set of u64 keys of fixed capacity (0 marks an empty slot). */
struct set {
	uint64_t *slot;
	size_t cap, n;
};

struct oracle {
	struct sqk_image *img;
	bool verify;
	bool truncated;             /* a budget ran out: the walk is not complete */
	bool stop;                  /* the entry budget ran out: no more listing */
	struct sqk_inode *queue;    /* directories to list (at most MAX_DIRS) */
	size_t qhead, qlen;
	struct set dirs, files;     /* refs of the directories queued, the files read */
	uint8_t *inos;              /* inode numbers met, one bit each */
	uint64_t nino;              /* distinct inode numbers met */
	uint64_t bytes_left;
	uint64_t entries, lookup_work, xattr_work;
	uint8_t *buf;
	pthread_mutex_t mu;         /* log: readahead workers may log too */
	char log[512];              /* the library's last message */
};

/* The oracle's verdict: the checker called the image clean, yet reading it failed. */
__attribute__((noreturn, format(printf, 3, 4))) static void fail(struct oracle *o, int rc,
								const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&o->mu);
	fprintf(stderr, "fuzz_verify: the checker calls the image clean, but (%s reads) ",
		o->verify ? "verified" : "unverified");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s [%s]\n", rc ? sqk_strerror(rc) : "mismatch", o->log);
	pthread_mutex_unlock(&o->mu);
	abort();
}

static void keep_log(void *ctx, const char *msg)
{
	struct oracle *o = ctx;

	pthread_mutex_lock(&o->mu);
	snprintf(o->log, sizeof(o->log), "%s", msg);
	pthread_mutex_unlock(&o->mu);
}

/* Adds key: 1 when new, 0 when present, -1 when the set is full. */
static int set_add(struct set *s, uint64_t key)
{
	size_t i;

	key++; /* ref 0 is valid; 0 marks an empty slot */
	i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) % s->cap;
	while (s->slot[i]) {
		if (s->slot[i] == key)
			return 0;
		i = (i + 1) % s->cap;
	}
	if (2 * (s->n + 1) > s->cap)
		return -1;
	s->slot[i] = key;
	s->n++;
	return 1;
}

/* Reads [off, end) of a file in CHUNK calls; each must return exactly what was asked. */
static void read_range(struct oracle *o, const struct sqk_inode *in, uint64_t off, uint64_t end)
{
	while (off < end) {
		size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
		ssize_t n = sqk_read(o->img, in, o->buf, want, off);

		if (n < 0)
			fail(o, (int)n, "inode %u: read of %zu bytes at %llu", in->ino, want,
			     (unsigned long long)off);
		if ((size_t)n != want)
			fail(o, 0, "inode %u (size %llu): read of %zu bytes at %llu gave %zd",
			     in->ino, (unsigned long long)in->size, want,
			     (unsigned long long)off, n);
		off += want;
		o->bytes_left -= want;
	}
}

/* Reads a whole file (within the budget: else its head and its last chunk); a read at its end
 * gives 0. Hard links are read once. */
static void read_file(struct oracle *o, const struct sqk_inode *in)
{
	uint64_t tail = in->size < CHUNK ? in->size : CHUNK, head = in->size - tail;
	ssize_t n;

	if (set_add(&o->files, in->ref) <= 0)
		return;
	if (in->size > o->bytes_left) {
		o->truncated = true;
		if (o->bytes_left < tail)
			return;
		head = o->bytes_left - tail < head ? o->bytes_left - tail : head;
	}
	read_range(o, in, 0, head);
	read_range(o, in, in->size - tail, in->size);
	n = sqk_read(o->img, in, o->buf, CHUNK, in->size);
	if (n != 0)
		fail(o, n < 0 ? (int)n : 0, "inode %u: read at its end gave %zd", in->ino, n);
}

/* Gets the value of xattr name: its size first, then the bytes (same size). */
static void read_xattr_value(struct oracle *o, const struct sqk_inode *in, const char *name)
{
	size_t vlen = 0, got = 0;
	int rc = sqk_xattr_get(o->img, in, name, NULL, 0, &vlen);
	void *v;

	if (rc)
		fail(o, rc, "inode %u: size of xattr %s", in->ino, name);
	if (vlen > o->bytes_left) {
		o->truncated = true;
		return;
	}
	o->bytes_left -= vlen;
	v = malloc(vlen ? vlen : 1);
	if (!v)
		abort();
	rc = sqk_xattr_get(o->img, in, name, v, vlen ? vlen : 1, &got);
	free(v);
	if (rc || got != vlen)
		fail(o, rc, "inode %u: value of xattr %s (%zu bytes, got %zu)", in->ino, name, vlen,
		     got);
}

/* Lists the xattrs of in and reads every value. */
static void read_xattrs(struct oracle *o, const struct sqk_inode *in)
{
	size_t len = 0, len2 = 0, count = 0;
	char *names;
	int rc;

	if (in->xattr_idx == SQK_NONE32)
		return;
	rc = sqk_xattr_list(o->img, in, NULL, 0, &len);
	if (rc)
		fail(o, rc, "inode %u: size of the xattr list", in->ino);
	if (len == 0 || o->xattr_work >= MAX_XATTR_WORK) {
		o->truncated |= len != 0;
		return;
	}
	names = malloc(len);
	if (!names)
		abort();
	rc = sqk_xattr_list(o->img, in, names, len, &len2);
	if (rc || len2 != len || names[len - 1] != 0)
		fail(o, rc, "inode %u: xattr list (%zu bytes, got %zu)", in->ino, len, len2);
	for (size_t p = 0; p < len; p += strlen(names + p) + 1)
		count++;
	o->xattr_work += count;
	for (size_t p = 0; p < len && o->xattr_work + count <= MAX_XATTR_WORK;
	     p += strlen(names + p) + 1) {
		o->xattr_work += count;
		read_xattr_value(o, in, names + p);
	}
	free(names);
}

static void read_link(struct oracle *o, const struct sqk_inode *in)
{
	char target[SQK_SYMLINK_MAX + 1];
	size_t len = 0;
	int rc = sqk_readlink(o->img, in, target, sizeof(target), &len);

	if (rc || len != in->size || len == 0 || strlen(target) != len)
		fail(o, rc, "inode %u: symlink target (%llu bytes, got %zu)", in->ino,
		     (unsigned long long)in->size, len);
}

/* Everything an inode holds; directories are queued (each once: a second meeting is a loop the
 * checker must have reported). */
static void visit(struct oracle *o, const struct sqk_inode *in)
{
	int rc;

	if (!(o->inos[in->ino / 8] & 1u << in->ino % 8)) {
		o->inos[in->ino / 8] |= (uint8_t)(1u << in->ino % 8);
		o->nino++;
	}
	read_xattrs(o, in);
	if (S_ISLNK(in->mode))
		read_link(o, in);
	else if (S_ISREG(in->mode))
		read_file(o, in);
	if (!S_ISDIR(in->mode))
		return;
	rc = set_add(&o->dirs, in->ref);
	if (rc == 0)
		fail(o, 0, "directory inode %u (ref %llu) is reached twice", in->ino,
		     (unsigned long long)in->ref);
	if (rc > 0)
		o->queue[o->qlen++] = *in;
	else
		o->truncated = true;
}

/* Looks e up by name in dir (within the lookup budget): it must lead to e's inode. */
static void lookup_entry(struct oracle *o, const struct sqk_inode *dir, const struct sqk_dirent *e,
			 uint64_t index)
{
	uint64_t cost = dir->index_count ? dir->index_count + 1024u : index + 1;
	struct sqk_inode found = { .ref = SQK_NONE64 };
	int rc;

	if (o->lookup_work + cost > MAX_LOOKUP_WORK) {
		o->truncated = true;
		return;
	}
	o->lookup_work += cost;
	rc = sqk_lookup(o->img, dir, e->name, e->name_len, &found);
	if (rc || found.ref != e->ref)
		fail(o, rc, "directory inode %u: lookup of %.*s (ref %llu, found %llu)", dir->ino,
		     (int)e->name_len, e->name, (unsigned long long)e->ref,
		     (unsigned long long)found.ref);
}

/* Lists dir to its end: every entry looked up, its inode decoded (as the entry says) and
 * visited. */
static void list_dir(struct oracle *o, const struct sqk_inode *dir)
{
	struct sqk_dir_iter *it;
	struct sqk_dirent e;
	struct sqk_inode in;
	int rc = sqk_dir_open(o->img, dir, &it);

	if (rc)
		fail(o, rc, "directory inode %u: listing", dir->ino);
	while ((rc = sqk_dir_next(it, &e)) == 1) {
		if (o->entries++ >= MAX_ENTRIES) {
			o->truncated = o->stop = true;
			sqk_dir_close(it);
			return;
		}
		lookup_entry(o, dir, &e, sqk_dir_index(it));
		rc = sqk_inode_get(o->img, e.ref, &in);
		if (rc)
			fail(o, rc, "directory inode %u: inode of %.*s", dir->ino,
			     (int)e.name_len, e.name);
		if (in.ino != e.ino || sqk_basic_type(in.type) != e.type)
			fail(o, 0, "directory inode %u: %.*s says inode %u type %u, it is %u "
			     "type %u", dir->ino, (int)e.name_len, e.name, e.ino, e.type, in.ino,
			     in.type);
		visit(o, &in);
	}
	if (rc < 0)
		fail(o, rc, "directory inode %u: listing after %llu entries", dir->ino,
		     (unsigned long long)sqk_dir_index(it));
	sqk_dir_close(it);
}

static bool oracle_init(struct oracle *o, uint32_t inode_count)
{
	o->queue = malloc(MAX_DIRS * sizeof(*o->queue));
	o->dirs = (struct set){ calloc(2 * MAX_DIRS, 8), 2 * MAX_DIRS, 0 };
	o->files = (struct set){ calloc(2 * MAX_ENTRIES, 8), 2 * MAX_ENTRIES, 0 };
	o->inos = calloc((size_t)inode_count / 8 + 1, 1);
	o->buf = malloc(CHUNK);
	o->bytes_left = o->verify ? MAX_BYTES / 4 : MAX_BYTES;
	return o->queue && o->dirs.slot && o->files.slot && o->inos && o->buf;
}

static void oracle_free(struct oracle *o)
{
	sqk_image_close(o->img);
	free(o->queue);
	free(o->dirs.slot);
	free(o->files.slot);
	free(o->inos);
	free(o->buf);
	pthread_mutex_destroy(&o->mu);
}

/* Opens the image checked clean and walks all of it from the root (breadth first). */
static void walk(struct sqk_io *io, bool verify, bool has_integrity)
{
	struct oracle o = { .verify = verify };
	struct sqk_open_opts opts = { .size = sizeof(opts),
				      .cache_bytes = 64u << 10, /* small: eviction happens */
				      .readahead_blocks = 4, .threads = 1, .name = "fuzz",
				      .no_verify = !verify, .log = keep_log, .log_ctx = &o };
	struct sqk_inode root;
	uint32_t count;
	int rc;

	pthread_mutex_init(&o.mu, NULL);
	rc = sqk_image_open_io(io, &opts, &o.img);
	if (rc)
		fail(&o, rc, "the image does not open");
	if (verify && sqk_image_verified(o.img) != has_integrity)
		fail(&o, 0, "reads verified: %d, integrity data: %d", sqk_image_verified(o.img),
		     has_integrity);
	count = sqk_image_super(o.img)->inode_count;
	if (!oracle_init(&o, count))
		abort();
	rc = sqk_image_root(o.img, &root);
	if (rc)
		fail(&o, rc, "root inode");
	visit(&o, &root);
	while (o.qhead < o.qlen && !o.stop)
		list_dir(&o, &o.queue[o.qhead++]);
	if (!o.truncated && o.nino != count)
		fail(&o, 0, "the walk met %llu inode numbers, the image has %u",
		     (unsigned long long)o.nino, count);
#ifdef FUZZ_VERBOSE
	fprintf(stderr, "verify %d: dirs %zu entries %llu inodes %llu/%u bytes %llu%s\n", verify,
		o.qlen, (unsigned long long)o.entries, (unsigned long long)o.nino, count,
		(unsigned long long)((verify ? MAX_BYTES / 4 : MAX_BYTES) - o.bytes_left),
		o.truncated ? " (truncated)" : "");
#endif
	oracle_free(&o);
}

static void drop_report(void *ctx, const struct sqk_check_report *r)
{
	(void)ctx;
	(void)r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sqk_check_opts opts = { .size = sizeof(opts), .threads = 1, .report = drop_report };
	struct sqk_check_result res = { .size = sizeof(res) };
	struct sqk_io *io = NULL;

	if (sqk_io_mem_create(data, size, &io) < 0)
		return 0;
	memset(&res, 0, sizeof(res));
	if (sqk_check_image(io, size, &opts, &res) == 0 && res.errors == 0) {
		walk(io, false, res.has_integrity);
		if (res.has_integrity)
			walk(io, true, true);
	}
	sqk_io_destroy(io);
	return 0;
}
