/* Shared pieces of the sqk reading commands (ls, cat, info, extract): opening an image with a
 * logging callback, option parsing helpers and error messages that name the image and path. */
#ifndef SQK_CMD_H
#define SQK_CMD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "sqk.h"

/* One opened image for a command; plain struct on the caller's stack. */
struct sqk_cmd {
	const char *name;     /* command name for messages ("ls") */
	const char *image;    /* image path as given */
	uint64_t offset;      /* --offset */
	struct sqk_image *img;
	int verify;           /* --verify: reads checked against the integrity data */
};

/* Entry points; argv[0] is the command name. Each returns the process exit status. */
int sqk_ls_main(int argc, char **argv);
int sqk_cat_main(int argc, char **argv);
int sqk_info_main(int argc, char **argv);
int sqk_extract_main(int argc, char **argv);
int sqk_verify_main(int argc, char **argv);

/* Parses a non-negative decimal/hex/octal number (strtoull syntax, whole string). */
int sqk_cmd_parse_u64(const char *s, uint64_t *out);

/* Opens c->image at c->offset into c->img, printing an error on failure. Returns 0 or SQK_E*. */
int sqk_cmd_open(struct sqk_cmd *c);

/* Closes c->img (NULL-safe). */
void sqk_cmd_close(struct sqk_cmd *c);

/* Prints "sqk NAME: IMAGE: PATH: message[: sqk_strerror(err)]" to stderr; path may be NULL,
 * err 0 omits the library message. */
void sqk_cmd_err(const struct sqk_cmd *c, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Prints "sqk NAME: message" for usage errors. */
void sqk_cmd_usage_err(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Looks up path in the image, printing an error when it fails. Returns 0 or SQK_E*. */
int sqk_cmd_lookup(struct sqk_cmd *c, const char *path, struct sqk_inode *out);

/* Writes all of buf to fd (retrying short writes and EINTR). Returns 0 or -1 with errno. */
int sqk_cmd_write_all(int fd, const void *buf, size_t len);

/* True when the basic type of t is the one given. */
static inline int sqk_cmd_is(const struct sqk_inode *i, uint16_t basic)
{
	return sqk_basic_type(i->type) == basic;
}

#endif
