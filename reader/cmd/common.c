/* Helpers shared by the reading commands: open an image with a log callback that forwards the
 * library's corruption messages to stderr, number parsing, error messages, lookups. */
#include "cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library calls this (from any thread) with one line naming the image and the offset. */
static void sqk_cmd_log(void *ctx, const char *msg)
{
	const struct sqk_cmd *c = ctx;

	fprintf(stderr, "sqk %s: %s\n", c->name, msg);
}

int sqk_cmd_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return SQK_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return SQK_EINVAL;
	*out = v;
	return 0;
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
	c->img = NULL;
	err = sqk_image_open(c->image, &o, &c->img);
	if (err) {
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
}

void sqk_cmd_err(const struct sqk_cmd *c, const char *path, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	flockfile(stderr);
	if (path)
		fprintf(stderr, "sqk %s: %s: /%s: %s", c->name, c->image,
			path[0] == '/' ? path + 1 : path, msg);
	else
		fprintf(stderr, "sqk %s: %s: %s", c->name, c->image, msg);
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
