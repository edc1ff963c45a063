/* Helpers shared by the reading commands: open an image with a log callback that forwards the
 * library's corruption messages to stderr, number parsing, error messages, lookups. */
#include "cmd.h"
#include "common/parse.h"
#include "progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library calls this (from any thread) with one line naming the image and the offset. */
static void sqk_cmd_log(void *ctx, const char *msg)
{
	struct sqk_cmd *c = ctx;

	flockfile(stderr); /* also guards c->why */
	sqk_progress_clear(c->progress);
	fprintf(stderr, "sqk %s: %s\n", c->name, msg);
	snprintf(c->why, sizeof(c->why), "%s", msg);
	funlockfile(stderr);
}

static int add_header(const char *cmd, struct sqk_remote *r, const char *line)
{
	if (sqk_http_header_check(line)) {
		/* the line may hold a secret: none of it is shown */
		sqk_cmd_usage_err(cmd, "bad header (header %zu): need 'Name: value' on one line",
				  r->o.nheaders + 1);
		return 2;
	}
	if (r->o.nheaders == SQK_CMD_MAX_HEADERS) {
		sqk_cmd_usage_err(cmd, "more than %d headers", SQK_CMD_MAX_HEADERS);
		return 2;
	}
	r->hdr[r->o.nheaders++] = line;
	r->o.headers = r->hdr;
	return 0;
}

/* Reads a header file: one "Name: value" per line; empty lines and '#' comments skipped. */
static int header_file(const char *cmd, struct sqk_remote *r, const char *path)
{
	char *text = NULL;
	int rc;

	if (r->nfiles == SQK_CMD_MAX_HEADERS) {
		sqk_cmd_usage_err(cmd, "cannot read header file '%s': too many files", path);
		return 2;
	}
	rc = sqk_http_header_file(path, &text, r->hdr, SQK_CMD_MAX_HEADERS, &r->o.nheaders);
	r->files[r->nfiles++] = text;
	r->o.headers = r->hdr;
	if (rc == SQK_EIO)
		sqk_cmd_usage_err(cmd, "cannot read header file '%s': %s", path, strerror(errno));
	else if (rc) /* the line may hold a secret: none of it is shown */
		sqk_cmd_usage_err(cmd, "header file '%s': %s (need 'Name: value' lines)", path,
				  rc == SQK_ETOOBIG ? "too many headers" : "a bad line");
	return rc ? 2 : 0;
}

int sqk_cmd_remote_opt(const char *cmd, struct sqk_remote *r, int ch, const char *arg)
{
	uint64_t v;

	switch (ch) {
	case SQK_OPT_CACHE_DIR:
		r->o.cache_dir = arg;
		return 0;
	case SQK_OPT_CACHE_SIZE:
		if (sqk_parse_size(arg, UINT64_MAX, &r->o.cache_size))
			break;
		r->o.cache_size_set = true;
		return 0;
	case SQK_OPT_ROOT_HASH:
		if (sqk_integ_parse_hex(arg, r->root))
			break;
		r->has_root = true;
		return 0;
	case SQK_OPT_RETRIES:
		if (sqk_parse_u64(arg, 100, &v))
			break;
		r->o.retries = (unsigned)v;
		r->o.retries_set = true;
		return 0;
	case SQK_OPT_TIMEOUT:
		if (sqk_parse_u64(arg, 3600, &v) || v == 0)
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
	default:
		return 1;
	}
	sqk_cmd_usage_err(cmd, "bad argument '%s' for %s", arg,
			  ch == SQK_OPT_CACHE_SIZE ? "--cache-size (a size: 0, 512M, 2G)"
			  : ch == SQK_OPT_ROOT_HASH ? "--root-hash (64 hex digits)"
			  : ch == SQK_OPT_RETRIES ? "--retries (0..100)"
						  : "--timeout (1..3600 seconds)");
	return 2;
}

void sqk_cmd_remote_free(struct sqk_remote *r)
{
	unsigned i;

	for (i = 0; i < r->nfiles; i++)
		free(r->files[i]);
	memset(r, 0, sizeof(*r));
}

int sqk_cmd_open(struct sqk_cmd *c)
{
	struct sqk_open_opts o;
	int err;

	memset(&o, 0, sizeof(o));
	o.offset = c->offset;
	o.log = sqk_cmd_log;
	o.log_ctx = c;
	o.verify = c->verify != 0;
	o.http = &c->remote.o;
	o.root_hash = c->remote.has_root ? c->remote.root : NULL;
	o.no_prefetch = c->remote.no_prefetch;
	c->img = NULL;
	if (sqk_is_url(c->image) && !c->shown)
		c->shown = sqk_url_display(c->image);
	err = sqk_image_open(c->image, &o, &c->img);
	if (err && !sqk_err_not_image(err)) { /* those: the library's line says it all */
		if (c->offset)
			sqk_cmd_err(c, NULL, err, "cannot open image (offset %llu)",
				    (unsigned long long)c->offset);
		else
			sqk_cmd_err(c, NULL, err, "cannot open image");
	}
	return err;
}

void sqk_cmd_close(struct sqk_cmd *c)
{
	sqk_image_close(c->img);
	c->img = NULL;
	sqk_cmd_remote_free(&c->remote);
	free(c->shown);
	c->shown = NULL;
}

void sqk_cmd_err(const struct sqk_cmd *c, const char *path, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	flockfile(stderr);
	sqk_progress_clear(c->progress);
	if (path)
		fprintf(stderr, "sqk %s: %s: /%s: %s", c->name, c->shown ? c->shown : c->image,
			path[0] == '/' ? path + 1 : path, msg);
	else
		fprintf(stderr, "sqk %s: %s: %s", c->name, c->shown ? c->shown : c->image, msg);
	if (err)
		fprintf(stderr, ": %s", sqk_strerror(err));
	fputc('\n', stderr);
	funlockfile(stderr);
}

void sqk_cmd_usage_err(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sqk %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see sqk %s --help)\n", name);
}

int sqk_cmd_lookup(struct sqk_cmd *c, const char *path, struct sqk_inode *out)
{
	int err = sqk_lookup_path(c->img, path, out);

	if (err)
		sqk_cmd_err(c, path, err, "lookup failed");
	return err;
}

int sqk_cmd_write_all(int fd, const void *buf, size_t len)
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
