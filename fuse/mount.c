/* SPDX-License-Identifier: BSD-2-Clause */
/* sqkfuse's command line and mounting: the -o options, opening the image (local or remote)
 * and the trace, the mount point, the session loop with its signal and page-cache fill threads,
 * the stats file. The FUSE operations are ops.c. */
#define FUSE_USE_VERSION 312

#include "fuse/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fuse/daemon.h"
#include "fuse/fs.h"
#include "fuse/nodes.h"
#include "fuse/store.h"
#include "fuse/trace.h"
#include "fuse/walk.h"
#include "common/parse.h"
#include "cli/lib/sigwatch.h"
#include "sqk/sqk.h"
#include "common/integrity.h"

#ifndef SQK_VERSION
#define SQK_VERSION "unknown" /* the Makefile's VERSION, given to this file */
#endif

static void lib_log(void *ctx, const char *msg)
{
	struct fs *fs = ctx;

	if (pthread_equal(pthread_self(), fs->opener))
		snprintf(fs->open_msg, sizeof(fs->open_msg), "%s", msg);
	sqkfuse_log(fs, "%s", msg);
}

/* ---- command line ---- */

struct opts {
	char *image;
	char *mountpoint; /* as given; mnt_abs is it resolved (the daemon changes to /) */
	char *mnt_abs;
	char *extra;      /* a third argument: a usage error */
	char *subdir;
	char *cache;
	char *stats;
	char *trace;
	int verify, noverify; /* -o verify: the default; -o noverify turns it off */
	int nowalk;           /* -o nowalk: no pushes ahead of a tree walk */
	int nonopts;
	/* numbers as given, parsed by num_opts() with the project's one number rule */
	char *offset_s, *readahead_s, *threads_s, *fill_s, *retries_s, *timeout_s, *names_s;
	uint64_t offset, readahead, threads, fill, retries, timeout, names;
	/* remote images */
	char *cache_dir, *cache_size, *root_hash, *header_file, *header, *cacert, *s3_endpoint;
	int no_sign_request, noprefetch;
	int nobackground;  /* -o nobackground, --no-background: a purely lazy mount */
	char *bg_rate_s;   /* -o background_rate=BYTES */
	char *bg_rate_long; /* --background-rate BYTES (sqk mount's spelling) */
	uint64_t bg_rate;
	int require_integrity, allow_rollback;
	char *trust[65];  /* -o trust=FILE (repeatable), NULL-terminated (owned) */
	unsigned ntrust;
	char *trust_dir;
	char *shown;      /* the URL without query or credentials, for messages */
	char *hdr_buf;    /* header_file contents */
	const char *hdrs[64];
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
};

#define OPT(t, p) { t, offsetof(struct opts, p), 1 }
#define KEY_TRUST 1
static const struct fuse_opt opt_spec[] = {
	OPT("offset=%s", offset_s),
	OPT("subdir=%s", subdir),
	OPT("cache=%s", cache),
	OPT("readahead=%s", readahead_s),
	OPT("threads=%s", threads_s),
	OPT("fill=%s", fill_s),
	OPT("names=%s", names_s),
	OPT("stats=%s", stats),
	OPT("trace=%s", trace),
	OPT("verify", verify),
	OPT("noverify", noverify),
	OPT("nowalk", nowalk),
	OPT("cache_dir=%s", cache_dir),
	OPT("cache_size=%s", cache_size),
	OPT("root_hash=%s", root_hash),
	OPT("retries=%s", retries_s),
	OPT("timeout=%s", timeout_s),
	OPT("header_file=%s", header_file),
	OPT("header=%s", header),
	OPT("cacert=%s", cacert),
	OPT("s3_endpoint=%s", s3_endpoint),
	OPT("no_sign_request", no_sign_request),
	OPT("noprefetch", noprefetch),
	OPT("require_integrity", require_integrity),
	OPT("allow_rollback", allow_rollback),
	OPT("trust_dir=%s", trust_dir),
	FUSE_OPT_KEY("trust=", KEY_TRUST),
	OPT("nobackground", nobackground),
	OPT("--no-background", nobackground),
	OPT("background_rate=%s", bg_rate_s),
	OPT("--background-rate %s", bg_rate_long), /* before "=%s": it matches "...=N" too */
	OPT("--background-rate=%s", bg_rate_long),
	FUSE_OPT_END,
};

/* IMAGE and MOUNTPOINT are taken here, not by libfuse: its check of the mount point fails as a
 * usage error, and a missing mount point is an error (exit 1) like a missing image. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct opts *o = data;
	char **slot = !o->image ? &o->image : !o->mountpoint ? &o->mountpoint : &o->extra;

	if (key == KEY_TRUST) { /* repeatable: every key given is trusted */
		if (o->ntrust + 1 == sizeof(o->trust) / sizeof(o->trust[0])) {
			fprintf(stderr, "sqkfuse: at most %u trust= keys (use trust_dir=)\n",
				o->ntrust);
			return -1;
		}
		o->trust[o->ntrust] = strdup(arg + strlen("trust="));
		return o->trust[o->ntrust++] ? 0 : -1;
	}
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (!*slot)
		*slot = strdup(arg);
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s IMAGE MOUNTPOINT [-f] [-d] [-s] [-o OPTION[,OPTION...]]\n"
	       "\n"
	       "Mounts a SquashFS image read-only.\n"
	       "\n"
	       "  -f                  stay in the foreground\n"
	       "  -d                  debug output (implies -f)\n"
	       "  -s                  single-threaded\n"
	       "  -h, --help          this text\n"
	       "  -V, --version       print the version of sqkfuse and of libfuse\n"
	       "  -o offset=N         the image starts N bytes into IMAGE\n"
	       "  -o subdir=PATH      mount only PATH of the image\n"
	       "  -o cache=SIZE       decompressed block cache (default 64M; K, M, G suffixes;\n"
	       "                      above 0)\n"
	       "  -o readahead=N      sequential readahead, in blocks (default 16; 1 to 4096)\n"
	       "  -o threads=N        decompression threads (default: online CPUs; 1 to 256)\n"
	       "  -o fill=N           after a read smaller than a block, put the rest of the\n"
	       "                      aligned group of N blocks around it into the page cache\n"
	       "                      (default 1, as the kernel does; 0 = off)\n"
	       "  -o names=N          remember the names of at most N nodes, for the paths in\n"
	       "                      log lines (default 65536, a few MiB; 0 = none): a node\n"
	       "                      forgotten is logged as '.../known/part' or 'inode N'\n"
	       "  -o stats=FILE       write block/cache counters as JSON to FILE at unmount\n"
	       "  -o trace=FILE       write the files read to FILE at unmount, in the order of\n"
	       "                      their first read, one path a line relative to the image\n"
	       "                      root (also with subdir=), bytes other than printable ASCII\n"
	       "                      and '\\' as \\xHH: input for sqk mkimage --order\n"
	       "  -o noverify         do not check reads against the image's integrity data (by\n"
	       "                      default every byte read is, when the image has it: a\n"
	       "                      mismatch gives EIO and one log line; remote images are\n"
	       "                      always checked); -o verify: the default\n"
	       "  -o root_hash=HEX    refuse an image whose integrity root digest is not HEX\n"
	       "  -o require_integrity  refuse an image without integrity data\n"
	       "  -o trust=PUBKEY     refuse an image without a valid signature by this Ed25519\n"
	       "                      public key (PEM file; repeatable); reads then use SHA-256\n"
	       "  -o trust_dir=DIR    trust every *.pub key in DIR likewise\n"
	       "  -o allow_rollback   accept a signed remote image older than one accepted\n"
	       "                      before from the same URL (remembered in cache_dir)\n"
	       "  -o nowalk           do not push the next files of a tree walk (files read in\n"
	       "                      the order of their directory listings) into the page\n"
	       "                      cache ahead of their reads (local images; on by default)\n"
	       "Remote images (IMAGE is an http://, https:// or s3:// URL, fetched lazily with\n"
	       "range requests, every chunk checked against its SHA-256 when the image has\n"
	       "integrity data):\n"
	       "  -o cache_dir=DIR    on-disk chunk cache (default $XDG_CACHE_HOME/squashkit)\n"
	       "  -o cache_size=SIZE  bound of the on-disk cache (default 1G; 0 = none)\n"
	       "  -o retries=N        retries of a failed request (default 4)\n"
	       "  -o timeout=SEC      a request moving under 1 KiB/s for SEC seconds fails (30)\n"
	       "  -o header_file=F    send the 'Name: value' headers of F (one per line) with\n"
	       "                      every request; -o header=H for one without commas. Secrets\n"
	       "                      belong in a file: command lines are visible to all users\n"
	       "  -o cacert=FILE      trust the CAs in FILE (PEM) for https\n"
	       "  -o noprefetch       do not fetch the image's prefetch hint ranges at open\n"
	       "  -o nobackground     keep the mount purely lazy: by default, after the hint's\n"
	       "                      ranges, the rest of the image is fetched in the background\n"
	       "                      into the disk cache (within cache_size; reads go first)\n"
	       "  --no-background     the same\n"
	       "  -o background_rate=BYTES  cap that background fetch at BYTES a second (K, M, G\n"
	       "                      suffixes; above 0; no cap by default)\n"
	       "  --background-rate BYTES  the same\n"
	       "  -o s3_endpoint=URL  the endpoint of s3:// images (default $AWS_ENDPOINT_URL_S3,\n"
	       "                      $AWS_ENDPOINT_URL, else AWS)\n"
	       "  -o no_sign_request  s3:// images: unsigned requests (public buckets)\n"
	       "  -o max_threads=N    at most N threads answering requests (libfuse; default 10)\n"
	       "  -o allow_other, default_permissions, ... : standard FUSE mount options\n"
	       "\n"
	       "Unmount with `sqk umount MOUNTPOINT`, `fusermount3 -u MOUNTPOINT` or `umount\n"
	       "MOUNTPOINT`; SIGINT and SIGTERM unmount too. In /etc/fstab (through mount.fuse3):\n"
	       "  /path/image.sqsh /mnt/point fuse.sqkfuse ro,allow_other 0 0\n"
	       "Exit status: 0 after unmount; 1 on errors reported before detaching (the image\n"
	       "cannot be opened, the mount point is missing or not a directory, the mount\n"
	       "fails); 2 usage (a missing argument, an unknown option, a value out of range).\n",
	       prog);
}

static void version(const char *prog)
{
	printf("%s %s\nFUSE library version %s\n",
	       strcmp(prog, "sqk mount") ? "sqkfuse" : "sqk mount", SQK_VERSION, fuse_pkgversion());
}

/* Options naming a file, a path or an endpoint: an empty value means nothing. */
static int empty_opts(const struct opts *o, const char *prog)
{
	const struct {
		const char *name, *val;
	} v[] = {
		{ "subdir", o->subdir },	   { "stats", o->stats },
		{ "trace", o->trace },		   { "cache_dir", o->cache_dir },
		{ "header_file", o->header_file }, { "cacert", o->cacert },
		{ "s3_endpoint", o->s3_endpoint }, { "trust_dir", o->trust_dir },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i].val && !v[i].val[0]) {
			fprintf(stderr, "%s: invalid %s= (needs a value)\n", prog, v[i].name);
			return -1;
		}
	}
	return 0;
}

/* The numeric options, each checked against its range; prints what is wrong. */
static int num_opts(struct opts *o, const char *prog)
{
	const struct {
		const char *name, *val;
		uint64_t *out, def, min, max;
	} n[] = {
		{ "offset", o->offset_s, &o->offset, 0, 0, INT64_MAX },
		{ "readahead", o->readahead_s, &o->readahead, 0, 1, 4096 },
		{ "threads", o->threads_s, &o->threads, 0, 1, 256 },
		{ "fill", o->fill_s, &o->fill, 1, 0, 64 },
		{ "names", o->names_s, &o->names, SQK_NODES_DEFAULT_MAX, 0, UINT32_MAX },
		{ "retries", o->retries_s, &o->retries, SQK_HTTP_RETRIES_DEFAULT, 0, 100 },
		{ "timeout", o->timeout_s, &o->timeout, SQK_HTTP_TIMEOUT_DEFAULT, 1, 3600 },
	};
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		*n[i].out = n[i].def;
		if (!n[i].val)
			continue;
		if (parse_u64(n[i].val, n[i].max, n[i].out) || *n[i].out < n[i].min) {
			fprintf(stderr, "%s: invalid %s=%s (a decimal number, %llu to %llu)\n",
				prog, n[i].name, n[i].val, (unsigned long long)n[i].min,
				(unsigned long long)n[i].max);
			return -1;
		}
	}
	return 0;
}

/* -o background_rate=BYTES and --background-rate BYTES (which wins when both are given):
 * bytes a second, above 0 (-o nobackground is the way to none); prints what is wrong. */
static int bg_opts(struct opts *o, const char *prog)
{
	const struct {
		const char *name, *val, *off;
	} r[] = {
		{ "background_rate=", o->bg_rate_s, "-o nobackground" },
		{ "--background-rate ", o->bg_rate_long, "--no-background" },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (!r[i].val)
			continue;
		if (parse_bytes(r[i].val, UINT64_MAX, &o->bg_rate) || !o->bg_rate) {
			fprintf(stderr,
				"%s: invalid %s%s (bytes a second above 0, K, M, G suffixes; "
				"%s turns the background fetch off)\n",
				prog, r[i].name, r[i].val, r[i].off);
			return -1;
		}
	}
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	uint64_t v;
	if (parse_bytes(s, SIZE_MAX, &v))
		return -1;
	*out = (size_t)v;
	return 0;
}

/* Ends the stats object: the transfer and disk-cache counters of a remote image. */
static void write_http_stats(struct fs *fs, FILE *f)
{
	struct sqk_http_stats h = { .size = sizeof(h) };

	if (!sqk_image_http_stats(fs->img, &h))
		fprintf(f, ", \"http_requests\": %llu, \"http_bytes\": %llu, "
			   "\"http_bytes_unused\": %llu, \"http_retries\": %llu, "
			   "\"disk_cache_hits\": %llu, \"disk_cache_misses\": %llu, "
			   "\"corrupt_chunks\": %llu, \"http_digest_groups\": %llu, "
			   "\"http_bytes_background\": %llu, \"background_left\": %llu, "
			   "\"background\": %s, \"background_rate\": %llu, \"http_offline\": %s",
			(unsigned long long)h.requests, (unsigned long long)h.bytes,
			(unsigned long long)h.bytes_unused, (unsigned long long)h.retries,
			(unsigned long long)h.disk_hits, (unsigned long long)h.disk_misses,
			(unsigned long long)h.corrupt, (unsigned long long)h.digest_groups,
			(unsigned long long)h.bytes_background,
			(unsigned long long)h.background_left, fs->background ? "true" : "false",
			(unsigned long long)fs->background_rate, h.offline ? "true" : "false");
	fputs("}\n", f);
}

static int write_stats(struct fs *fs, const char *path)
{
	struct sqk_stats s = { .size = sizeof(s) };
	sqk_image_stats(fs->img, &s);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"data_blocks_decompressed\": %llu, \"fragment_blocks_decompressed\": %llu, "
		   "\"metadata_blocks_decompressed\": %llu, \"cache_hits\": %llu, "
		   "\"cache_misses\": %llu, \"bytes_read_from_image\": %llu, "
		   "\"readahead_batches\": %llu, \"read_requests\": %llu, "
		   "\"page_cache_fills\": %llu, \"walk_pushes\": %llu, "
		   "\"opendir_requests\": %llu, \"node_names\": %llu",
		(unsigned long long)s.data_blocks_decompressed,
		(unsigned long long)s.fragment_blocks_decompressed,
		(unsigned long long)s.metadata_blocks_decompressed,
		(unsigned long long)s.cache_hits, (unsigned long long)s.cache_misses,
		(unsigned long long)s.bytes_read, (unsigned long long)s.readahead_batches,
		(unsigned long long)atomic_load(&fs->reads), (unsigned long long)fs->fills,
		(unsigned long long)fs->pushes, (unsigned long long)atomic_load(&fs->opendirs),
		(unsigned long long)nodes_count(fs->nodes));
	write_http_stats(fs, f);
	return fclose(f) ? -1 : 0;
}

/* Reads the header file: one "Name: value" per line (empty lines and '#' comments skipped). */
static int read_headers(struct opts *o, struct sqk_http_opts *ho, const char *prog)
{
	size_t n = ho->nheaders;
	int rc = sqk_http_header_file(o->header_file, &o->hdr_buf, o->hdrs,
				      sizeof(o->hdrs) / sizeof(o->hdrs[0]), &n);

	if (rc == 0 && !o->hdr_buf[0]) /* the text of an empty file: nothing to send */
		rc = SQK_EIO, errno = ENODATA;
	if (rc == SQK_EIO)
		fprintf(stderr, "%s: cannot read header_file '%s': %s\n", prog, o->header_file,
			errno == ENODATA ? "empty or unreadable" : strerror(errno));
	else if (rc)
		fprintf(stderr, "%s: header_file '%s': bad or too many headers (need 'Name: value' "
			"lines)\n", prog, o->header_file);
	if (rc)
		return -1;
	ho->nheaders = n;
	return 0;
}

/* The remote-image options into *ho; prints what is wrong. */
static int remote_opts(struct opts *o, struct sqk_http_opts *ho, const char *prog)
{
	size_t size;

	ho->cache_dir = o->cache_dir;
	ho->ca_file = o->cacert;
	ho->s3_endpoint = o->s3_endpoint;
	ho->no_sign_request = o->no_sign_request != 0;
	ho->background = !o->nobackground; /* mounts fetch the rest in the background */
	ho->background_rate = o->bg_rate;  /* checked by bg_opts */
	if (o->cache_size && parse_size(o->cache_size, &size)) {
		fprintf(stderr, "%s: invalid cache_size '%s'\n", prog, o->cache_size);
		return -1;
	}
	ho->cache_size_set = o->cache_size != NULL;
	ho->cache_size = o->cache_size ? size : 0;
	ho->retries_set = true;
	ho->retries = (unsigned)o->retries;
	ho->timeout_s = (unsigned)o->timeout;
	if (o->root_hash && integ_parse_hex(o->root_hash, o->root)) {
		fprintf(stderr, "%s: invalid root_hash (64 hex digits)\n", prog);
		return -1;
	}
	ho->headers = o->hdrs;
	if (o->header) {
		if (sqk_http_header_check(o->header)) {
			fprintf(stderr, "%s: bad header option: need 'Name: value'\n", prog);
			return -1;
		}
		o->hdrs[ho->nheaders++] = o->header;
	}
	return o->header_file ? read_headers(o, ho, prog) : 0;
}

/* Opens the image and the mounted root; errors are printed (we have not detached yet). */
static int open_image(struct fs *fs, struct opts *o, const char *prog)
{
	struct sqk_open_opts so = { .size = sizeof(so), .offset = o->offset,
				    .readahead_blocks = (unsigned)o->readahead,
				    .threads = (unsigned)o->threads, .log = lib_log, .log_ctx = fs,
				    .no_verify = o->noverify != 0,
				    .no_prefetch = o->noprefetch != 0 };
	if (o->cache && (parse_size(o->cache, &so.cache_bytes) || !so.cache_bytes)) {
		/* 0 would silently be the default: refused */
		fprintf(stderr, "%s: invalid cache=%s (a size above 0, K, M, G suffixes)\n", prog,
			o->cache);
		return 2;
	}
	struct sqk_http_opts ho = { .size = sizeof(ho) };
	if (remote_opts(o, &ho, prog))
		return 2;
	so.http = &ho;
	fs->background = ho.background; /* for stats= */
	fs->background_rate = ho.background_rate;
	fs->noprefetch = o->noprefetch != 0;
	so.root_hash = o->root_hash ? o->root : NULL; /* parsed by remote_opts */
	so.require_integrity = o->require_integrity != 0;
	so.trust = o->ntrust ? (const char *const *)o->trust : NULL;
	so.trust_dir = o->trust_dir;
	so.allow_rollback = o->allow_rollback != 0;
	fs->opener = pthread_self();
	int err = sqk_image_open(o->image, &so, &fs->img);
	bool open_failed = err != 0;
	if (!err)
		err = o->subdir ? sqk_lookup_path(fs->img, o->subdir, &fs->root)
				: sqk_image_root(fs->img, &fs->root);
	if (!err && !S_ISDIR(fs->root.mode))
		err = SQK_EINVAL;
	if (err) {
		/* in the background the library's reason went to syslog only */
		if (open_failed && !fs->foreground && fs->open_msg[0])
			fprintf(stderr, "%s: %s\n", prog, fs->open_msg);
		if (!open_failed || !sqk_err_not_image(err)) /* those: the library's line is all */
			fprintf(stderr, "%s: %s%s%s: %s\n", prog, o->shown ? o->shown : o->image,
				o->subdir ? ": " : "", o->subdir ? o->subdir : "",
				sqk_strerror(err));
		return 1;
	}
	if (o->verify && !o->noverify && !sqk_image_verified(fs->img))
		fprintf(stderr, "%s: %s: no integrity data; reads are not verified\n", prog,
			o->shown ? o->shown : o->image);
	return 0;
}

/* Prepares -o trace=FILE: a path that cannot be written fails the mount now, naming it. */
static int open_trace(struct fs *fs, const struct opts *o, const char *prog)
{
	char why[640];
	int err = trace_create(o->trace, o->subdir, why, sizeof(why), &fs->trace);
	if (err && why[0])
		fprintf(stderr, "%s: -o trace: %s\n", prog, why);
	else if (err)
		fprintf(stderr, "%s: cannot write the trace to '%s': %s\n", prog, o->trace,
			err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	return err ? 1 : 0;
}

/* At unmount: names the files read whose names the node table had lost, writes the trace. */
static int finish_trace(struct fs *fs, const char *path)
{
	size_t unnamed;
	int err = trace_resolve(fs->trace, fs->img, &fs->root, &unnamed);
	if (err || unnamed)
		sqkfuse_log(fs, "trace '%s': %zu of the files read left out: no name found in "
			    "%s%s%s", path, unnamed, fs->image, err ? ": " : "",
			    err ? sqk_strerror(err) : "");
	if (trace_lost(fs->trace))
		sqkfuse_log(fs, "trace '%s': %zu of the files read left out: out of memory", path,
		       trace_lost(fs->trace));
	err = trace_write(fs->trace);
	if (err) {
		sqkfuse_log(fs, "cannot write the trace to '%s': %s", path,
		       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
		return 1;
	}
	return 0;
}

/* Checks MOUNTPOINT, a directory, and resolves it into o->mnt_abs (the daemon changes to /);
 * /dev/fd/N, a /dev/fuse descriptor a privileged parent opened, is left to libfuse. Returns 0,
 * 1 (missing or not a directory, as a missing image) or 2 (none given). */
static int check_mountpoint(struct opts *o, const char *prog)
{
	const char *mp = o->mountpoint;
	struct stat st;
	unsigned fd;
	char c;

	if (!mp) {
		fprintf(stderr, "%s: no mount point given (try --help)\n", prog);
		return 2;
	}
	if (sscanf(mp, "/dev/fd/%u%c", &fd, &c) == 1) {
		o->mnt_abs = strdup(mp);
		return o->mnt_abs ? 0 : 1;
	}
	errno = 0;
	if (stat(mp, &st) || !S_ISDIR(st.st_mode) || !(o->mnt_abs = realpath(mp, NULL))) {
		fprintf(stderr, "%s: bad mount point '%s': %s\n", prog, mp,
			errno ? strerror(errno) : "not a directory");
		return 1;
	}
	return 0;
}

static int absolutize(char **path)
{
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	size_t len = strlen(cwd) + strlen(*path) + 2;
	char *abs = malloc(len);
	if (!abs)
		return -1;
	snprintf(abs, len, "%s/%s", cwd, *path);
	free(*path);
	*path = abs;
	return 0;
}

static void buf_free(void *p)
{
	free(p);
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	if (cmd->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)cmd->clone_fd);
	if (cmd->max_idle_threads != UINT_MAX) /* UINT_MAX: not given, libfuse's default */
		fuse_loop_cfg_set_idle_threads(cfg, cmd->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
	int ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

/* Shutdown on SIGINT/SIGTERM/SIGHUP, on the signal thread: page-cache fills are finished first,
 * while the loop still answers the reads whose pages they may wait for; then the loop is ended
 * and its main thread woken (SIGUSR1, a no-op handler) until it has returned. */
struct shutdown {
	struct fs *fs;
	struct fuse_session *se;
	pthread_t main;
	atomic_bool loop_done;
};

static void wake(int sig)
{
	(void)sig;
}

static void on_signal(void *ctx, int sig)
{
	struct shutdown *sd = ctx;
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	sqk_image_cancel(sd->fs->img); /* reads waiting on a hung server fail now */
	store_stop(__atomic_load_n(&sd->fs->store, __ATOMIC_ACQUIRE));
	fuse_session_exit(sd->se);
	while (!atomic_load(&sd->loop_done)) {
		pthread_kill(sd->main, SIGUSR1);
		nanosleep(&pause, NULL);
	}
}

/* Runs the session loop with the signal thread and the page-cache fill thread around it. */
static int serve_loop(struct fs *fs, struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	struct shutdown sd = { .fs = fs, .se = se, .main = pthread_self() };
	/* no SA_RESTART: the signal interrupts the loop's wait */
	struct sigaction sa = { .sa_handler = wake };
	struct sigwatch sw;
	int ret;
	atomic_init(&sd.loop_done, false);
	sigaction(SIGUSR1, &sa, NULL);
	if (sigwatch_start(&sw, on_signal, &sd)) {
		sqkfuse_log(fs, "cannot start the signal thread");
		return 1;
	}
	/* the signal thread first (every later thread inherits its blocked signals); it reads
	 * fs->store, published atomically */
	struct store *st = NULL;
	if (store_start(fs->img, se, fs->fill, fs->walk, SQK_FUSE_PUSH_MAX, &st))
		sqkfuse_log(fs, "page-cache fill off: out of memory");
	__atomic_store_n(&fs->store, st, __ATOMIC_RELEASE);
	/* A signal ends the loop with 0 (or its number): a clean unmount. */
	ret = run_loop(se, cmd) < 0 ? 1 : 0;
	atomic_store(&sd.loop_done, true);
	sigwatch_stop(&sw);
	store_stop(fs->store); /* the connection is gone or the fills stopped */
	fs->pushes = store_pushes(fs->store);
	fs->fills = store_destroy(fs->store);
	fs->store = NULL;
	return ret;
}

/* With -o noprefetch, the background fetch alone, started once mounted (the open starts the
 * prefetch hint's ranges and the background fetch after them otherwise). */
static void start_fetch(void *ctx)
{
	struct fs *fs = ctx;

	if (fs->noprefetch)
		sqk_io_http_background(sqk_image_io(fs->img));
}

/* Mounts se (made before the image was opened) on mnt and serves until unmounted or
 * signalled; the caller destroys se. */
static int serve(struct fs *fs, struct fuse_session *se, const struct fuse_cmdline_opts *cmd,
		 const char *mnt, const char *prog)
{
	int ret = 1;
	if (fuse_set_signal_handlers(se)) /* until the signal thread runs */
		return 1;
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "%s: cannot mount on '%s'\n", prog, mnt);
		goto out_handlers;
	}
	fs->foreground = cmd->foreground;
	if (!cmd->foreground)
		openlog("sqkfuse", LOG_PID, LOG_DAEMON);
	daemon_ready(fs->ready_fd, start_fetch, fs, prog);
	ret = serve_loop(fs, se, cmd);
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
	return ret;
}

int sqkfuse_main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct opts o = { 0 };
	struct fs fs = { 0 };
	struct fuse_session *se = NULL;
	const char *prog = argv[0];
	int ret = 2;
	if (fuse_opt_parse(&args, &o, opt_spec, opt_proc) || fuse_parse_cmdline(&args, &cmd))
		goto out;
	if (cmd.show_help || cmd.show_version) {
		if (cmd.show_help)
			usage(prog);
		else
			version(prog);
		ret = 0;
		goto out;
	}
	if (!o.image) {
		fprintf(stderr, "%s: no image given (try --help)\n", prog);
		goto out;
	}
	if (o.extra) {
		fprintf(stderr, "%s: unexpected argument '%s' (IMAGE MOUNTPOINT, then options; "
			"try --help)\n", prog, o.extra);
		goto out;
	}
	if (!cmd.singlethread && cmd.max_threads == 0) { /* libfuse would take it as its default */
		fprintf(stderr, "%s: invalid max_threads=0 (at least 1; -s for one thread)\n",
			prog);
		goto out;
	}
	if (empty_opts(&o, prog))
		goto out;
	/* The daemon changes to /, so relative paths are resolved now. */
	if (sqk_is_url(o.image))
		o.shown = sqk_url_display(o.image);
	if ((o.stats && o.stats[0] != '/' && absolutize(&o.stats)) ||
	    (o.trace && o.trace[0] != '/' && absolutize(&o.trace)) ||
	    (o.cache_dir && o.cache_dir[0] != '/' && absolutize(&o.cache_dir)) ||
	    (o.cacert && o.cacert[0] != '/' && absolutize(&o.cacert))) {
		ret = 1;
		goto out;
	}
	if (num_opts(&o, prog) || bg_opts(&o, prog))
		goto out;
	/* Read-only always; permissions checked by the kernel against the image's modes. The
	 * session is made now, so that an option libfuse rejects is a usage error found before
	 * the image (perhaps remote) is opened; libfuse prints which. */
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=sqkfuse")) {
		ret = 1;
		goto out;
	}
	se = fuse_session_new(&args, &sqkfuse_ops, sizeof(sqkfuse_ops), &fs);
	if (!se)
		goto out;
	fs.fill = (unsigned)o.fill;
	ret = check_mountpoint(&o, prog);
	fs.foreground = cmd.foreground; /* messages at open (e.g. no integrity data) */
	if (!ret && o.trace)
		ret = open_trace(&fs, &o, prog);
	/* the daemon opens the image: the transfers the open starts go on in it */
	if (!ret && daemon_fork(cmd.foreground, &fs.ready_fd, prog))
		ret = 1;
	if (!ret)
		ret = open_image(&fs, &o, prog);
	if (!ret && fs.trace && trace_size(fs.trace, sqk_image_super(fs.img)->inode_count)) {
		fprintf(stderr, "%s: trace '%s': %s\n", prog, o.trace, sqk_strerror(SQK_ENOMEM));
		ret = 1;
	}
	if (!ret &&
	    (nodes_create((size_t)o.names, &fs.nodes) || pthread_key_create(&fs.buf_key, buf_free)))
		ret = 1;
	/* local images only: a remote walk is fetched ahead by the library's own walk detection;
	 * not with trace=, which records the reads a push would take away */
	if (!ret && !o.nowalk && !o.shown && !o.trace &&
	    walk_create(SQK_FUSE_PUSH_MAX, &fs.walk))
		ret = 1;
	fs.image = o.shown ? o.shown : o.image;
	if (!ret)
		ret = serve(&fs, se, &cmd, o.mnt_abs, prog);
	if (!ret && o.stats && write_stats(&fs, o.stats))
		fprintf(stderr, "%s: cannot write stats to '%s': %s\n", prog, o.stats,
			strerror(errno));
	if (!ret && fs.trace)
		ret = finish_trace(&fs, o.trace);
	trace_destroy(fs.trace);
	nodes_destroy(fs.nodes);
	walk_destroy(fs.walk);
	sqk_image_close(fs.img);
out:
	if (se)
		fuse_session_destroy(se);
	free(cmd.mountpoint);
	free(o.image);
	free(o.mountpoint);
	free(o.mnt_abs);
	free(o.extra);
	free(o.subdir);
	free(o.cache);
	free(o.stats);
	free(o.cache_dir);
	free(o.cache_size);
	free(o.root_hash);
	free(o.trust_dir);
	for (unsigned i = 0; i < o.ntrust; i++)
		free(o.trust[i]);
	free(o.header_file);
	free(o.header);
	free(o.cacert);
	free(o.s3_endpoint);
	free(o.trace);
	free(o.offset_s);
	free(o.readahead_s);
	free(o.threads_s);
	free(o.fill_s);
	free(o.names_s);
	free(o.retries_s);
	free(o.timeout_s);
	free(o.bg_rate_s);
	free(o.bg_rate_long);
	free(o.shown);
	free(o.hdr_buf);
	fuse_opt_free_args(&args);
	return ret;
}
