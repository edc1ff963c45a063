/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared pieces of the sqk reading commands (ls, cat, info, extract): opening an image with a
 * logging callback, option parsing helpers and error messages that name the image and path. */
#ifndef SQK_CMD_H
#define SQK_CMD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/parse.h"
#include "sqk/sqk.h"

/* The options every reading command takes: verification, and remote images (http://, https://
 * and s3:// IMAGE arguments). */
#define SQK_CMD_MAX_HEADERS 64
#define SQK_CMD_MAX_TRUST 64
enum {
	SQK_OPT_CACHE_DIR = 0x1000,
	SQK_OPT_CACHE_SIZE,
	SQK_OPT_ROOT_HASH,
	SQK_OPT_RETRIES,
	SQK_OPT_TIMEOUT,
	SQK_OPT_HEADER,
	SQK_OPT_HEADER_FILE,
	SQK_OPT_S3_ENDPOINT,
	SQK_OPT_NO_SIGN_REQUEST,
	SQK_OPT_NO_PREFETCH,
	SQK_OPT_VERIFY,
	SQK_OPT_NO_VERIFY,
	SQK_OPT_REQUIRE_INTEGRITY,
	SQK_OPT_TRUST,
	SQK_OPT_TRUST_DIR,
	SQK_OPT_ALLOW_ROLLBACK,
	SQK_OPT_STATS,
	SQK_OPT_CACERT, /* last: callers test SQK_OPT_CACHE_DIR <= ch <= SQK_OPT_CACERT */
};

#define SQK_CMD_REMOTE_LONGOPTS                                                   \
	{ "cache-dir", required_argument, NULL, SQK_OPT_CACHE_DIR },              \
	{ "cache-size", required_argument, NULL, SQK_OPT_CACHE_SIZE },            \
	{ "root-hash", required_argument, NULL, SQK_OPT_ROOT_HASH },              \
	{ "retries", required_argument, NULL, SQK_OPT_RETRIES },                  \
	{ "timeout", required_argument, NULL, SQK_OPT_TIMEOUT },                  \
	{ "header", required_argument, NULL, SQK_OPT_HEADER },                    \
	{ "header-file", required_argument, NULL, SQK_OPT_HEADER_FILE },         \
	{ "cacert", required_argument, NULL, SQK_OPT_CACERT },                    \
	{ "s3-endpoint", required_argument, NULL, SQK_OPT_S3_ENDPOINT },          \
	{ "no-sign-request", no_argument, NULL, SQK_OPT_NO_SIGN_REQUEST },        \
	{ "no-prefetch", no_argument, NULL, SQK_OPT_NO_PREFETCH },                \
	{ "verify", no_argument, NULL, SQK_OPT_VERIFY },                          \
	{ "no-verify", no_argument, NULL, SQK_OPT_NO_VERIFY },                    \
	{ "require-integrity", no_argument, NULL, SQK_OPT_REQUIRE_INTEGRITY },    \
	{ "trust", required_argument, NULL, SQK_OPT_TRUST },                      \
	{ "trust-dir", required_argument, NULL, SQK_OPT_TRUST_DIR },              \
	{ "allow-rollback", no_argument, NULL, SQK_OPT_ALLOW_ROLLBACK },          \
	{ "stats", no_argument, NULL, SQK_OPT_STATS }

/* SQK_CMD_REMOTE_HELP without the verification lines (sqk verify always checks). */
#define SQK_CMD_REMOTE_ONLY_HELP                                                              \
	"      --root-hash HEX  refuse an image whose integrity root digest is not HEX\n"      \
	"      --require-integrity  refuse an image without integrity data\n"                \
	"      --trust PUBKEY   refuse an image without a valid signature by this Ed25519\n"  \
	"                       public key (PEM; repeatable; sqk keygen, sqk sign)\n"        \
	"      --trust-dir DIR  trust every *.pub key in DIR likewise\n"                       \
	"      --allow-rollback accept a signed remote image older than one accepted before\n" \
	"Remote images (IMAGE is an http://, https:// or s3:// URL, read with range requests):\n"\
	"      --cache-dir DIR  on-disk chunk cache (default $XDG_CACHE_HOME/squashkit)\n"     \
	"      --cache-size N   bound of the on-disk cache (K/M/G suffixes; 0 = none; 1G)\n"  \
	"      --retries N      retries of a failed request (default 4)\n"                    \
	"      --timeout SEC    a request moving under 1 KiB/s for SEC seconds fails (30)\n"      \
	"      --header H       send header 'Name: value' (repeatable; never printed)\n"      \
	"      --header-file F  send the headers in F, one per line\n"                         \
	"      --cacert FILE    trust the CAs in FILE (PEM) for https instead of the system's\n" \
	"      --no-prefetch    extract or tar: fetch what is read as it is read, not the\n"    \
	"                       prefetch hint (whole image) or the files' data first\n"       \
	"      --s3-endpoint URL  the endpoint of s3:// images (default\n"                    \
	"                       $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)\n"        \
	"      --no-sign-request  s3:// images: unsigned requests (public buckets)\n"         \
	"      --stats          at the end, print what was fetched and what the disk cache\n" \
	"                       served (stderr)\n"

#define SQK_CMD_REMOTE_HELP                                                                   \
	"      --no-verify      do not check what is read against the image's integrity data\n" \
	"                       (by default every byte read is checked, when the image has\n"   \
	"                       integrity data: a mismatch fails that file, naming the image\n"  \
	"                       offset; remote images are always checked)\n"                     \
	"      --verify         the default (kept for old scripts)\n"                            \
	SQK_CMD_REMOTE_ONLY_HELP

struct remote {
	struct sqk_http_opts o;
	const char *hdr[SQK_CMD_MAX_HEADERS];
	char *files[SQK_CMD_MAX_HEADERS]; /* header-file contents (owned) */
	unsigned nfiles;
	bool has_root;                    /* --root-hash given: root holds it */
	bool no_prefetch;                 /* --no-prefetch: for sqk_open_opts.no_prefetch */
	bool no_verify;                   /* --no-verify: for sqk_open_opts.no_verify */
	bool verify_asked;                /* --verify: say so when reads cannot be verified */
	bool require_integ;               /* --require-integrity */
	bool allow_rollback;              /* --allow-rollback */
	bool stats;                       /* --stats: cmd_stats_line at the end */
	const char *trust[SQK_CMD_MAX_TRUST + 1]; /* --trust files, NULL-terminated (borrowed) */
	unsigned ntrust;
	const char *trust_dir;            /* --trust-dir */
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
};

struct progress;

/* One opened image for a command; plain struct on the caller's stack. */
struct cmd {
	const char *name;     /* command name for messages ("ls") */
	const char *image;    /* image path as given */
	uint64_t offset;      /* --offset */
	struct sqk_image *img;
	struct remote remote;
	char *shown;          /* the image name in messages: a URL without query or credentials */
	char why[512];        /* the library's last line (after a failed open: why it failed) */
	struct progress *progress; /* a progress line erased before each message, or NULL */
	size_t cache_bytes;   /* the image's block cache bound; 0 = the library's default */
	bool whole;           /* reads all of the image: a remote one's hint is fetched at open */
};

/* The most data of the files a command is about to read that it fetches ahead of them at once
 * (sqk_prefetch_new): chunks on their way hold their memory; half the remote backend's memory
 * cache, all its prefetch takes of one range. */
#define CMD_PREFETCH_MAX ((uint64_t)SQK_HTTP_MEM_DEFAULT / 2)

/* The signatures s[0..n) of an image (sqk_image_signatures, which returned rc) on stdout: as
 * text lines (sqk info, sqk verify), or as the JSON member "signatures" (with a comma) at
 * indent. */
void cmd_sigs_text(const struct sqk_signature *s, size_t n, int rc);
void cmd_sigs_json(const struct sqk_signature *s, size_t n, int rc, const char *indent);

/* Entry points; argv[0] is the command name. Each returns the process exit status. */
int ls_main(int argc, char **argv);
int cat_main(int argc, char **argv);
int info_main(int argc, char **argv);
int extract_main(int argc, char **argv);
int verify_main(int argc, char **argv);
int stat_main(int argc, char **argv);

/* sqk cat's work for c (image, offset and remote options set, not open): opens the image,
 * writes the files paths[0..n) (literal paths or unsquashfs globs) to stdout, closes it.
 * Borrows paths. Returns the exit status (0 or 1). */
int cat_paths(struct cmd *c, char **paths, int n, bool progress);

/* Handles a remote option (ch one of SQK_OPT_*) for command `cmd`: 0 taken, 1 not a remote
 * option, 2 bad argument (message printed). Borrows arg for the life of r. */
int cmd_remote_opt(const char *cmd, struct remote *r, int ch, const char *arg);

/* Frees what the remote options own; the struct may be reused zeroed. */
void cmd_remote_free(struct remote *r);


/* Opens c->image at c->offset into c->img, printing an error on failure. Returns 0 or SQK_E*. */
int cmd_open(struct cmd *c);

/* Closes c->img (NULL-safe); with --stats, cmd_stats_line of a remote one first. */
void cmd_close(struct cmd *c);

/* The transfer and disk-cache counters h as one line of text into buf: "N requests, N bytes
 * (...), ...", as sqk info and --stats print them. */
void cmd_http_text(char *buf, size_t len, const struct sqk_http_stats *h);

/* "sqk NAME: SHOWN: http: <cmd_http_text>" on stderr for the remote image behind io (borrowed;
 * its transfers ended); nothing for any other io. */
void cmd_stats_line(const char *name, const char *shown, struct sqk_io *io);

/* Prints "sqk NAME: IMAGE: PATH: message[: sqk_strerror(err)]" to stderr; path may be NULL,
 * err 0 omits the library message. When err is SQK_ECORRUPT because bytes did not match
 * their integrity digest, the library message is replaced by the chunk's image offset (the
 * library does not log it: cmd_open asks it not to, so it is printed once, here). */
void cmd_err(const struct cmd *c, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* cmd_err for a failed read of file f (at PATH; borrowed): names the chunk that read hit,
 * not another file's (extract reads several files at once), and the file offset of the block
 * it lies in. */
void cmd_read_err(const struct cmd *c, const char *path, const struct sqk_inode *f,
		      int err, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* cmd_read_err (or cmd_err when f is NULL) followed by ": " and tail (borrowed; NULL = none)
 * after the reason: what became of the command's output, e.g. a partial file removed. */
void cmd_read_err_tail(const struct cmd *c, const char *path, const struct sqk_inode *f,
		       int err, const char *tail, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Prints "sqk NAME: message" for usage errors. */
void cmd_usage_err(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Looks up path in the image, printing an error when it fails. Returns 0 or SQK_E*. */
int cmd_lookup(struct cmd *c, const char *path, struct sqk_inode *out);

/* Writes all of buf to fd (retrying short writes and EINTR). Returns 0 or -1 with errno. */
int cmd_write_all(int fd, const void *buf, size_t len);

/* True when the basic type of t is the one given. */
static inline int cmd_is(const struct sqk_inode *i, uint16_t basic)
{
	return sqk_basic_type(i->type) == basic;
}

#endif
