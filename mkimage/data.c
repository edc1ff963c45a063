/* SPDX-License-Identifier: BSD-2-Clause */
/* File data, in the one pass over the source: each file's full blocks go to the pipeline as they
 * are read (holes skipped without reading), its tail is kept (spill.c) for a fragment block, and
 * its SHA-256 finds an earlier file of the same content (dedup.c). A file whose size an earlier
 * file has is hashed first when the source can be read twice, so that a duplicate's blocks are
 * never compressed; from a stream it is held back by the writer until its hash says whether it
 * is new (then written) or a duplicate (then dropped: it shares the original's blocks). The tails
 * are packed into fragment blocks ordered by file type, all at the end, or a batch at a time once
 * MK_PIECE_BATCH of them wait (memory stays bounded whatever the number of files). Compression and
 * writing happen in pipeline.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/evp.h>

#include "common/datestr.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/integrity.h"
#include "mk.h"
#include "data.h"
#include "count.h"
#include "dedup.h"
#include "similar.h"
#include "spill.h"
#include "pipeline.h"
#include "reuse.h"
#include "action.h"
#include "source.h"

/* Raw bytes of one file the writer may hold back before its hash is known, from a source that
 * cannot be read twice (a tar stream); a larger file whose size an earlier file shares is
 * written without dedup. */
#define MK_HOLD_MAX (256u << 20)

/* Tails packed together into fragment blocks: up to this many wait for one sort. */
#define MK_PIECE_BATCH (1u << 20)

struct piece {
	struct mk_file *f;
	uint64_t ref;               /* where the tail is in the tail store */
	uint32_t len;
	uint32_t old_idx, old_off;  /* --reuse: the same bytes in an old fragment block, or NONE */
	/* Similarity key: type class, logical directory, stem (tie: the file's walk order). */
	uint32_t ldir, order;
	uint32_t key;               /* the class's bytes then the stem's, at keys + key */
	uint16_t cls_len;
	uint16_t stem_len;          /* name bytes before the first '.' */
	uint32_t grp;               /* near-duplicate cluster (its first piece), or SQK_NONE32 */
	uint32_t sk;                /* its sketch in mk_data.sketches, or SQK_NONE32 (too short) */
};

struct progress {
	struct timespec start, last;
	uint64_t files_done;
	uint64_t bytes_done;        /* sizes of the files done */
	struct mk_count *count;     /* the totals, counted beside the build (count.h), or NULL */
};

struct mk_data {
	struct mk_pipeline *p;
	struct mk_spill *tails;
	struct mk_dedup *dd;
	struct piece *pieces;
	size_t npieces, pieces_cap;
	struct mk_sketch *sketches; /* of the pieces of at least MK_SKETCH_MIN bytes */
	size_t nsketches, sketches_cap;
	char *keys;                 /* the pieces' key bytes */
	size_t keys_len, keys_cap;
	struct progress pr;
	uint8_t *buf;               /* one block: a tail being read */
	EVP_MD_CTX *sha;
};

/* ---- progress ---- */

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* The line once the source is counted: "12/40 files, 3.1 of 9.0 MiB (34%), 1.2 MiB out,
 * 2.0 MiB/s, 0:03 left" (the rate over the whole run; the time left from it). */
static void show_totals(const struct progress *pr, double el, double out, uint64_t tfiles,
			uint64_t tbytes, bool last)
{
	uint64_t files = pr->files_done, done = pr->bytes_done;
	if (done > tbytes) /* the tree grew, or excludes were not counted out */
		tbytes = done;
	if (files > tfiles)
		tfiles = files;
	double rate = el > 0 ? (double)done / el : 0;
	char left[32];
	if (last)
		snprintf(left, sizeof(left), "0:00");
	else if (rate > 0 && el >= 1.0)
		date_duration(left, sizeof(left), (double)(tbytes - done) / rate);
	else
		snprintf(left, sizeof(left), "-:--");
	fprintf(stderr, "\r%llu/%llu files, %.1f of %.1f MiB (%u%%), %.1f MiB out, %.1f MiB/s, "
		"%s left ", (unsigned long long)files, (unsigned long long)tfiles,
		(double)done / 1048576.0, (double)tbytes / 1048576.0,
		tbytes ? (unsigned)(100.0 * (double)done / (double)tbytes) : 100u, out / 1048576.0,
		rate / 1048576.0, left);
	if (last)
		fputc('\n', stderr);
}

static void progress_show(struct mk_ctx *c, struct progress *pr, struct mk_pipeline *p, bool last)
{
	if (!c->opt->progress)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!last && since(&pr->last, &now) < 0.25)
		return;
	pr->last = now;
	double el = since(&pr->start, &now);
	double in = (double)c->st.bytes_in, out = (double)mk_pipeline_written(p);
	uint64_t tfiles, tbytes;
	if (mk_count_totals(pr->count, &tfiles, &tbytes)) {
		show_totals(pr, el, out, tfiles, tbytes, last);
		return;
	}
	fprintf(stderr, "\r%llu files, %.1f MiB in, %.1f MiB out (%.1f%%), %.1f MiB/s ",
		(unsigned long long)pr->files_done, in / 1048576.0, out / 1048576.0,
		in > 0 ? 100.0 * out / in : 100.0, el > 0 ? in / 1048576.0 / el : 0.0);
	if (last)
		fputc('\n', stderr);
}

/* ---- one file ---- */

/* Whether a file's tail (or whole content) goes into a fragment: as the options say, or as an
 * action chose for this file (an uncompressed file has none, as with mksquashfs). */
static bool wants_fragment(const struct mk_ctx *c, const struct mk_file *f,
			   const struct mk_entry *e)
{
	uint32_t bs = c->opt->block_size;
	bool no_frags = e->act_frag ? e->act_frag == MK_ACT_OFF : c->opt->no_fragments;
	bool tails = e->act_tail ? e->act_tail == MK_ACT_ON : !c->opt->no_tailends;
	if (no_frags || e->act_raw == MK_ACT_ON || f->size % bs == 0)
		return false;
	return f->size < bs || tails;
}

/* A file whose layout an action changed shares no data with another (a duplicate would take
 * the original's layout). */
static bool own_layout(const struct mk_ctx *c, const struct mk_entry *e)
{
	return e->act_raw == MK_ACT_ON ||
	       (e->act_frag && (e->act_frag == MK_ACT_OFF) != c->opt->no_fragments) ||
	       (e->act_tail && (e->act_tail == MK_ACT_ON) == c->opt->no_tailends);
}

static int alloc_words(struct mk_ctx *c, struct mk_file *f, bool use_frags, const char *origin)
{
	uint32_t bs = c->opt->block_size;
	uint64_t nb = use_frags ? f->size / bs : (f->size + bs - 1) / bs;
	if (nb > UINT32_MAX / 2)
		return mk_fail(c, SQK_ETOOBIG, "'%s' is too large", origin);
	if (!nb)
		return 0;
	f->blk = calloc(1, sizeof(*f->blk) + nb * sizeof(uint32_t));
	if (!f->blk)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	f->blk->n = (uint32_t)nb;
	return 0;
}

/* Per file: what is read and how its blocks go. */
struct file_pass {
	struct mk_file *f;
	const struct mk_file_ref *fr;
	const struct mk_entry *e;
	struct mk_source *src;
	bool hash;                  /* SHA-256 of the content for dedup */
	bool hold;                  /* blocks held by the writer until the verdict */
	uint64_t held;              /* raw bytes held so far */
};

static int sha_update(struct mk_ctx *c, struct mk_data *d, const void *p, size_t len)
{
	if (!EVP_DigestUpdate(d->sha, p, len))
		return mk_fail(c, SQK_ENOMEM, "SHA-256 failed");
	return 0;
}

static int submit_verdict(struct mk_ctx *c, struct mk_data *d, struct mk_file *f, bool keep)
{
	struct mk_job *j = mk_pipeline_acquire(d->p);
	if (!j)
		return SQK_EIO;
	j->kind = MK_JOB_VERDICT;
	j->file = f;
	j->keep = keep;
	j->in_len = 0;
	mk_pipeline_submit(d->p);
	return 0;
}

static int submit_block(struct mk_ctx *c, struct mk_data *d, struct file_pass *fp, uint32_t k,
			uint64_t off, size_t len)
{
	struct mk_job *j = mk_pipeline_acquire(d->p);
	if (!j)
		return SQK_EIO;
	int err = fp->src->ops->read(fp->src, c, off, j->in, len);
	if (!err && fp->hash)
		err = sha_update(c, d, j->in, len);
	if (err)
		return err; /* the build stops; the slot is never handed to the workers */
	j->in_len = len;
	j->kind = MK_JOB_DATA;
	j->file = fp->f;
	j->block = k;
	j->hold = fp->hold;
	j->raw = fp->e->act_raw == MK_ACT_ON;
	j->reuse_word = 0;
	uint64_t opos;
	uint32_t ow;
	if (c->reuse && mk_reuse_block(c, c->reuse, k, len, &opos, &ow) &&
	    !sqk_image_read_raw(c->reuse->img, opos, j->old, ow & SQK_BLOCK_SIZE_MASK))
		j->reuse_word = ow;
	mk_pipeline_submit(d->p);
	c->st.bytes_in += len;
	if (fp->hold && (fp->held += len) > MK_HOLD_MAX) {
		/* Too much to hold: written now, and not deduplicated. */
		fp->hold = false;
		fp->hash = false;
		err = submit_verdict(c, d, fp->f, true);
	}
	return err;
}

static int read_blocks(struct mk_ctx *c, struct mk_data *d, struct file_pass *fp)
{
	struct mk_file *f = fp->f;
	uint32_t bs = c->opt->block_size;
	uint64_t data_at = 0;
	int err = 0;
	bool holes = fp->e->maybe_sparse && fp->src->ops->data_at;
	for (uint32_t k = 0; f->blk && k < f->blk->n && !err; k++) {
		uint64_t off = (uint64_t)k * bs;
		size_t len = f->size - off < bs ? (size_t)(f->size - off) : bs;
		if (mk_cancelled(c))
			return mk_fail(c, SQK_EINTR, "interrupted");
		if (holes && data_at < off + len && data_at != UINT64_MAX &&
		    (err = fp->src->ops->data_at(fp->src, c, off, &data_at)))
			return err;
		if (holes && data_at >= off + len) {
			f->blk->words[k] = 0;
			f->blk->sparse += len;
			atomic_fetch_add(&c->st.sparse_blocks, 1);
		} else {
			err = submit_block(c, d, fp, k, off, len);
		}
		progress_show(c, &d->pr, d->p, false);
	}
	return err;
}

/* A file with blocks whose size an earlier file has, from a source that can be read twice:
 * hashed first, so a duplicate is never compressed (a second read from the page cache costs far
 * less than compressing the blocks of a duplicate only to drop them) and a new file is read
 * again to be stored. */
static int prehash(struct mk_ctx *c, struct mk_data *d, struct file_pass *fp, uint8_t *digest)
{
	uint32_t bs = c->opt->block_size;
	uint64_t size = fp->f->size;
	int err = EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL) ? 0 :
		  mk_fail(c, SQK_ENOMEM, "SHA-256 failed");
	for (uint64_t off = 0; off < size && !err; off += bs) {
		size_t len = size - off < bs ? (size_t)(size - off) : bs;
		err = fp->src->ops->read(fp->src, c, off, d->buf, len);
		if (!err)
			err = sha_update(c, d, d->buf, len);
		if (!err && mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
	}
	if (!err && !EVP_DigestFinal_ex(d->sha, digest, NULL))
		err = mk_fail(c, SQK_ENOMEM, "SHA-256 failed");
	return err;
}

/* Copies the similarity key of the file at path into the keys: the extension is the type
 * class (Python bytecode joins its source's class), the stem is the name before its first '.'. */
static int put_key(struct mk_ctx *c, struct mk_data *d, struct piece *pc, const char *path)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	const char *dot = strrchr(name, '.');
	const char *cls = dot && dot != name ? dot + 1 : "";
	size_t cls_len = strlen(cls), stem_len = strcspn(name, ".");
	if (cls_len == 3 && !memcmp(cls, "pyc", 3))
		cls_len = 2;
	int err = mk_grow(c, &d->keys, &d->keys_cap,
			  d->keys_len + cls_len + stem_len, 1);
	if (err)
		return err;
	pc->key = (uint32_t)d->keys_len;
	pc->cls_len = (uint16_t)cls_len;
	pc->stem_len = (uint16_t)stem_len;
	if (cls_len)
		memcpy(d->keys + d->keys_len, cls, cls_len);
	if (stem_len)
		memcpy(d->keys + d->keys_len + cls_len, name, stem_len);
	d->keys_len += cls_len + stem_len;
	return 0;
}

static int flush_pieces(struct mk_ctx *c, struct mk_data *d, bool in_order);

static int add_piece(struct mk_ctx *c, struct mk_data *d, const struct file_pass *fp,
		     uint32_t len)
{
	uint32_t batch = c->opt->piece_batch ? c->opt->piece_batch : MK_PIECE_BATCH;
	int err = d->npieces >= batch ? flush_pieces(c, d, false) : 0;
	if (err)
		return err;
	if ((err = mk_grow(c, &d->pieces, &d->pieces_cap, d->npieces + 1,
			   sizeof(*d->pieces))))
		return err;
	struct piece *pc = &d->pieces[d->npieces];
	memset(pc, 0, sizeof(*pc));
	pc->f = fp->f;
	pc->len = len;
	pc->ldir = fp->fr->ldir;
	pc->order = fp->fr->order;
	pc->old_idx = SQK_NONE32;
	pc->grp = SQK_NONE32;
	pc->sk = SQK_NONE32;
	if (len >= MK_SKETCH_MIN) {
		if ((err = mk_grow(c, &d->sketches, &d->sketches_cap, d->nsketches + 1,
				   sizeof(*d->sketches))))
			return err;
		pc->sk = (uint32_t)d->nsketches++;
		mk_sketch_of(d->buf, len, &d->sketches[pc->sk]);
	}
	if (c->reuse && !mk_reuse_tail(c, c->reuse, d->buf, len, fp->f->size, &pc->old_idx,
				       &pc->old_off))
		pc->old_idx = SQK_NONE32;
	err = put_key(c, d, pc, fp->e->path);
	if (!err)
		err = mk_spill_put(c, d->tails, d->buf, len, &pc->ref);
	if (!err)
		d->npieces++;
	return err;
}

/* The file's verdict once all of it was read: a duplicate shares an earlier file's data. */
static int conclude(struct mk_ctx *c, struct mk_data *d, struct file_pass *fp, bool frag,
		    uint32_t tail, const uint8_t *digest)
{
	struct mk_file *f = fp->f;
	const struct mk_file *orig = NULL;
	int err = 0;
	if (digest && (err = mk_dedup_find_or_add(c, d->dd, f, digest, &orig)))
		return err;
	if (fp->hold)
		err = submit_verdict(c, d, f, !orig);
	if (orig) {
		/* The writer never places a block of a duplicate (its held blocks are dropped). */
		free(f->blk);
		f->dup_of = orig;
		f->frag_index = MK_FRAG_DUP;
		c->st.dup_files++;
		c->st.dup_bytes += f->size;
	}
	if (!err && frag && !orig)
		err = add_piece(c, d, fp, tail);
	d->pr.files_done++;
	d->pr.bytes_done += f->size;
	return err;
}

int mk_data_file(struct mk_ctx *c, const struct mk_file_ref *fr, struct mk_source *src,
		 const struct mk_entry *e)
{
	struct mk_data *d = c->data;
	struct mk_file *f = fr->file;
	uint32_t bs = c->opt->block_size;
	bool frag = wants_fragment(c, f, e);
	uint8_t digest[SQK_INTEG_DIGEST_SIZE];
	struct file_pass fp = { .f = f, .fr = fr, .e = e, .src = src };
	int err = alloc_words(c, f, frag, e->origin);
	if (!err && c->reuse)
		err = mk_reuse_lookup(c, c->reuse, e->path);
	if (err)
		return err;
	fp.hash = !c->opt->no_dedup && f->size > 0 && !e->maybe_sparse && !own_layout(c, e);
	bool seen = fp.hash && mk_dedup_size_seen(d->dd, f->size);
	if (seen && f->blk && src->ops->rereadable) {
		const struct mk_file *orig;
		err = prehash(c, d, &fp, digest);
		if (!err)
			err = mk_dedup_find(c, d->dd, f->size, digest, &orig);
		if (!err && orig) {
			fp.hash = false;
			err = src->ops->end_file ? src->ops->end_file(src, c) : 0;
			return err ? err : conclude(c, d, &fp, false, 0, digest);
		}
		fp.hash = false; /* known new: added below with this digest */
	} else {
		fp.hold = seen && f->blk;
		seen = false;
	}
	if (fp.hash && !EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL))
		return mk_fail(c, SQK_ENOMEM, "SHA-256 failed");
	if (!err)
		err = read_blocks(c, d, &fp);
	uint32_t tail = frag ? (uint32_t)(f->size % bs) : 0;
	if (!err && tail)
		err = src->ops->read(src, c, f->size - tail, d->buf, tail);
	if (!err && tail) {
		c->st.bytes_in += tail;
		if (fp.hash)
			err = sha_update(c, d, d->buf, tail);
	}
	if (!err && src->ops->end_file)
		err = src->ops->end_file(src, c);
	if (!err && fp.hash && !EVP_DigestFinal_ex(d->sha, digest, NULL))
		err = mk_fail(c, SQK_ENOMEM, "SHA-256 failed");
	if (!err)
		err = conclude(c, d, &fp, frag, tail, fp.hash || seen ? digest : NULL);
	progress_show(c, &d->pr, d->p, false);
	return err;
}

/* ---- fragments ---- */

static int piece_group_cmp(const struct mk_data *d, const struct piece *x, const struct piece *y)
{
	int r = dir_name_cmp(d->keys + x->key, x->cls_len, d->keys + y->key, y->cls_len);
	if (!r && x->ldir != y->ldir)
		r = x->ldir < y->ldir ? -1 : 1;
	if (!r)
		r = dir_name_cmp(d->keys + x->key + x->cls_len, x->stem_len,
				 d->keys + y->key + y->cls_len, y->stem_len);
	return r;
}

/* Fragment order: similar files next to each other compress better than directory order. */
static int piece_cmp(const void *a, const void *b, void *arg)
{
	const struct piece *x = a, *y = b;
	int r = piece_group_cmp(arg, x, y);
	return r ? r : (x->order > y->order) - (x->order < y->order);
}

/* Whether two neighbours in the packing order are of one group: one near-duplicate cluster,
 * or both unclustered with the same similarity key. */
static bool same_group(const struct mk_data *d, const struct piece *x, const struct piece *y)
{
	if (x->grp != SQK_NONE32 || y->grp != SQK_NONE32)
		return x->grp == y->grp;
	return !piece_group_cmp(d, x, y);
}

/* Bytes of the run of pieces from i of the same group. */
static uint64_t group_bytes(const struct mk_data *d, const struct piece *v, size_t n, size_t i)
{
	uint64_t sum = v[i].len;
	for (size_t j = i + 1; j < n && same_group(d, &v[j - 1], &v[j]); j++)
		sum += v[j].len;
	return sum;
}

/* Assigns each piece its fragment block and offset, numbered from c->nfrags. A group of
 * near-identical files (foo.py and its .pyc variants) that fits one block is not split across
 * two: apart, each compresses alone. */
static void plan_fragments(struct mk_ctx *c, const struct mk_data *d, struct piece *v, size_t n,
			   bool in_order)
{
	uint32_t bs = c->opt->block_size, fill = 0, idx = c->nfrags;
	for (size_t i = 0; i < n; i++) {
		bool group_start = in_order || i == 0 || !same_group(d, &v[i - 1], &v[i]);
		uint64_t need = group_start && !in_order ? group_bytes(d, v, n, i) : v[i].len;
		if (fill && (fill + v[i].len > bs || (need <= bs && fill + need > bs))) {
			idx++;
			fill = 0;
		}
		v[i].f->frag_index = idx;
		v[i].f->frag_offset = fill;
		fill += v[i].len;
	}
	if (n)
		c->nfrags = idx + 1;
}

static int write_fragments(struct mk_ctx *c, struct mk_data *d, size_t from)
{
	struct mk_job *j = NULL;
	int err = 0;
	for (size_t i = from; i < d->npieces && !err; i++) {
		struct piece *pc = &d->pieces[i];
		struct mk_file *f = pc->f;
		if (!j || f->frag_index != j->frag_idx) {
			if (j)
				mk_pipeline_submit(d->p);
			j = mk_pipeline_acquire(d->p);
			if (!j)
				return SQK_EIO;
			j->kind = MK_JOB_FRAG;
			j->frag_idx = f->frag_index;
			j->in_len = 0;
		}
		err = mk_spill_get(c, d->tails, pc->ref, j->in + f->frag_offset, pc->len);
		if (err)
			return err;
		j->in_len = f->frag_offset + pc->len;
		if (mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
	}
	if (j)
		mk_pipeline_submit(d->p);
	return err;
}

static void data_free(struct mk_ctx *c)
{
	struct mk_data *d = c->data;
	if (!d)
		return;
	mk_count_stop(d->pr.count);
	mk_spill_destroy(d->tails);
	mk_dedup_destroy(d->dd);
	free(d->pieces);
	free(d->sketches);
	free(d->keys);
	free(d->buf);
	EVP_MD_CTX_free(d->sha);
	free(d);
	c->data = NULL;
}

int mk_data_start(struct mk_ctx *c)
{
	struct mk_data *d = calloc(1, sizeof(*d));
	if (!d)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->data = d;
	clock_gettime(CLOCK_MONOTONIC, &d->pr.start);
	d->buf = malloc(c->opt->block_size);
	d->sha = EVP_MD_CTX_new();
	if (!d->buf || !d->sha)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = mk_spill_create(c, "file tails", c->opt->tail_mem, &d->tails);
	if (!err)
		err = mk_dedup_create(c, &d->dd);
	if (!err)
		err = mk_pipeline_start(c, &d->p);
	if (!err && c->opt->progress && mk_count_start(c, &d->pr.count))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	return err;
}

int mk_data_abort(struct mk_ctx *c)
{
	int err = c->data && c->data->p ? mk_pipeline_finish(c->data->p) : 0;
	data_free(c);
	return err;
}

/* --reuse: old fragment blocks most of whose bytes live on are copied whole (numbered from
 * c->nfrags in the order their first piece came); their pieces point into them and leave the
 * packing. Returns how many pieces (moved to the front of d->pieces) are placed that way. */
static size_t keep_old_fragments(struct mk_ctx *c, struct mk_data *d)
{
	struct mk_reuse *r = c->reuse;
	size_t k = 0;
	if (!r)
		return 0;
	for (size_t i = 0; i < d->npieces; i++) {
		struct piece *pc = &d->pieces[i];
		if (pc->old_idx == SQK_NONE32)
			continue;
		struct mk_reuse_frag *fr = &r->frags[pc->old_idx];
		if (fr->live * 2 < fr->end)
			continue;
		if (fr->new_idx == SQK_NONE32)
			fr->new_idx = c->nfrags++;
		pc->f->frag_index = fr->new_idx;
		pc->f->frag_offset = pc->old_off;
		struct piece t = d->pieces[k];
		d->pieces[k++] = *pc;
		*pc = t;
	}
	return k;
}

/* Writes the old fragment blocks kept by keep_old_fragments since fragment `since`, as they
 * are, in the old image's order. */
static int copy_old_fragments(struct mk_ctx *c, struct mk_data *d, uint32_t since)
{
	struct mk_reuse *r = c->reuse;
	for (uint32_t i = 0; r && i < r->nfrags; i++) {
		if (r->frags[i].new_idx == SQK_NONE32 || r->frags[i].new_idx < since)
			continue;
		uint64_t start;
		uint32_t word;
		int err = sqk_fragment_entry(r->img, i, &start, &word);
		struct mk_job *j = err ? NULL : mk_pipeline_acquire(d->p);
		if (!err && !j)
			return SQK_EIO;
		uint32_t stored = word & SQK_BLOCK_SIZE_MASK;
		if (!err && (stored == 0 || stored > c->opt->block_size))
			err = SQK_ECORRUPT;
		if (!err)
			err = sqk_image_read_raw(r->img, start, j->in, stored);
		if (err)
			return mk_fail(c, err,
				       "--reuse: cannot read fragment block %u of the old image: "
				       "%s",
				       i, sqk_strerror(err));
		j->kind = MK_JOB_COPY;
		j->frag_idx = r->frags[i].new_idx;
		j->word = word;
		j->in_len = stored;
		mk_pipeline_submit(d->p);
		r->frag_blocks++;
	}
	return 0;
}

/* Moves the near-duplicates of each piece of v[0..n) (in similarity-key order) next to it, a
 * window of MK_SKETCH_WINDOW pieces at a time, and marks the clusters for plan_fragments. */
static int cluster_pieces(struct mk_ctx *c, const struct mk_data *d, struct piece *v, size_t n)
{
	size_t w = n < MK_SKETCH_WINDOW ? n : MK_SKETCH_WINDOW;
	struct mk_sketch *sk = malloc(w * sizeof(*sk) + 1);
	uint32_t *len = malloc(w * sizeof(*len) + 1), *perm = malloc(w * sizeof(*perm) + 1);
	uint32_t *grp = malloc(w * sizeof(*grp) + 1);
	struct piece *tmp = malloc(w * sizeof(*tmp) + 1);
	int err = sk && len && perm && grp && tmp ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t at = 0; at < n && !err; at += w) {
		size_t m = n - at < w ? n - at : w;
		for (size_t i = 0; i < m; i++) {
			if (v[at + i].sk == SQK_NONE32)
				/* empty: neither seeds nor joins */
				memset(&sk[i], 0, sizeof(sk[i]));
			else
				sk[i] = d->sketches[v[at + i].sk];
			len[i] = v[at + i].len;
		}
		err = mk_cluster(c, sk, len, m, c->opt->block_size, perm, grp);
		for (size_t i = 0; i < m && !err; i++) {
			tmp[i] = v[at + perm[i]];
			tmp[i].grp = grp[i] == SQK_NONE32 ? SQK_NONE32 : (uint32_t)(at + grp[i]);
		}
		if (!err)
			memcpy(v + at, tmp, m * sizeof(*tmp));
	}
	free(sk);
	free(len);
	free(perm);
	free(grp);
	free(tmp);
	return err;
}

/* Packs the waiting pieces into fragment blocks and hands them to the pipeline; the tail store
 * and the keys start again empty. in_order (the files laid out first): packed in the order they
 * came, none in an old fragment block, so a start that reads them reads one run of blocks. */
static int flush_pieces(struct mk_ctx *c, struct mk_data *d, bool in_order)
{
	uint32_t since = c->nfrags;
	size_t from = in_order ? 0 : keep_old_fragments(c, d);
	if (!in_order && d->npieces - from > 1)
		qsort_r(d->pieces + from, d->npieces - from, sizeof(*d->pieces), piece_cmp, d);
	int err = in_order ? 0 : cluster_pieces(c, d, d->pieces + from, d->npieces - from);
	if (err)
		return err;
	plan_fragments(c, d, d->pieces + from, d->npieces - from, in_order);
	err = copy_old_fragments(c, d, since);
	if (!err)
		err = write_fragments(c, d, from);
	d->npieces = 0;
	d->nsketches = 0;
	d->keys_len = 0;
	mk_spill_reset(d->tails);
	return err;
}

int mk_data_known(struct mk_ctx *c, const struct mk_file *f, const uint8_t *digest)
{
	const struct mk_file *orig;

	return mk_dedup_find_or_add(c, c->data->dd, f, digest, &orig);
}

int mk_data_flush_front(struct mk_ctx *c)
{
	return flush_pieces(c, c->data, true);
}

uint64_t mk_data_tails_waiting(const struct mk_ctx *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->data->npieces; i++)
		n += c->data->pieces[i].len;
	return n;
}

int mk_data_finish(struct mk_ctx *c)
{
	struct mk_data *d = c->data;
	int err = flush_pieces(c, d, false);
	if (!err)
		progress_show(c, &d->pr, d->p, true);
	/* A writer or worker failure (e.g. ENOSPC) is the cause of whatever the reading side saw
	 * afterwards, so it is the error reported. */
	int perr = mk_pipeline_finish(d->p);
	d->p = NULL;
	if (perr)
		err = perr;
	data_free(c);
	return err;
}
