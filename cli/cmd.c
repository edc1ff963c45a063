/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the reading commands: open an image (reads verified unless --no-verify) with
 * a log callback that forwards the library's corruption messages to stderr, number parsing,
 * error messages (a chunk that failed its integrity check named once, with the path), lookups. */
#include "cmd.h"
#include "common/parse.h"
#include "progress.h"
#include "common/integrity.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library calls this (from any thread) with one line naming the image and the offset. */
static void cmd_log(void *ctx, const char *msg)
{
	struct cmd *c = ctx;

	flockfile(stderr); /* also guards c->why */
	progress_clear(c->progress);
	fprintf(stderr, "sqk %s: %s\n", c->name, msg);
	snprintf(c->why, sizeof(c->why), "%s", msg);
	funlockfile(stderr);
}

static int add_header(const char *cmd, struct remote *r, const char *line)
{
	if (sqk_http_header_check(line)) {
		/* the line may hold a secret: none of it is shown */
		cmd_usage_err(cmd, "bad header (header %zu): need 'Name: value' on one line",
				  r->o.nheaders + 1);
		return 2;
	}
	if (r->o.nheaders == SQK_CMD_MAX_HEADERS) {
		cmd_usage_err(cmd, "more than %d headers", SQK_CMD_MAX_HEADERS);
		return 2;
	}
	r->hdr[r->o.nheaders++] = line;
	r->o.headers = r->hdr;
	return 0;
}

/* Reads a header file: one "Name: value" per line; empty lines and '#' comments skipped. */
static int header_file(const char *cmd, struct remote *r, const char *path)
{
	char *text = NULL;
	int rc;

	if (r->nfiles == SQK_CMD_MAX_HEADERS) {
		cmd_usage_err(cmd, "cannot read header file '%s': too many files", path);
		return 2;
	}
	rc = sqk_http_header_file(path, &text, r->hdr, SQK_CMD_MAX_HEADERS, &r->o.nheaders);
	r->files[r->nfiles++] = text;
	r->o.headers = r->hdr;
	if (rc == SQK_EIO)
		cmd_usage_err(cmd, "cannot read header file '%s': %s", path, strerror(errno));
	else if (rc) /* the line may hold a secret: none of it is shown */
		cmd_usage_err(cmd, "header file '%s': %s (need 'Name: value' lines)", path,
				  rc == SQK_ETOOBIG ? "too many headers" : "a bad line");
	return rc ? 2 : 0;
}

/* --verify (the default: a no-op, kept for old scripts) and --no-verify. sqk verify checks
 * everything whatever it is told, so it takes neither. */
static int verify_opt(const char *cmd, struct remote *r, int ch)
{
	if (strcmp(cmd, "verify") == 0) {
		cmd_usage_err(cmd, "%s: sqk verify always checks the integrity data",
				  ch == SQK_OPT_VERIFY ? "--verify" : "--no-verify");
		return 2;
	}
	if (ch == SQK_OPT_VERIFY)
		r->verify_asked = true;
	else
		r->no_verify = true;
	return 0;
}

/* --require-integrity, --trust PUBKEY (repeatable), --trust-dir DIR, --allow-rollback. */
static int trust_opt(const char *cmd, struct remote *r, int ch, const char *arg)
{
	switch (ch) {
	case SQK_OPT_REQUIRE_INTEGRITY:
		r->require_integ = true;
		return 0;
	case SQK_OPT_ALLOW_ROLLBACK:
		r->allow_rollback = true;
		return 0;
	case SQK_OPT_TRUST_DIR:
		r->trust_dir = arg;
		return 0;
	default:
		if (r->ntrust == SQK_CMD_MAX_TRUST) {
			cmd_usage_err(cmd, "--trust %s: at most %d keys (use --trust-dir)", arg,
				      SQK_CMD_MAX_TRUST);
			return 2;
		}
		r->trust[r->ntrust++] = arg;
		return 0;
	}
}

int cmd_remote_opt(const char *cmd, struct remote *r, int ch, const char *arg)
{
	uint64_t v;

	switch (ch) {
	case SQK_OPT_CACHE_DIR:
		r->o.cache_dir = arg;
		return 0;
	case SQK_OPT_CACHE_SIZE:
		if (parse_bytes(arg, UINT64_MAX, &r->o.cache_size))
			break;
		r->o.cache_size_set = true;
		return 0;
	case SQK_OPT_ROOT_HASH:
		if (integ_parse_hex(arg, r->root))
			break;
		r->has_root = true;
		return 0;
	case SQK_OPT_RETRIES:
		if (parse_u64(arg, 100, &v))
			break;
		r->o.retries = (unsigned)v;
		r->o.retries_set = true;
		return 0;
	case SQK_OPT_TIMEOUT:
		if (parse_u64(arg, 3600, &v) || v == 0)
			break;
		r->o.timeout_s = (unsigned)v;
		return 0;
	case SQK_OPT_HEADER:
		return add_header(cmd, r, arg);
	case SQK_OPT_HEADER_FILE:
		return header_file(cmd, r, arg);
	case SQK_OPT_CACERT:
		r->o.ca_file = arg;
		return 0;
	case SQK_OPT_S3_ENDPOINT:
		r->o.s3_endpoint = arg;
		return 0;
	case SQK_OPT_NO_SIGN_REQUEST:
		r->o.no_sign_request = true;
		return 0;
	case SQK_OPT_NO_PREFETCH:
		r->no_prefetch = true;
		return 0;
	case SQK_OPT_STATS:
		r->stats = true;
		return 0;
	case SQK_OPT_VERIFY:
	case SQK_OPT_NO_VERIFY:
		return verify_opt(cmd, r, ch);
	case SQK_OPT_REQUIRE_INTEGRITY:
	case SQK_OPT_TRUST:
	case SQK_OPT_TRUST_DIR:
	case SQK_OPT_ALLOW_ROLLBACK:
		return trust_opt(cmd, r, ch, arg);
	default:
		return 1;
	}
	cmd_usage_err(cmd, "bad argument '%s' for %s", arg,
			  ch == SQK_OPT_CACHE_SIZE ? "--cache-size (a size: 0, 512M, 2G)"
			  : ch == SQK_OPT_ROOT_HASH ? "--root-hash (64 hex digits)"
			  : ch == SQK_OPT_RETRIES ? "--retries (0..100)"
						  : "--timeout (1..3600 seconds)");
	return 2;
}

void cmd_remote_free(struct remote *r)
{
	unsigned i;

	for (i = 0; i < r->nfiles; i++)
		free(r->files[i]);
	memset(r, 0, sizeof(*r));
}

int cmd_open(struct cmd *c)
{
	struct sqk_open_opts o;
	int err;

	sqk_open_opts_init(&o);
	o.offset = c->offset;
	o.cache_bytes = c->cache_bytes;
	o.log = cmd_log;
	o.log_ctx = c;
	o.no_verify = c->remote.no_verify;
	o.quiet_mismatch = true; /* named once, with the path, by cmd_err */
	c->remote.o.size = sizeof(c->remote.o); /* the struct is zeroed with the command's */
	o.http = &c->remote.o;
	o.root_hash = c->remote.has_root ? c->remote.root : NULL;
	/* the hint is a start's working set: a command fetches what it reads, and the hint's
	 * ranges would take the link from the tables it waits for; one that reads the whole image
	 * gets an access-ordered image's front in parallel parts instead of file by file */
	o.no_prefetch = !c->whole || c->remote.no_prefetch;
	o.require_integrity = c->remote.require_integ;
	o.trust = c->remote.ntrust ? c->remote.trust : NULL;
	o.trust_dir = c->remote.trust_dir;
	o.allow_rollback = c->remote.allow_rollback;
	c->img = NULL;
	if (sqk_is_url(c->image) && !c->shown)
		c->shown = sqk_url_display(c->image);
	err = sqk_image_open(c->image, &o, &c->img);
	/* those: the library's line says it all */
	if (err && !sqk_err_not_image(err) && err != SQK_ENOINTEG && err != SQK_EUNTRUSTED &&
	    err != SQK_EROLLBACK) {
		/* a verified open fails on a bad chunk holding the superblock or a table */
		const char *hint = err == SQK_ECORRUPT && !o.no_verify && !sqk_is_url(c->image)
					   ? " (sqk verify lists what is damaged; --no-verify "
					     "opens it unchecked)" : "";

		if (c->offset)
			cmd_err(c, NULL, err, "cannot open image (offset %llu)%s",
				    (unsigned long long)c->offset, hint);
		else
			cmd_err(c, NULL, err, "cannot open image%s", hint);
	}
	if (!err && c->remote.verify_asked && !c->remote.no_verify && !sqk_image_verified(c->img))
		cmd_err(c, NULL, 0, "no integrity data (or not at offset 0); reads are not "
			    "verified");
	return err;
}

void cmd_http_text(char *buf, size_t len, const struct sqk_http_stats *h)
{
	size_t n;

	snprintf(buf, len, "%llu requests, %llu bytes (%llu fetched unused), %llu retries; disk "
		 "cache %llu hits, %llu misses; %llu digest groups fetched",
		 (unsigned long long)h->requests, (unsigned long long)h->bytes,
		 (unsigned long long)h->bytes_unused, (unsigned long long)h->retries,
		 (unsigned long long)h->disk_hits, (unsigned long long)h->disk_misses,
		 (unsigned long long)h->digest_groups);
	n = strlen(buf);
	if (h->offline && n < len) /* the server was not reached at the open */
		snprintf(buf + n, len - n, "; opened offline from the cache folder");
}

void cmd_stats_line(const char *name, const char *shown, struct sqk_io *io)
{
	struct sqk_http_stats h = { .size = sizeof(h) };
	char text[512];

	if (!io || sqk_io_http_stats(io, &h))
		return;
	cmd_http_text(text, sizeof(text), &h);
	fprintf(stderr, "sqk %s: %s: http: %s\n", name, shown, text);
}

void cmd_close(struct cmd *c)
{
	if (c->img && c->remote.stats) {
		sqk_image_quiesce(c->img); /* transfers in flight end: the counts are final */
		cmd_stats_line(c->name, c->shown ? c->shown : c->image, sqk_image_io(c->img));
	}
	sqk_image_close(c->img);
	c->img = NULL;
	cmd_remote_free(&c->remote);
	free(c->shown);
	c->shown = NULL;
}

/* Where in file f the image bytes [m->start, m->end) lie: appended to the message (nothing
 * when they are not in its data, or its block list cannot be read). */
static void mismatch_where(const struct cmd *c, const struct sqk_inode *f,
			   const struct sqk_mismatch *m)
{
	uint32_t n = 0, i, first = UINT32_MAX, last = 0, *w, word;
	uint32_t bs = sqk_image_super(c->img)->block_size;
	uint64_t pos = f->blocks_start, fpos;

	if (sqk_file_blocks(c->img, f, NULL, 0, &n) != (n ? SQK_ETOOBIG : 0))
		return;
	w = n ? malloc(n * sizeof(*w)) : NULL;
	if (n && (!w || sqk_file_blocks(c->img, f, w, n, &n))) {
		free(w);
		return;
	}
	for (i = 0; i < n; pos += w[i] & SQK_BLOCK_SIZE_MASK, i++) {
		if ((w[i] & SQK_BLOCK_SIZE_MASK) && pos < m->end &&
		    pos + (w[i] & SQK_BLOCK_SIZE_MASK) > m->start) {
			last = i;
			first = first < n ? first : i;
		}
	}
	free(w);
	if (first < n && first == last)
		fprintf(stderr, "; in the block at file offset %llu",
			(unsigned long long)first * bs);
	else if (first < n) /* a chunk over two blocks: either may hold the bad bytes */
		fprintf(stderr, "; in the blocks at file offsets %llu to %llu",
			(unsigned long long)first * bs, (unsigned long long)last * bs);
	else if (f->frag_index != SQK_NONE32 &&
		 sqk_fragment_entry(c->img, f->frag_index, &fpos, &word) == 0 &&
		 fpos < m->end && fpos + (word & SQK_BLOCK_SIZE_MASK) > m->start)
		fprintf(stderr, "; in the fragment block holding the file's tail, from file offset "
			"%llu", (unsigned long long)n * bs);
}

/* The reason printed after a message: the chunk that failed its integrity check in a read of
 * file f (NULL = any read), else the library's message for err. */
static void err_reason(const struct cmd *c, const struct sqk_inode *f, int err)
{
	struct sqk_mismatch m;

	if (err == SQK_ECORRUPT && c->img && sqk_image_mismatch(c->img, f ? f->ino : 0, &m) == 0) {
		fprintf(stderr, ": integrity check failed at image offset %llu (bytes %llu..%llu, "
			"chunk %llu, do not match their digest", (unsigned long long)m.start,
			(unsigned long long)m.start, (unsigned long long)m.end - 1,
			(unsigned long long)m.chunk);
		if (f && m.ino == f->ino)
			mismatch_where(c, f, &m);
		fputc(')', stderr);
		return;
	}
	if (err)
		fprintf(stderr, ": %s", sqk_strerror(err));
}

/* tail (may be NULL) follows the reason: what the command made of the failure. */
static void verr(const struct cmd *c, const char *path, const struct sqk_inode *f, int err,
		 const char *tail, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	flockfile(stderr);
	progress_clear(c->progress);
	if (path)
		fprintf(stderr, "sqk %s: %s: /%s: %s", c->name, c->shown ? c->shown : c->image,
			path[0] == '/' ? path + 1 : path, msg);
	else
		fprintf(stderr, "sqk %s: %s: %s", c->name, c->shown ? c->shown : c->image, msg);
	err_reason(c, f, err);
	if (tail)
		fprintf(stderr, ": %s", tail);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void cmd_err(const struct cmd *c, const char *path, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(c, path, NULL, err, NULL, fmt, ap);
	va_end(ap);
}

void cmd_read_err(const struct cmd *c, const char *path, const struct sqk_inode *f,
		      int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(c, path, f, err, NULL, fmt, ap);
	va_end(ap);
}

void cmd_read_err_tail(const struct cmd *c, const char *path, const struct sqk_inode *f,
		       int err, const char *tail, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(c, path, f, err, tail, fmt, ap);
	va_end(ap);
}

void cmd_usage_err(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sqk %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see sqk %s --help)\n", name);
}

int cmd_lookup(struct cmd *c, const char *path, struct sqk_inode *out)
{
	int err = sqk_lookup_path(c->img, path, out);

	if (err)
		cmd_err(c, path, err, "lookup failed");
	return err;
}

int cmd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
