/* File data: large files block by block (holes skipped without reading), then small files and
 * tails packed into fragment blocks ordered by file type, then duplicates pointed at their
 * originals. Reading happens here on the main thread; compression and writing in pipeline.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/format.h"
#include "mk.h"
#include "pipeline.h"

int mk_open_source(struct mk_ctx *c, const struct mk_node *n, int *fd)
{
	*fd = open(n->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (*fd < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot open '%s': %s", n->path,
			       strerror(errno));
	return 0;
}

int mk_pread(struct mk_ctx *c, const struct mk_node *n, int fd, uint64_t off, void *buf,
	     size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mk_fail(c, sqk_from_errno(errno), "cannot read '%s' at offset %llu: %s",
				       n->path, (unsigned long long)off, strerror(errno));
		if (r == 0)
			return mk_fail(c, SQK_ECHANGED,
				       "'%s' changed size while being read (ends at %llu, expected "
				       "%llu bytes)", n->path, (unsigned long long)off,
				       (unsigned long long)n->size);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

/* Checks, after reading, that the file still has the size it had when walked. */
static int check_unchanged(struct mk_ctx *c, const struct mk_node *n, int fd)
{
	struct stat st;
	if (fstat(fd, &st))
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s", n->path,
			       strerror(errno));
	if ((uint64_t)st.st_size != n->size)
		return mk_fail(c, SQK_ECHANGED,
			       "'%s' changed size while being read (%llu bytes, then %llu)", n->path,
			       (unsigned long long)n->size, (unsigned long long)st.st_size);
	return 0;
}

/* ---- progress ---- */

struct progress {
	struct timespec start, last;
	uint64_t files_total, files_done, bytes_total;
};

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
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
	double frac = pr->bytes_total ? (double)c->st.bytes_in / (double)pr->bytes_total : 1.0;
	double out = (double)mk_pipeline_written(p);
	double eta = frac > 0.01 ? el / frac - el : 0;
	int bar = (int)(frac * 30);
	fprintf(stderr, "\r[%-30.*s] %3.0f%% %llu/%llu files %.1f MiB in %.1f MiB out (%.1f%%) "
			"ETA %.0fs ",
		bar, "##############################", frac * 100,
		(unsigned long long)pr->files_done, (unsigned long long)pr->files_total,
		(double)c->st.bytes_in / 1048576.0, out / 1048576.0,
		c->st.bytes_in ? 100.0 * out / (double)c->st.bytes_in : 100.0, eta < 0 ? 0 : eta);
	if (last)
		fputc('\n', stderr);
}

/* ---- large files ---- */

struct reader {
	struct mk_ctx *c;
	struct mk_pipeline *p;
	struct progress pr;
	bool use_frags;
};

/* Whether [off, off+len) lies entirely in a hole, using SEEK_DATA (caches the next data start). */
static bool in_hole(int fd, uint64_t off, uint64_t len, uint64_t *data_at)
{
	if (*data_at == UINT64_MAX || *data_at < off) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		if (d < 0)
			*data_at = errno == ENXIO ? UINT64_MAX - 1 : off;
		else
			*data_at = (uint64_t)d;
	}
	return *data_at >= off + len;
}

static int submit_block(struct reader *r, struct mk_node *n, int fd, uint32_t k, uint64_t off,
			size_t len)
{
	struct mk_job *j = mk_pipeline_acquire(r->p);
	if (!j)
		return SQK_EIO;
	int err = mk_pread(r->c, n, fd, off, j->in, len);
	if (err)
		return err; /* the build stops; the slot is never handed to the workers */
	j->in_len = len;
	j->kind = MK_JOB_DATA;
	j->file = n->file;
	j->block = k;
	mk_pipeline_submit(r->p);
	return 0;
}

static int write_blocks(struct reader *r, struct mk_node *n)
{
	struct mk_ctx *c = r->c;
	struct mk_file *f = n->file;
	uint32_t bs = c->opt->block_size;
	uint64_t data_at = UINT64_MAX;
	int fd, err = mk_open_source(c, n, &fd);
	if (err)
		return err;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	for (uint32_t k = 0; k < f->nblocks && !err; k++) {
		uint64_t off = (uint64_t)k * bs;
		size_t len = f->size - off < bs ? (size_t)(f->size - off) : bs;
		if (mk_cancelled(c)) {
			err = mk_fail(c, SQK_EINTR, "interrupted");
		} else if (f->maybe_sparse && in_hole(fd, off, len, &data_at)) {
			f->words[k] = 0;
			f->sparse += len;
			atomic_fetch_add(&c->st.sparse_blocks, 1);
		} else {
			err = submit_block(r, n, fd, k, off, len);
			c->st.bytes_in += len;
		}
		progress_show(c, &r->pr, r->p, false);
	}
	if (!err)
		err = check_unchanged(c, n, fd);
	close(fd);
	return err;
}

static int alloc_words(struct mk_ctx *c, struct mk_node *n, bool use_frags)
{
	struct mk_file *f = n->file;
	uint32_t bs = c->opt->block_size;
	uint64_t nb = use_frags ? f->size / bs : (f->size + bs - 1) / bs;
	if (nb > UINT32_MAX / 2)
		return mk_fail(c, SQK_ETOOBIG, "'%s' is too large", n->path);
	f->nblocks = (uint32_t)nb;
	if (!nb)
		return 0;
	f->words = calloc(nb, sizeof(*f->words));
	return f->words ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
}

/* Whether a file's tail (or whole content) goes into a fragment. */
static bool wants_fragment(const struct mk_ctx *c, const struct mk_file *f)
{
	uint32_t bs = c->opt->block_size;
	if (c->opt->no_fragments || f->size % bs == 0)
		return false;
	return f->size < bs || !c->opt->no_tailends;
}

static int write_large_files(struct reader *r)
{
	struct mk_ctx *c = r->c;
	int err = 0;
	for (size_t i = 0; i < c->nnodes && !err; i++) {
		struct mk_node *n = c->nodes[i];
		if (!n->file || n->file->dup_of)
			continue;
		bool frag = wants_fragment(c, n->file);
		err = alloc_words(c, n, frag);
		if (!err && n->file->nblocks)
			err = write_blocks(r, n);
		if (!frag)
			r->pr.files_done++; /* else counted when its fragment piece is read */
	}
	return err;
}

/* ---- fragments ---- */

struct piece {
	struct mk_node *n;
	uint64_t off;               /* offset of the piece in the file */
	uint32_t len;
	/* Similarity key: type class, logical directory, stem. */
	const char *cls;
	size_t cls_len;
	const struct mk_node *ldir;
	size_t stem_len;            /* name bytes before the first '.' */
};


/* Fills the key: the extension is the type class (Python bytecode joins its source's class),
 * and a __pycache__ directory counts as its parent so foo.py and its .pyc files meet. */
static void piece_key(struct piece *p)
{
	const struct mk_node *n = p->n;
	const char *dot = strrchr(n->name, '.');
	p->cls = dot && dot != n->name ? dot + 1 : "";
	p->cls_len = strlen(p->cls);
	if (p->cls_len == 3 && !memcmp(p->cls, "pyc", 3))
		p->cls_len = 2;
	p->ldir = n->parent;
	if (p->ldir && p->ldir->parent && !strcmp(p->ldir->name, "__pycache__"))
		p->ldir = p->ldir->parent;
	p->stem_len = strcspn(n->name, ".");
}

static int piece_group_cmp(const struct piece *x, const struct piece *y)
{
	int r = sqk_name_cmp(x->cls, x->cls_len, y->cls, y->cls_len);
	if (!r && x->ldir != y->ldir)
		r = x->ldir->order < y->ldir->order ? -1 : 1;
	if (!r)
		r = sqk_name_cmp(x->n->name, x->stem_len, y->n->name, y->stem_len);
	return r;
}

/* Fragment order: similar files next to each other compress better than directory order. */
static int piece_cmp(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;
	int r = piece_group_cmp(x, y);
	return r ? r : (x->n->order > y->n->order) - (x->n->order < y->n->order);
}

static int collect_pieces(struct mk_ctx *c, struct piece **out, size_t *count)
{
	uint32_t bs = c->opt->block_size;
	size_t n = 0;
	struct piece *v = calloc(c->nnodes ? c->nnodes : 1, sizeof(*v));
	if (!v)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *nd = c->nodes[i];
		if (!nd->file || nd->file->dup_of || !wants_fragment(c, nd->file))
			continue;
		v[n].n = nd;
		v[n].len = (uint32_t)(nd->size % bs);
		v[n].off = nd->size - v[n].len;
		piece_key(&v[n]);
		n++;
	}
	qsort(v, n, sizeof(*v), piece_cmp);
	*out = v;
	*count = n;
	return 0;
}

/* Bytes of the run of pieces from i with the same group key. */
static uint64_t group_bytes(const struct piece *v, size_t n, size_t i)
{
	uint64_t sum = v[i].len;
	for (size_t j = i + 1; j < n && !piece_group_cmp(&v[i], &v[j]); j++)
		sum += v[j].len;
	return sum;
}

/* Assigns each piece its fragment block and offset. A group of near-identical files (foo.py and
 * its .pyc variants) that fits one block is not split across two: apart, each compresses alone. */
static int plan_fragments(struct mk_ctx *c, struct piece *v, size_t n)
{
	uint32_t bs = c->opt->block_size, fill = 0, idx = 0;
	for (size_t i = 0; i < n; i++) {
		bool group_start = i == 0 || piece_group_cmp(&v[i - 1], &v[i]);
		uint64_t need = group_start ? group_bytes(v, n, i) : v[i].len;
		if (fill && (fill + v[i].len > bs || (need <= bs && fill + need > bs))) {
			idx++;
			fill = 0;
		}
		v[i].n->file->frag_index = idx;
		v[i].n->file->frag_offset = fill;
		fill += v[i].len;
	}
	c->nfrags = n ? idx + 1 : 0;
	c->frags = calloc(c->nfrags ? c->nfrags : 1, sizeof(*c->frags));
	return c->frags ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
}

static int read_piece(struct mk_ctx *c, const struct piece *pc, uint8_t *dst)
{
	int fd, err = mk_open_source(c, pc->n, &fd);
	if (err)
		return err;
	err = mk_pread(c, pc->n, fd, pc->off, dst, pc->len);
	if (!err)
		err = check_unchanged(c, pc->n, fd);
	close(fd);
	return err;
}

static int write_fragments(struct reader *r, struct piece *v, size_t n)
{
	struct mk_ctx *c = r->c;
	struct mk_job *j = NULL;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		struct mk_file *f = v[i].n->file;
		if (!j || f->frag_index != j->frag_idx) {
			if (j)
				mk_pipeline_submit(r->p);
			j = mk_pipeline_acquire(r->p);
			if (!j)
				return SQK_EIO;
			j->kind = MK_JOB_FRAG;
			j->frag_idx = f->frag_index;
			j->in_len = 0;
		}
		err = read_piece(c, &v[i], j->in + f->frag_offset);
		if (err)
			return err;
		j->in_len = f->frag_offset + v[i].len;
		c->st.bytes_in += v[i].len;
		r->pr.files_done++;
		if (!err && mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
		progress_show(c, &r->pr, r->p, false);
	}
	if (j)
		mk_pipeline_submit(r->p);
	return err;
}

/* Duplicates share the original's blocks and fragment (copied after both are placed). */
static int resolve_duplicates(struct mk_ctx *c)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *n = c->nodes[i];
		if (!n->file || !n->file->dup_of)
			continue;
		struct mk_file *f = n->file, *o = n->file->dup_of->file;
		f->blocks_start = o->blocks_start;
		f->nblocks = o->nblocks;
		f->frag_index = o->frag_index;
		f->frag_offset = o->frag_offset;
		f->sparse = o->sparse;
		if (o->nblocks) {
			f->words = malloc((size_t)o->nblocks * sizeof(*f->words));
			if (!f->words)
				return mk_fail(c, SQK_ENOMEM, "out of memory");
			memcpy(f->words, o->words, (size_t)o->nblocks * sizeof(*f->words));
		}
	}
	return 0;
}

static void progress_init(struct mk_ctx *c, struct progress *pr)
{
	memset(pr, 0, sizeof(*pr));
	clock_gettime(CLOCK_MONOTONIC, &pr->start);
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *n = c->nodes[i];
		if (n->file && !n->file->dup_of) {
			pr->files_total++;
			pr->bytes_total += n->size;
		}
	}
}

int mk_data_write(struct mk_ctx *c)
{
	struct reader r = { .c = c };
	struct piece *pieces = NULL;
	size_t npieces = 0;
	progress_init(c, &r.pr);
	int err = collect_pieces(c, &pieces, &npieces);
	if (!err)
		err = plan_fragments(c, pieces, npieces);
	if (!err)
		err = mk_pipeline_start(c, &r.p);
	if (!err) {
		err = write_large_files(&r);
		if (!err)
			err = write_fragments(&r, pieces, npieces);
		if (!err)
			progress_show(c, &r.pr, r.p, true);
		/* A writer or worker failure (e.g. ENOSPC) is the cause of whatever the reading side
		 * saw afterwards, so it is the error reported. */
		int perr = mk_pipeline_finish(r.p);
		if (perr)
			err = perr;
	}
	free(pieces);
	if (!err)
		err = resolve_duplicates(c);
	return err;
}
