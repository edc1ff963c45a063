/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the builder's fragment packing (mkimage/data.c), read back from images built in
 * memory: the order in which small files and tails are placed, that no tail crosses the end of
 * its fragment block, which files get a piece at all, and the same bytes and fragment table for
 * any thread count. The fragment table and blocks are decoded here from the superblock on, not
 * through libsqk's own table loader; inodes come from libsqk (sqk_lookup_path).
 *
 * The rule under test, as data.c states and implements it (block size bs):
 *  - A piece is the last size % bs bytes of each regular file that is not a duplicate of an
 *    earlier one and whose size is not a multiple of bs (--no-tailends: only files smaller than
 *    bs; --no-fragments: none).
 *  - Pieces are sorted by (1) type class: the name's bytes after its last '.', "" when it has no
 *    '.' or only a leading one, with "pyc" counted as "py"; (2) logical directory, in tree order
 *    (depth first, siblings in name byte order), a directory named __pycache__ counting as its
 *    parent; (3) stem: the name's bytes before its first '.'; (4) the file's own tree order.
 *    Strings compare bytewise, a prefix first. Pieces equal in (1)-(3) form a group.
 *  - Pieces are laid out in that order, each right after the previous one in the current block.
 *    A piece starts a new block when it does not fit in what is left; the first piece of a group
 *    also starts one when the whole group fits in one block but not in what is left. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/compressor.h"
#include "common/endian.h"
#include "sqk/error.h"
#include "common/format.h"
#include "sqk/io.h"
#include "common/meta.h"
#include "sqk/sqk.h"
#include "mkimage/build.h"
#include "mkimage/mk.h"
#include "mkimage/similar.h"
#include "testutil.h"

#define BS 4096u
#define MAXF 512
#define MAXD 16
#define NONE SQK_NONE32

/* A file of the synthetic tree; its bytes follow from (size, id, text). */
struct tfile {
	char rel[128];
	uint64_t size;
	uint32_t id;
	bool text;
};

static char scratch[64]; /* made by the parent process; holds every test's tree */
static char tree[96];
static struct tfile files[MAXF];
static size_t nfiles;
static char dirs[MAXD][64];
static size_t ndirs;

/* Unchecked fixture: runs in the parent, so the scratch directory goes even when a test fails. */
static void scratch_make(void)
{
	strcpy(scratch, "/tmp/sqk-frag-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static void scratch_remove(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	ck_assert_int_eq(system(cmd), 0);
}

static void tree_make(void)
{
	snprintf(tree, sizeof(tree), "%s/tree-XXXXXX", scratch);
	ck_assert_ptr_nonnull(mkdtemp(tree));
	nfiles = 0;
	ndirs = 0;
}

static void tree_remove(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

static void add_dir(const char *rel)
{
	char p[256];
	ck_assert_uint_lt(ndirs, MAXD);
	snprintf(dirs[ndirs++], sizeof(dirs[0]), "%s", rel);
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

/* The bytes of f: its id first (so files of one size differ unless made as copies), then
 * incompressible bytes or repetitive text that compresses. Caller frees. */
static uint8_t *content(const struct tfile *f)
{
	uint8_t *p = malloc(f->size ? f->size : 1);
	ck_assert_ptr_nonnull(p);
	if (f->text) {
		for (uint64_t i = 0; i < f->size; i++)
			p[i] = (uint8_t)"lorem ipsum\n"[(i + i / 97) % 12];
	} else {
		test_fill_random(p, f->size, f->id + 1);
	}
	for (uint64_t k = 0; k < 4 && k < f->size; k++)
		p[k] = (uint8_t)(f->id >> (8 * k));
	return p;
}

/* Creates a file, or (copy_of >= 0) a copy of files[copy_of] (size and text then ignored). */
static void add_file_as(const char *rel, uint64_t size, bool text, int copy_of)
{
	ck_assert_uint_lt(nfiles, MAXF);
	struct tfile *f = &files[nfiles];
	snprintf(f->rel, sizeof(f->rel), "%s", rel);
	f->size = copy_of >= 0 ? files[copy_of].size : size;
	f->text = copy_of >= 0 ? files[copy_of].text : text;
	f->id = copy_of >= 0 ? files[copy_of].id : (uint32_t)nfiles;
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	FILE *fp = fopen(p, "wb");
	ck_assert_ptr_nonnull(fp);
	uint8_t *data = content(f);
	ck_assert_uint_eq(fwrite(data, 1, f->size, fp), f->size);
	ck_assert_int_eq(fclose(fp), 0);
	free(data);
	nfiles++;
}

static void add_file(const char *rel, uint64_t size, bool text)
{
	add_file_as(rel, size, text, -1);
}

/* ---- building and decoding ---- */

/* o keeps pointers into argv, so it lives as long as the test program. */
enum { NO_TAILENDS = 1, NO_FRAGMENTS = 2 };

/* Builds the tree through sqk_build with 4K blocks, threads and flags (NO_TAILENDS,
 * NO_FRAGMENTS) into a new memory I/O (caller owns it). */
static struct sqk_io *build(const char *threads, unsigned flags)
{
	static char *sources[1];
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *mem;
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = 4096;
	o.threads = atoi(threads);
	o.no_tailends = flags & NO_TAILENDS;
	o.no_fragments = flags & NO_FRAGMENTS;
	sources[0] = tree;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	int err = sqk_build(&o, &s, mem, &r);
	ck_assert_msg(err == 0, "build -j %s: %s (%s)", threads, sqk_strerror(err), r.msg);
	return mem;
}

/* A built image opened with libsqk, with its fragment table and decoded fragment blocks. */
struct view {
	struct sqk_io *mem;
	const uint8_t *img;
	size_t len;
	struct sqk_super sb;
	struct sqk_image *si;
	struct frag_entry *frags; /* sb.fragment_count entries */
	uint8_t *blk;                 /* fragment block i decoded at blk + i * BS */
	size_t *blen;                 /* decoded length of each fragment block */
};

/* Decodes the fragment table: an index of metadata block positions at fragment_table_start. */
static void decode_frag_table(struct view *v, struct compressor *z)
{
	uint32_t n = v->sb.fragment_count;
	size_t bytes = (size_t)n * SQK_FRAG_ENTRY_SIZE;
	size_t nmeta = (bytes + SQK_META_SIZE - 1) / SQK_META_SIZE;
	uint8_t *raw = malloc(bytes + 1), out[SQK_META_SIZE];
	ck_assert_ptr_nonnull(raw);
	if (n)
		ck_assert_uint_le(v->sb.fragment_table_start + nmeta * 8, v->len);
	for (size_t k = 0; k < nmeta; k++) {
		uint64_t pos = get_le64(v->img + v->sb.fragment_table_start + k * 8);
		size_t want = bytes - k * SQK_META_SIZE < SQK_META_SIZE ? bytes - k * SQK_META_SIZE
									  : SQK_META_SIZE;
		size_t used;
		ck_assert_uint_lt(pos, v->len);
		ssize_t r = meta_decode_block(z, v->img + pos, v->len - pos, out, want, &used);
		ck_assert_int_eq(r, (ssize_t)want);
		memcpy(raw + k * SQK_META_SIZE, out, want);
	}
	v->frags = calloc(n ? n : 1, sizeof(*v->frags));
	ck_assert_ptr_nonnull(v->frags);
	for (uint32_t i = 0; i < n; i++)
		frag_entry_decode(raw + (size_t)i * SQK_FRAG_ENTRY_SIZE, &v->frags[i]);
	free(raw);
}

/* Decodes every fragment block (stored raw or compressed) into v->blk; none exceeds BS. */
static void decode_frag_blocks(struct view *v, struct compressor *z)
{
	uint32_t n = v->sb.fragment_count;
	v->blk = malloc((size_t)(n ? n : 1) * BS);
	v->blen = calloc(n ? n : 1, sizeof(*v->blen));
	ck_assert_ptr_nonnull(v->blk);
	ck_assert_ptr_nonnull(v->blen);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t word = v->frags[i].size, stored = word & SQK_BLOCK_SIZE_MASK;
		uint8_t *dst = v->blk + (size_t)i * BS;
		ck_assert_uint_gt(stored, 0);
		ck_assert_uint_le(stored, BS);
		ck_assert_uint_le(v->frags[i].start + stored, v->len);
		if (word & SQK_BLOCK_RAW) {
			memcpy(dst, v->img + v->frags[i].start, stored);
			v->blen[i] = stored;
		} else {
			ssize_t r = comp_decompress(z, v->img + v->frags[i].start, stored, dst, BS);
			ck_assert_msg(r > 0, "fragment block %u does not decode into %u bytes: %s",
				      i, BS, sqk_strerror((int)r));
			v->blen[i] = (size_t)r;
		}
	}
}

/* Opens the image in mem (v takes it over). */
static void view_open(struct view *v, struct sqk_io *mem)
{
	struct compressor *z;
	memset(v, 0, sizeof(*v));
	v->mem = mem;
	v->img = sqk_io_mem_data(mem, &v->len);
	ck_assert_uint_ge(v->len, SQK_SUPER_SIZE);
	super_decode(v->img, &v->sb);
	ck_assert_uint_eq(v->sb.block_size, BS);
	int rc = sqk_image_open_io(mem, NULL, &v->si);
	ck_assert_msg(rc == 0, "open: %s", sqk_strerror(rc));
	struct sqk_comp_config cfg = { .id = v->sb.compressor, .block_size = v->sb.block_size };
	ck_assert_int_eq(compressor_create(&cfg, &z), 0);
	decode_frag_table(v, z);
	decode_frag_blocks(v, z);
	compressor_destroy(z);
}

static void view_close(struct view *v)
{
	sqk_image_close(v->si);
	sqk_io_destroy(v->mem);
	free(v->frags);
	free(v->blk);
	free(v->blen);
}

/* The image's placement of f: its inode's fragment index and offset (NONE, 0 without one). */
static void placed(struct view *v, const struct tfile *f, uint32_t *idx, uint32_t *off)
{
	struct sqk_inode in;
	int rc = sqk_lookup_path(v->si, f->rel, &in);
	ck_assert_msg(rc == 0, "lookup %s: %s", f->rel, sqk_strerror(rc));
	ck_assert_uint_eq(in.size, f->size);
	*idx = in.frag_index;
	*off = in.frag_index == NONE ? 0 : in.frag_offset;
}

/* ---- tails inside their blocks ---- */

struct span {
	uint32_t idx, off, len;
	size_t file;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->len > y->len) - (x->len < y->len);
}

static bool same_file_bytes(const struct tfile *a, const struct tfile *b)
{
	if (a->size != b->size)
		return false;
	uint8_t *x = content(a), *y = content(b);
	bool same = memcmp(x, y, a->size) == 0;
	free(x);
	free(y);
	return same;
}

/* Which files the builder is to give a piece: by default all whose size is not a multiple of
 * BS, with --no-tailends only those below BS, with --no-fragments none. */
enum pieces { PIECES_ALL, PIECES_SMALL, PIECES_NONE };

/* Checks one file: it has a fragment iff `which` gives it a piece; the tail lies inside its
 * decoded block (offset + tail <= block length) and holds the file's last bytes; libsqk reads the
 * whole file back. */
static void check_one_tail(struct view *v, size_t i, enum pieces which, struct span *sp)
{
	const struct tfile *f = &files[i];
	uint32_t tail = (uint32_t)(f->size % BS), idx, off;
	bool want = tail && which != PIECES_NONE && (which == PIECES_ALL || f->size < BS);
	placed(v, f, &idx, &off);
	ck_assert_msg((idx != NONE) == want, "%s (%llu bytes): fragment %u", f->rel,
		      (unsigned long long)f->size, idx);
	uint8_t *data = content(f), *got = malloc(f->size + 1);
	ck_assert_ptr_nonnull(got);
	if (want) {
		ck_assert_uint_lt(idx, v->sb.fragment_count);
		ck_assert_msg((uint64_t)off + tail <= v->blen[idx],
			      "%s: tail of %u at %u crosses the end of fragment %u (%zu bytes)",
			      f->rel, tail, off, idx, v->blen[idx]);
		ck_assert_msg(!memcmp(v->blk + (size_t)idx * BS + off, data + f->size - tail, tail),
			      "%s: fragment bytes differ", f->rel);
		*sp = (struct span){ .idx = idx, .off = off, .len = tail, .file = i };
	}
	struct sqk_inode in;
	ck_assert_int_eq(sqk_lookup_path(v->si, f->rel, &in), 0);
	ck_assert_int_eq(sqk_read(v->si, &in, got, f->size + 1, 0), (ssize_t)f->size);
	ck_assert_msg(!memcmp(got, data, f->size), "%s: content differs", f->rel);
	free(data);
	free(got);
}

/* Checks every file of the tree (check_one_tail), then that each fragment block holds its tails
 * end to end from offset 0 to its last byte: no gap, no overlap (a duplicate shares its copy's
 * span). Returns the number of distinct tails. */
static size_t check_tails(struct view *v, enum pieces which)
{
	struct span *sp = calloc(nfiles ? nfiles : 1, sizeof(*sp));
	size_t n = 0, distinct = 0;
	ck_assert_ptr_nonnull(sp);
	for (size_t i = 0; i < nfiles; i++) {
		sp[n].len = 0;
		check_one_tail(v, i, which, &sp[n]);
		if (sp[n].len)
			n++;
	}
	qsort(sp, n, sizeof(*sp), span_cmp);
	uint32_t expect_idx = 0, expect_off = 0;
	for (size_t k = 0; k < n; k++) {
		if (k && sp[k].idx == sp[k - 1].idx && sp[k].off == sp[k - 1].off) {
			ck_assert_msg(same_file_bytes(&files[sp[k].file], &files[sp[k - 1].file]),
				      "%s and %s share bytes of fragment %u", files[sp[k].file].rel,
				      files[sp[k - 1].file].rel, sp[k].idx);
			continue;
		}
		if (sp[k].idx != expect_idx) {
			ck_assert_uint_eq(expect_off, v->blen[expect_idx]);
			ck_assert_uint_eq(sp[k].idx, expect_idx + 1);
			expect_idx++;
			expect_off = 0;
		}
		ck_assert_msg(sp[k].off == expect_off, "%s at %u of fragment %u, expected at %u",
			      files[sp[k].file].rel, sp[k].off, sp[k].idx, expect_off);
		expect_off += sp[k].len;
		distinct++;
	}
	if (n) {
		ck_assert_uint_eq(expect_idx + 1, v->sb.fragment_count);
		ck_assert_uint_eq(expect_off, v->blen[expect_idx]);
	} else {
		ck_assert_uint_eq(v->sb.fragment_count, 0);
	}
	free(sp);
	return distinct;
}

/* ---- the ordering rule, computed independently ---- */

/* Compares two relative paths in tree order: depth first, siblings by name bytes, "" (the root)
 * and every directory before what it holds. */
static int tree_cmp(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		int r = memcmp(a, b, la < lb ? la : lb);
		if (!r)
			r = (la > lb) - (la < lb);
		if (r || !a[la] || !b[lb])
			return r ? r : (a[la] != 0) - (b[lb] != 0);
		a += la + 1;
		b += lb + 1;
	}
}

/* Position of rel among the root, the directories and the files of the tree in tree order. */
static uint32_t tree_order(const char *rel)
{
	uint32_t k = *rel ? 1 : 0; /* the root */
	for (size_t i = 0; i < ndirs; i++)
		k += tree_cmp(dirs[i], rel) < 0;
	for (size_t i = 0; i < nfiles; i++)
		k += tree_cmp(files[i].rel, rel) < 0;
	return k;
}

struct mpiece {
	size_t file;
	char cls[32];
	char stem[64];
	uint32_t ldir; /* tree order of the logical directory */
	uint32_t order;
	uint32_t len;
	uint32_t idx, off; /* expected placement */
	size_t grp;        /* near-duplicate cluster: position of its first piece, or NONE */
	struct mk_sketch sk;
};

static void model_key(struct mpiece *p)
{
	const char *rel = files[p->file].rel, *slash = strrchr(rel, '/');
	const char *name = slash ? slash + 1 : rel, *dot = strrchr(name, '.');
	snprintf(p->cls, sizeof(p->cls), "%s", dot && dot != name ? dot + 1 : "");
	if (!strcmp(p->cls, "pyc"))
		strcpy(p->cls, "py");
	snprintf(p->stem, sizeof(p->stem), "%.*s", (int)strcspn(name, "."), name);
	char parent[128] = "";
	if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
	const char *pslash = strrchr(parent, '/'), *pname = pslash ? pslash + 1 : parent;
	if (*parent && !strcmp(pname, "__pycache__")) {
		if (pslash)
			parent[pslash - parent] = 0;
		else
			parent[0] = 0;
	}
	p->ldir = tree_order(parent);
	p->order = tree_order(rel);
}

static int model_group_cmp(const struct mpiece *x, const struct mpiece *y)
{
	int r = strcmp(x->cls, y->cls); /* NUL-terminated: a prefix sorts first, as bytewise */
	if (!r && x->ldir != y->ldir)
		r = x->ldir < y->ldir ? -1 : 1;
	return r ? r : strcmp(x->stem, y->stem);
}

static int model_cmp(const void *a, const void *b)
{
	const struct mpiece *x = a, *y = b;
	int r = model_group_cmp(x, y);
	return r ? r : (x->order > y->order) - (x->order < y->order);
}

/* Whether neighbours x, y are of one packing group: one cluster, or unclustered with one key. */
static bool model_same_group(const struct mpiece *x, const struct mpiece *y)
{
	if (x->grp != NONE || y->grp != NONE)
		return x->grp == y->grp;
	return !model_group_cmp(x, y);
}

static unsigned model_shared(const struct mk_sketch *a, const struct mk_sketch *b)
{
	unsigned c = 0;
	for (unsigned i = 0; i < a->n; i++)
		for (unsigned j = 0; j < b->n; j++)
			c += a->v[i] == b->v[j];
	return c;
}

static bool sketch_has(const struct mk_sketch *s, uint32_t h)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == h)
			return true;
	return false;
}

/* The near-duplicate step as similar.c states it, by brute force: each piece not yet placed, in
 * key order, is followed by the later pieces sharing MK_SKETCH_NEAR values of its full sketch, in
 * order, as many as fit one block with it; a later piece is a candidate only when it is among
 * the first MK_SKETCH_SCAN after the seed whose full sketch holds one of the seed's values. */
static void model_cluster(struct mpiece *v, size_t n)
{
	struct mpiece *out = calloc(n ? n : 1, sizeof(*out));
	bool *used = calloc(n ? n : 1, sizeof(*used));
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(used);
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = content(&files[v[i].file]);
		mk_sketch_of(p + files[v[i].file].size - v[i].len, v[i].len, &v[i].sk);
		if (v[i].len < MK_SKETCH_MIN) /* too short to be sketched: never moved */
			memset(&v[i].sk, 0, sizeof(v[i].sk));
		v[i].grp = NONE;
		free(p);
	}
	size_t no = 0;
	for (size_t i = 0; i < n; i++) {
		if (used[i])
			continue;
		unsigned seen[MK_SKETCH_K] = { 0 };
		size_t seed_at = no;
		uint64_t bytes = v[i].len;
		used[i] = true;
		out[no++] = v[i];
		for (size_t j = i + 1; v[i].sk.n == MK_SKETCH_K && j < n; j++) {
			bool cand = false;
			for (unsigned k = 0; v[j].sk.n == MK_SKETCH_K && k < v[i].sk.n; k++)
				if (sketch_has(&v[j].sk, v[i].sk.v[k]) &&
				    seen[k]++ < MK_SKETCH_SCAN)
					cand = true;
			if (!cand || used[j] || bytes + v[j].len > BS ||
			    model_shared(&v[i].sk, &v[j].sk) < MK_SKETCH_NEAR)
				continue;
			used[j] = true;
			bytes += v[j].len;
			out[seed_at].grp = seed_at;
			out[no] = v[j];
			out[no++].grp = seed_at;
		}
	}
	memcpy(v, out, n * sizeof(*v));
	free(out);
	free(used);
}

/* Expected placement of every piece of the tree (files all distinct); returns the count of
 * pieces in *np and of fragment blocks. */
static uint32_t model_place(struct mpiece *v, size_t *np)
{
	size_t n = 0;
	for (size_t i = 0; i < nfiles; i++) {
		if (!(files[i].size % BS))
			continue;
		v[n] = (struct mpiece){ .file = i, .len = (uint32_t)(files[i].size % BS) };
		model_key(&v[n++]);
	}
	qsort(v, n, sizeof(*v), model_cmp);
	model_cluster(v, n);
	uint32_t idx = 0, fill = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t group = v[i].len;
		bool start = !i || !model_same_group(&v[i - 1], &v[i]);
		for (size_t j = i + 1; start && j < n && model_same_group(&v[j - 1], &v[j]); j++)
			group += v[j].len;
		bool no_room = fill + v[i].len > BS;
		bool keep_group = start && group <= BS && fill + group > BS;
		if (fill && (no_room || keep_group)) {
			idx++;
			fill = 0;
		}
		v[i].idx = idx;
		v[i].off = fill;
		fill += v[i].len;
	}
	*np = n;
	return n ? idx + 1 : 0;
}

/* Compares the image's placement of every file with the model's, and checks on the image the
 * promise data.c makes for groups: one that fits in a block is never split across two. */
static void check_model(struct view *v)
{
	struct mpiece *m = calloc(nfiles ? nfiles : 1, sizeof(*m));
	uint32_t *got = calloc(nfiles ? nfiles : 1, sizeof(*got)), off;
	size_t n;
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(got);
	uint32_t nblocks = model_place(m, &n);
	for (size_t i = 0; i < nfiles; i++) {
		uint32_t want_idx = NONE, want_off = 0;
		for (size_t k = 0; k < n; k++)
			if (m[k].file == i) {
				want_idx = m[k].idx;
				want_off = m[k].off;
			}
		placed(v, &files[i], &got[i], &off);
		ck_assert_msg(got[i] == want_idx && off == want_off,
			      "%s (%llu bytes): fragment %u at %u, the rule says %u at %u",
			      files[i].rel, (unsigned long long)files[i].size, got[i], off,
			      want_idx, want_off);
	}
	ck_assert_uint_eq(v->sb.fragment_count, nblocks);
	for (size_t i = 0, end; i < n; i = end) {
		uint64_t bytes = 0;
		for (end = i; end < n && (end == i || model_same_group(&m[end - 1], &m[end]));
		     end++)
			bytes += m[end].len;
		for (size_t k = i + 1; k < end && bytes <= BS; k++)
			ck_assert_msg(got[m[k].file] == got[m[i].file],
				      "group of %s (%llu bytes) split: %s in fragment %u, %s in %u",
				      files[m[i].file].rel, (unsigned long long)bytes,
				      files[m[i].file].rel, got[m[i].file], files[m[k].file].rel,
				      got[m[k].file]);
	}
	free(got);
	free(m);
}

/* ---- tests ---- */

/* Checks that files[file]'s tail is in fragment idx at offset off. */
static void expect_placed(struct view *v, size_t file, uint32_t idx, uint32_t off)
{
	uint32_t got_idx, got_off;
	placed(v, &files[file], &got_idx, &got_off);
	ck_assert_msg(got_idx == idx && got_off == off, "%s: fragment %u at %u, expected %u at %u",
		      files[file].rel, got_idx, got_off, idx, off);
}

/* Near-duplicates move next to each other (similar.c): two text files of one content but for
 * their first bytes, in different directories and classes, share a block although a random
 * file sorts between them by key; without the step, one.txt would go to a new block. */
START_TEST(test_near_duplicates)
{
	static const struct {
		const char *rel;
		uint64_t size;
		bool text;
		uint32_t idx, off;
	} want[] = {
		{ "d/three.c", 1000, false, 0, 0 },
		{ "b/mid.dat", 1000, false, 0, 1000 },
		{ "c/two.md", 1000, true, 0, 2000 },
		{ "e/p.q", 500, false, 1, 0 },      /* after the cluster: 96 bytes were left */
		{ "a/one.txt", 1000, true, 0, 3000 }, /* pulled up from after p.q */
	};
	struct view v;
	tree_make();
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char dir[2] = { want[i].rel[0], 0 };
		add_dir(dir);
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		add_file(want[i].rel, want[i].size, want[i].text);
	view_open(&v, build("2", 0));
	ck_assert_uint_eq(v.sb.fragment_count, 2);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		expect_placed(&v, i, want[i].idx, want[i].off);
	check_model(&v);
	check_tails(&v, PIECES_ALL);
	view_close(&v);
	tree_remove();
}
END_TEST

/* Tails under MK_SKETCH_MIN bytes are never moved: the same tree as test_near_duplicates with
 * every tail 200 bytes long (near-duplicates all the same, and one block holds them all) keeps
 * the type-and-directory order, one.txt last; with sketches of short tails it would follow
 * two.md. */
START_TEST(test_short_tails_stay)
{
	static const char *const rel[] = { "d/three.c", "b/mid.dat", "c/two.md", "e/p.q",
					   "a/one.txt" };
	struct view v;
	tree_make();
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char dir[2] = { rel[i][0], 0 };
		add_dir(dir);
	}
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		add_file(rel[i], 200, i == 2 || i == 4);
	view_open(&v, build("2", 0));
	ck_assert_uint_eq(v.sb.fragment_count, 1);
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		expect_placed(&v, i, 0, (uint32_t)(200 * i));
	check_model(&v);
	check_tails(&v, PIECES_ALL);
	view_close(&v);
	tree_remove();
}
END_TEST

/* A hand-made tree whose placement is written out below, derived by hand from the rule: class
 * before directory ("" < c < dat < gz < py < txt, so a.txt in the root follows pkg's .py files),
 * directory before stem (pkg/data.txt after z.txt), .pyc files in __pycache__ grouped with their
 * .py source (and first, in tree order, though "mod.pyc" > "mod.py" by name), a group that fits a
 * block moved whole to a new one, a group larger than a block split where it falls, blocks
 * filled exactly, a 1-byte tail, a tail of BS - 1, and files with no piece (empty, multiples of
 * BS) taking no room. */
START_TEST(test_order_by_rule)
{
	static const struct {
		const char *rel;
		uint64_t size;
		uint32_t idx, off;
	} want[] = {
		{ ".hidden", 100, 0, 0 },   /* class "": a leading dot is no extension; stem "" */
		{ "README", 200, 0, 100 },  /* class "", stem "README" */
		{ "b.c", 300, 0, 300 },
		{ "part.a.dat", 2000, 0, 600 }, /* group dat/root/part is 4500 bytes: not moved */
		{ "part.b.dat", 2500, 1, 0 },   /* ... and split where it does not fit */
		{ "x.tar.gz", 400, 1, 2500 }, /* class: last extension; stem: to the first dot */
		{ "y.gz", 500, 1, 2900 },
		/* group py/pkg/mod (2700 bytes) does not fit the 696 left: a new block, though 600
		 * alone would have fitted */
		{ "pkg/__pycache__/mod.pyc", 600, 2, 0 },
		{ "pkg/mod.py", 2100, 2, 600 },
		{ "pkg/__pycache__/util.cpython-311.pyc", BS + 904, 2, 2700 }, /* a large file */
		{ "pkg/util.py", 300, 2, 3604 },
		{ "a.txt", 192, 2, 3904 },         /* fills block 2 to exactly BS */
		{ "z.txt", 1, 3, 0 },              /* 1 byte: no room left in a full block */
		{ "pkg/data.txt", 2 * BS - 1, 3, 1 }, /* tail of BS - 1, fills block 3 exactly */
		{ "empty.txt", 0, NONE, 0 },
		{ "whole.txt", 2 * BS, NONE, 0 },
		{ "pkg/block.py", BS, NONE, 0 },
	};
	static const size_t blen[] = { 2600, 3400, BS, BS };
	const size_t nw = sizeof(want) / sizeof(want[0]);
	struct view v;
	tree_make();
	add_dir("pkg");
	add_dir("pkg/__pycache__");
	for (size_t i = 0; i < nw; i++) /* random bytes: no near-duplicates to move */
		add_file(want[i].rel, want[i].size, false);
	view_open(&v, build("2", 0));
	ck_assert_uint_eq(v.sb.fragment_count, 4);
	for (size_t i = 0; i < 4; i++)
		ck_assert_msg(v.blen[i] == blen[i], "fragment block %zu: %zu bytes, expected %zu",
			      i, v.blen[i], blen[i]);
	for (size_t i = 0; i < nw; i++)
		expect_placed(&v, i, want[i].idx, want[i].off);
	/* The model used by the random trees agrees with the hand-derived placement. */
	check_model(&v);
	ck_assert_uint_eq(check_tails(&v, PIECES_ALL), 14);
	view_close(&v);
	tree_remove();
}
END_TEST

static const char *const rdirs[] = { "d", "d/__pycache__", "e", "e/sub", "e/sub/__pycache__",
				     "__pycache__", "e/__pycache__x", "f.py" };
static const char *const rstems[] = { "a", "mod", "b", "Z", "", "a-b", "mod", "util" };
static const char *const rexts[] = { "", ".txt", ".py", ".pyc", ".c", ".tar.gz", ".gz",
				     ".cpython-311.pyc", ".", ".pyc.txt", ".pyo", ".PY", ".py" };
static const uint64_t redges[] = { 0, 1, 2, BS - 1, BS, BS + 1, 2 * BS - 1, 2 * BS, BS / 2,
				   BS / 2 + 1 };

#define PICK(a, s) ((a)[test_xorshift(s) % (sizeof(a) / sizeof((a)[0]))])

static uint64_t random_size(uint64_t *s)
{
	uint64_t r = test_xorshift(s) % 10;
	if (r == 0)
		return PICK(redges, s);
	if (r <= 4)
		return 1 + test_xorshift(s) % 600;
	if (r <= 7)
		return 1 + test_xorshift(s) % (BS - 1);
	return BS + test_xorshift(s) % (2 * BS);
}

/* Random trees (names, extensions, __pycache__ directories and sizes drawn from small sets so
 * that groups, shared stems and block edges are common): every file is placed where the rule
 * computed by the model puts it, and every tail lies whole inside its block. */
START_TEST(test_order_random_trees)
{
	uint64_t s = 0x5eed0000u + (uint64_t)_i * 7919;
	struct view v;
	tree_make();
	for (size_t i = 0; i < sizeof(rdirs) / sizeof(rdirs[0]); i++)
		add_dir(rdirs[i]);
	for (int k = 0; k < 90; k++) {
		char rel[128], name[64];
		const char *dir = test_xorshift(&s) % 4 ? PICK(rdirs, &s) : "";
		snprintf(name, sizeof(name), "%s%s", PICK(rstems, &s), PICK(rexts, &s));
		if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		snprintf(rel, sizeof(rel), "%s%s%s", dir, *dir ? "/" : "", name);
		bool taken = false;
		for (size_t i = 0; i < nfiles; i++)
			taken |= !strcmp(files[i].rel, rel);
		for (size_t i = 0; i < ndirs; i++)
			taken |= !strcmp(dirs[i], rel);
		if (!taken)
			add_file(rel, random_size(&s), test_xorshift(&s) & 1);
	}
	ck_assert_uint_gt(nfiles, 40);
	view_open(&v, build("2", 0));
	ck_assert_uint_gt(v.sb.fragment_count, 2);
	check_model(&v);
	check_tails(&v, PIECES_ALL);
	view_close(&v);
	tree_remove();
}
END_TEST

/* No tail crosses the end of its fragment block, for tails of 1 byte, BS - 1 and sizes around
 * every edge, tails of large files, groups that fill a block exactly (4 x 1024, 4095 + 1, a
 * large file's 2000-byte tail + 2096), pieces that would overshoot a block by 4 bytes (inside a
 * group larger than a block, and first of such a group) and many random sizes: each tail is
 * whole inside its decoded block, blocks are packed end to end, and the exact-fill groups each
 * fill one block. */
START_TEST(test_tails_inside_blocks)
{
	static const uint64_t sizes[] = { 1, 2, 3, 7, BS - 1, BS - 2, BS - 1, BS / 2 - 1, BS / 2,
					  BS / 2 + 1, BS / 2, BS + 1, 2 * BS - 1, 3 * BS - 1,
					  BS + BS / 2, 1, 4000, 96, BS - 1, 1, 0, BS, 2 * BS };
	static const struct {
		const char *rel;
		uint64_t size;
	} fills[] = {
		{ "fill1.0.dat", 1024 },     { "fill1.1.dat", 1024 }, { "fill1.2.dat", 1024 },
		{ "fill1.3.dat", 1024 },     { "fill2.a.dat", BS - 1 }, { "fill2.b.dat", 1 },
		{ "fill3.a.dat", 3 * BS + 2000 }, { "fill3.b.dat", 2096 },
		{ "fill4.a.dat", 2000 },     { "fill4.b.dat", 2100 },   { "fill4.c.dat", 1 },
		{ "fill5.dat", 4000 },       { "fill6.a.dat", 100 },    { "fill6.b.dat", 4000 },
	};
	uint64_t s = 77;
	char rel[64];
	struct view v;
	tree_make();
	add_dir("r");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(rel, sizeof(rel), "s%02zu.bin", i);
		add_file(rel, sizes[i], i % 2);
	}
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) /* no near-duplicates */
		add_file(fills[i].rel, fills[i].size, false);
	for (int i = 0; i < 150; i++) {
		snprintf(rel, sizeof(rel), "r/%03d.%s", i, i % 3 ? "bin" : "txt");
		add_file(rel, random_size(&s), test_xorshift(&s) & 1);
	}
	add_file_as("r/copy.bin", 0, false, 4);
	ck_assert_uint_eq(files[nfiles - 1].id, files[4].id);
	view_open(&v, build("2", 0));
	size_t tails = check_tails(&v, PIECES_ALL);
	ck_assert_uint_gt(tails, 150);
	ck_assert_uint_gt(v.sb.fragment_count, 40);
	/* The copy shares its original's tail. */
	uint32_t i0, o0, i1, o1;
	placed(&v, &files[4], &i0, &o0);
	placed(&v, &files[nfiles - 1], &i1, &o1);
	ck_assert(i0 == i1 && o0 == o1);
	/* Each exact-fill group fills one block on its own. */
	for (size_t g = 0; g < 3; g++) {
		static const size_t first[] = { 0, 4, 6 }, count[] = { 4, 2, 2 };
		size_t base = sizeof(sizes) / sizeof(sizes[0]) + first[g];
		uint32_t idx, off, gidx, expect = 0;
		placed(&v, &files[base], &gidx, &off);
		ck_assert_uint_ne(gidx, NONE);
		for (size_t k = 0; k < count[g]; k++) {
			placed(&v, &files[base + k], &idx, &off);
			ck_assert_msg(idx == gidx && off == expect, "%s: fragment %u at %u",
				      files[base + k].rel, idx, off);
			expect += (uint32_t)(files[base + k].size % BS);
		}
		ck_assert_uint_eq(expect, BS);
		ck_assert_uint_eq(v.blen[gidx], BS);
	}
	/* The 4101-byte group fill4 follows a full block: 2000 bytes alone, then 2100 + 1 in the
	 * next block; fill5 (4000) takes a new one; fill6's first 100 bytes would overshoot it by
	 * 4, so they start another, and its 4000 bytes a third. */
	static const uint32_t bump[6] = { 0, 1, 1, 2, 3, 4 }, at[6] = { 0, 0, 2100, 0, 0, 0 };
	size_t f4 = sizeof(sizes) / sizeof(sizes[0]) + 8;
	uint32_t idx0, off0;
	placed(&v, &files[f4], &idx0, &off0);
	ck_assert_uint_ne(idx0, NONE);
	for (size_t k = 0; k < 6; k++) {
		uint32_t idx, off;
		placed(&v, &files[f4 + k], &idx, &off);
		ck_assert_msg(idx == idx0 + bump[k] && off == at[k], "%s: fragment %u at %u",
			      files[f4 + k].rel, idx, off);
	}
	ck_assert_uint_eq(v.blen[idx0], 2000);
	ck_assert_uint_eq(v.blen[idx0 + 2], 4000);
	ck_assert_uint_eq(v.blen[idx0 + 3], 100);
	view_close(&v);
	tree_remove();
}
END_TEST

/* Which files have a piece: with --no-tailends only files smaller than a block (a large file's
 * tail is then its short last block), with --no-fragments none; content reads back either way. */
START_TEST(test_piece_selection)
{
	static const uint64_t sizes[] = { 1, 100, BS - 1, BS, BS + 1, 2 * BS - 1, 3 * BS + 5, 0 };
	char rel[32];
	struct view v;
	tree_make();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(rel, sizeof(rel), "f%zu.bin", i);
		add_file(rel, sizes[i], i % 2);
	}
	view_open(&v, build("2", 0));
	ck_assert_uint_eq(check_tails(&v, PIECES_ALL), 6);
	view_close(&v);
	/* 1 + 100 in block 0; 4095 does not fit after them */
	view_open(&v, build("2", NO_TAILENDS));
	ck_assert_uint_eq(check_tails(&v, PIECES_SMALL), 3);
	ck_assert_uint_eq(v.sb.fragment_count, 2);
	view_close(&v);
	view_open(&v, build("2", NO_FRAGMENTS));
	ck_assert_uint_eq(check_tails(&v, PIECES_NONE), 0);
	view_close(&v);
	tree_remove();
}
END_TEST

/* The same tree built with -j 1, -j 2 and -j 7 gives byte-identical images, hence the same
 * fragment table (decoded and compared too) and the same placement of every tail; the tree has
 * enough fragment and data blocks (several per worker) for the workers to finish out of order. */
START_TEST(test_same_image_any_threads)
{
	static const char *const threads[] = { "1", "2", "7" };
	uint64_t s = 4242;
	char rel[64];
	struct view v[3];
	tree_make();
	add_dir("a");
	add_dir("a/__pycache__");
	add_dir("b");
	for (int i = 0; i < 300; i++) {
		static const char *const ext[] = { "py", "pyc", "txt", "so", "" };
		const char *e = ext[test_xorshift(&s) % 5];
		const char *d = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "a/__pycache__";
		snprintf(rel, sizeof(rel), "%s/m%d%s%s", d, i % 40, *e ? "." : "", e);
		bool taken = false;
		for (size_t k = 0; k < nfiles; k++)
			taken |= !strcmp(files[k].rel, rel);
		uint64_t size = test_xorshift(&s) % 8 ? random_size(&s) : 3 * BS + 17;
		if (!taken)
			add_file(rel, size, test_xorshift(&s) & 1);
	}
	for (int i = 0; i < 3; i++)
		view_open(&v[i], build(threads[i], 0));
	ck_assert_uint_gt(v[0].sb.fragment_count, 20);
	check_tails(&v[0], PIECES_ALL);
	for (int i = 1; i < 3; i++) {
		ck_assert_uint_eq(v[i].sb.fragment_count, v[0].sb.fragment_count);
		for (uint32_t k = 0; k < v[0].sb.fragment_count; k++)
			ck_assert_msg(v[i].frags[k].start == v[0].frags[k].start &&
					      v[i].frags[k].size == v[0].frags[k].size,
				      "-j %s: fragment %u at %llu (word %#x), -j 1: at %llu (%#x)",
				      threads[i], k, (unsigned long long)v[i].frags[k].start,
				      v[i].frags[k].size, (unsigned long long)v[0].frags[k].start,
				      v[0].frags[k].size);
		ck_assert_msg(v[i].len == v[0].len, "-j %s: %zu bytes, -j 1: %zu", threads[i],
			      v[i].len, v[0].len);
		ck_assert_msg(!memcmp(v[i].img, v[0].img, v[0].len), "-j %s: image differs",
			      threads[i]);
	}
	for (int i = 0; i < 3; i++)
		view_close(&v[i]);
	tree_remove();
}
END_TEST

static Suite *frag_suite(void)
{
	Suite *s = suite_create("frag");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, scratch_make, scratch_remove);
	tcase_add_test(tc, test_order_by_rule);
	tcase_add_test(tc, test_near_duplicates);
	tcase_add_test(tc, test_short_tails_stay);
	tcase_add_loop_test(tc, test_order_random_trees, 0, 6);
	tcase_add_test(tc, test_tails_inside_blocks);
	tcase_add_test(tc, test_piece_selection);
	tcase_add_test(tc, test_same_image_any_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(frag_suite());
}
