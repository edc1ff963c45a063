/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk verify: checks an image's integrity data (every chunk digest, the root digest) and its
 * whole structure through the library's checker (sqk/sqk_check.h), and a dm-verity tree beside
 * the image or appended to it (verify_verity.h), printing each finding with its region and byte
 * range and a one-line summary; fsck-like exit codes. */
#include "cmd.h"
#include "progress.h"
#include "cmdopt.h"
#include "cli/lib/sigwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/sqk_check.h"
#include "common/format.h"
#include "common/integrity.h"
#include "common/json.h"
#include "common/sign.h"
#include "verify_verity.h"

enum { EXIT_CLEAN = 0, EXIT_ERRORS = 4, EXIT_OPER = 8, EXIT_USAGE = 16, EXIT_INTERRUPTED = 32 };

/* The image's signatures, read after the check (sigs_read). */
struct sigs {
	int rc;                     /* sqk_image_signatures, or the open's error */
	bool refused;               /* --trust or --require-integrity refused the image */
	size_t n;
	struct sqk_signature s[64];
};

struct verify {
	const char *image;
	int json;
	unsigned threads;
	uint64_t offset;
	bool has_root;
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
	struct remote remote;
	char *shown;                /* a URL without query or credentials */
	unsigned long nfound;       /* findings printed (JSON separators) */
	bool begun;                 /* the JSON object is open (its findings list too) */
	char why[512];              /* the last line the remote backend logged */
	bool no_progress;           /* --no-progress */
	struct progress pr;     /* the progress line on a terminal */
	struct vv vv;               /* the dm-verity check (a local image at offset 0) */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk verify [-j N] [--json] [--root-hash HEX] [--offset N] [OPTIONS] "
		   "IMAGE|URL\n"
		   "\n"
		   "Checks the integrity data and the structure of IMAGE (a URL: every byte is\n"
		   "fetched from the server, not from the cache), and its dm-verity tree when\n"
		   "there is one: IMAGE.verity (and IMAGE.roothash) beside it, or appended.\n"
		   "\n"
		   "  -j, -p, --threads, -processors N  threads checking digests and blocks\n"
		   "                    (default: the CPUs)\n"
		   "      --json        one JSON object with the counts and the findings\n"
		   "  -o, --offset N    the image starts N bytes into the file (as -offset)\n"
		   "  -n, --no-progress no progress line on a terminal's stderr\n"
		   SQK_CMD_REMOTE_ONLY_HELP
		   "  -h, --help        this text\n"
		   "\n"
		   "Options may come before or after IMAGE; each long one also with one dash\n"
		   "(-json, -offset).\n"
		   "\n"
		   "Exit status: 0 clean, 4 errors found, 8 operational error, 16 usage error,\n"
		   "32 interrupted (SIGINT, SIGTERM, SIGHUP: a line says the check is incomplete;\n"
		   "with --json the object is left unfinished), as fsck's codes.\n");
}

/* Begins the JSON object: the image (null before it is known) and the findings list. */
static void json_begin(struct verify *v)
{
	printf("{\n  \"image\": ");
	if (v->image)
		json_put_str(stdout, v->image);
	else
		printf("null");
	printf(",\n  \"findings\": [");
	v->begun = true;
}

/* Ends the JSON object of a failure: its "error" and the exit status. */
static void json_error(struct verify *v, int status, const char *msg)
{
	if (!v->begun)
		json_begin(v);
	printf("%s],\n  \"error\": ", v->nfound ? "\n  " : "");
	json_put_str(stdout, msg);
	printf(",\n  \"exit_status\": %d\n}\n", status);
}

/* A failure that ends the command (usage, a file that is not an image, I/O): the message on
 * stderr and, with --json, in the object's "error" field, so --json always prints JSON.
 * Returns status. */
static int fail(struct verify *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct verify *v, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "sqk verify: %s\n", msg);
	if (v->json)
		json_error(v, status, msg);
	return status;
}

static void report(struct verify *v, const struct sqk_check_report *r)
{
	if (!v->json) {
		printf("verify: %s: %s error in %s", v->image, r->kind, r->region);
		if (r->start || r->end)
			printf(" (bytes %llu..%llu)", (unsigned long long)r->start,
			       (unsigned long long)r->end);
		printf(": %s\n", r->msg);
		return;
	}
	printf("%s\n    {\"kind\": ", v->nfound++ ? "," : "");
	json_put_str(stdout, r->kind);
	printf(", \"start\": %llu, \"end\": %llu, \"region\": ", (unsigned long long)r->start,
	       (unsigned long long)r->end);
	json_put_str(stdout, r->region);
	printf(", \"msg\": ");
	json_put_str(stdout, r->msg);
	putchar('}');
}

/* A finding, on a line of its own: the progress line is erased first (and drawn again later). */
static void on_report(void *ctx, const struct sqk_check_report *r)
{
	struct verify *v = ctx;

	flockfile(stderr);
	progress_clear(&v->pr);
	report(v, r);
	if (v->pr.on)
		fflush(stdout);
	funlockfile(stderr);
}

/* Parses argv; returns -1 to go on, else an exit status. */
/* One option of sqk verify: -1 taken, else the exit status (message printed). */
static int option(struct verify *v, const struct cmdopt *p, int ch)
{
	uint64_t n;

	if (ch == 'h') {
		usage(stdout);
		return EXIT_CLEAN;
	} else if (ch == 'J') {
		v->json = 1;
	} else if (ch == 'P' || ch == 'n') {
		v->no_progress = true;
	} else if (ch == 'j' && !parse_u64(p->arg, 256, &n) && n >= 1) {
		v->threads = (unsigned)n;
	} else if (ch == 'O' && !parse_bytes(p->arg, UINT64_MAX, &v->offset)) {
		return -1;
	} else if (ch == 'R' && !integ_parse_hex(p->arg, v->root)) {
		v->has_root = true;
	} else if (ch >= SQK_OPT_CACHE_DIR && ch <= SQK_OPT_CACERT) {
		if (cmd_remote_opt("verify", &v->remote, ch, p->arg) == 0)
			return -1;
		/* cmd_remote_opt printed the message; a header may hold a secret */
		if (v->json)
			json_error(v, EXIT_USAGE, ch == SQK_OPT_HEADER ?
				   "bad --header: need 'Name: value'" : "bad argument of a remote "
				   "option");
		return EXIT_USAGE;
	} else {
		return fail(v, EXIT_USAGE, "bad argument '%s' for %s (see --help)", p->arg,
			    ch == 'j' ? "-j (1..256)" : ch == 'O' ? "--offset" :
			    "--root-hash (64 hex digits)");
	}
	return -1;
}

static int parse(struct verify *v, int argc, char **argv)
{
	static const struct option lo[] = { { "json", no_argument, NULL, 'J' },
					    { "threads", required_argument, NULL, 'j' },
					    { "processors", required_argument, NULL, 'j' },
					    { "root-hash", required_argument, NULL, 'R' },
					    { "offset", required_argument, NULL, 'O' },
					    { "no-progress", no_argument, NULL, 'P' },
					    { "help", no_argument, NULL, 'h' },
					    SQK_CMD_REMOTE_LONGOPTS,
					    { NULL, 0, NULL, 0 } };
	struct cmdopt p;
	int ch, r;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		v->json |= !strcmp(argv[i], "--json"); /* a usage error is JSON too */
	cmdopt_init(&p, "verify", argc, argv, lo, "j:p:o:nh");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		if (ch == CMDOPT_POS)
			continue;
		if (ch == CMDOPT_ERR) {
			if (v->json)
				json_error(v, EXIT_USAGE, p.msg);
			return EXIT_USAGE;
		}
		if ((r = option(v, &p, ch == 'p' ? 'j' : ch == 'o' ? 'O' : ch)) >= 0)
			return r;
	}
	if (p.npos != 1)
		return fail(v, EXIT_USAGE, "expected one IMAGE, got %d arguments (see --help)",
			    p.npos);
	v->image = argv[1];
	return -1;
}

/* The counts: those of sqk info and sqk mkimage's summary, in their words, when the inodes walk
 * (sqk/counts.h); else what the checker reached. */
static void summary_counts(const struct sqk_check_result *r)
{
	char line[256];

	if (!r->counts_ok) {
		printf("; checked %llu inodes, %llu directories, %llu files, %llu data blocks, "
		       "%llu fragment blocks, %llu metadata blocks", (unsigned long long)r->inodes,
		       (unsigned long long)r->dirs, (unsigned long long)r->files,
		       (unsigned long long)r->data_blocks, (unsigned long long)r->fragment_blocks,
		       (unsigned long long)r->metadata_blocks);
		return;
	}
	sqk_counts_inodes(&r->counts, line, sizeof(line));
	printf("; inodes %s", line);
	sqk_counts_blocks(&r->counts, line, sizeof(line));
	printf("; blocks %s", line);
	sqk_counts_dups(&r->counts, line, sizeof(line));
	printf("; duplicates %s; %llu metadata blocks", line,
	       (unsigned long long)r->metadata_blocks);
}

static void summary(const struct verify *v, const struct sqk_check_result *r)
{
	if (r->errors)
		printf("verify: %s: %llu errors (%llu corrupt ranges, %llu structural)", v->image,
		       (unsigned long long)r->errors, (unsigned long long)r->corrupt_ranges,
		       (unsigned long long)r->structural);
	else
		printf("verify: %s: clean", v->image);
	summary_counts(r);
	if (r->has_integrity)
		printf("; integrity: %llu chunks checked, %llu bad",
		       (unsigned long long)r->chunks, (unsigned long long)r->chunks_bad);
	else if (r->integrity_truncated)
		printf("; integrity: truncated\n");
	else
		printf("; integrity: none");
	if (!v->shown && !v->offset)
		vv_summary(&v->vv, stdout);
	putchar('\n');
}

/* inodes, dirs, files, data_blocks and fragment_blocks are sqk info's when the inodes walk
 * (counts, in its words); data_blocks_checked counts a duplicate's blocks again. */
static void json_result(const struct verify *v, const struct sqk_check_result *r,
			const struct sigs *g)
{
	const struct sqk_counts *k = r->counts_ok ? &r->counts : NULL;

	printf("%s],\n  \"errors\": %llu, \"corrupt_ranges\": %llu, \"structural\": %llu,\n"
	       "  \"has_integrity\": %s, \"integrity_truncated\": %s,\n"
	       "  \"root_hash_checked\": %s, \"root_hash_ok\": %s,\n"
	       "  \"chunks\": %llu, \"chunks_bad\": %llu, \"inodes\": %llu, \"dirs\": %llu,\n"
	       "  \"files\": %llu, \"data_blocks\": %llu, \"fragment_blocks\": %llu,\n"
	       "  \"metadata_blocks\": %llu, \"data_blocks_checked\": %llu,\n",
	       v->nfound ? "\n  " : "",
	       (unsigned long long)r->errors, (unsigned long long)r->corrupt_ranges,
	       (unsigned long long)r->structural, r->has_integrity ? "true" : "false",
	       r->integrity_truncated ? "true" : "false",
	       v->has_root ? "true" : "false", r->root_hash_ok ? "true" : "false",
	       (unsigned long long)r->chunks, (unsigned long long)r->chunks_bad,
	       (unsigned long long)(k ? k->inodes : r->inodes),
	       (unsigned long long)(k ? k->dirs : r->dirs),
	       (unsigned long long)(k ? k->files : r->files),
	       (unsigned long long)(k ? k->data_blocks : r->data_blocks),
	       (unsigned long long)(k ? k->fragment_blocks : r->fragment_blocks),
	       (unsigned long long)r->metadata_blocks, (unsigned long long)r->data_blocks);
	printf("  \"verity\": ");
	vv_json(&v->vv, stdout);
	printf(",\n  \"counts\": ");
	if (k) {
		printf("{\n");
		sqk_counts_json(k, stdout, "    ");
		printf("\n  },\n");
	} else {
		printf("null,\n");
	}
	cmd_sigs_json(g->s, g->n < 64 ? g->n : 64, g->rc, "  ");
	printf("  \"trusted\": %s\n}\n", g->refused ? "false" : "true");
}

static void log_line(void *ctx, const char *msg);

/* The signatures of an image the trusted keys refused: which of them are by those keys. */
static void mark_trusted(const struct verify *v, struct sigs *g)
{
	struct sig_trust t = { 0 };
	char why[512];

	for (unsigned i = 0; i < v->remote.ntrust; i++)
		sig_trust_add_file(&t, v->remote.trust[i], why, sizeof(why));
	if (v->remote.trust_dir)
		sig_trust_add_dir(&t, v->remote.trust_dir, why, sizeof(why));
	for (size_t i = 0; i < g->n && i < 64; i++)
		g->s[i].trusted = sig_trust_has(&t, g->s[i].public_key);
	sig_trust_free(&t);
}

/* After the check: the signatures of the image behind io (borrowed), and whether --trust,
 * --trust-dir or --require-integrity refuse it (the open logs why). */
static void sigs_read(struct verify *v, struct sqk_io *io, struct sigs *g)
{
	struct sqk_open_opts o;
	struct sqk_image *img = NULL;

	sqk_open_opts_init(&o);
	o.offset = v->offset;
	o.no_verify = true; /* the check read every byte already */
	o.log = log_line;
	o.log_ctx = v;
	o.name = v->image;
	o.require_integrity = v->remote.require_integ;
	o.trust = v->remote.ntrust ? v->remote.trust : NULL;
	o.trust_dir = v->remote.trust_dir;
	g->rc = sqk_image_open_io(io, &o, &img);
	g->refused = g->rc == SQK_ENOINTEG || g->rc == SQK_EUNTRUSTED || g->rc == SQK_EINVAL;
	if (g->rc == SQK_EUNTRUSTED) { /* listed all the same, the trusted keys marked */
		o.trust = NULL;
		o.trust_dir = NULL;
		o.log = NULL;
		g->rc = sqk_image_open_io(io, &o, &img);
	}
	if (!g->rc)
		g->rc = sqk_image_signatures(img, g->s, 64, &g->n);
	if (g->rc == SQK_ENOENT)
		g->rc = 0;
	if (!g->rc && g->refused)
		mark_trusted(v, g);
	sqk_image_close(img);
}


/* A file that is no SquashFS 4.0 image at all (empty, another format, another version, an
 * image at another offset) is not checked: exit 8 with what it is, as fsck does for a bad magic.
 * An sqk image whose superblock is damaged (its integrity data says the image starts here) and a
 * truncated image are: the checker reports them (exit 4). Returns -1 to go on, else the status. */
static int probe(struct verify *v, struct sqk_io *io, uint64_t size)
{
	uint8_t head[SQK_PROBE_SIZE] = { 0 }, tail[SQK_INTEG_TRAILER_SIZE];
	size_t n, t = 0;
	char why[512];
	int rc = 0;

	size = size > v->offset ? size - v->offset : 0;
	n = size < sizeof(head) ? (size_t)size : sizeof(head);
	if (n)
		rc = sqk_io_read_at(io, v->offset, head, n);
	if (rc == 0 && !v->offset && size >= sizeof(tail)) { /* an image's integrity data? */
		t = sizeof(tail);
		rc = sqk_io_read_at(io, size - t, tail, t);
	}
	if (rc)
		return fail(v, EXIT_OPER, "%s: read of the superblock failed: %s", v->image,
			    sqk_strerror(rc));
	rc = super_diagnose(v->image, v->offset, head, n, tail, t, size, why, sizeof(why));
	if (rc == 0 || rc == SQK_ETRUNCATED)
		return -1;
	return fail(v, EXIT_OPER, "%s", why);
}

/* Runs the checker on the image behind io (borrowed); returns the exit status. */
static int run_checked(struct verify *v, struct sqk_io *io, uint64_t size, struct sigs *g);

static int run(struct verify *v, struct sqk_io *io, uint64_t size)
{
	struct sigs *g = calloc(1, sizeof(*g));
	int rc;

	if (!g)
		return fail(v, EXIT_OPER, "%s: %s", v->image, sqk_strerror(SQK_ENOMEM));
	rc = run_checked(v, io, size, g);
	free(g);
	return rc;
}

/* run, with g for the signatures. */
static int run_checked(struct verify *v, struct sqk_io *io, uint64_t size, struct sigs *g)
{
	struct sqk_check_opts o = { .size = sizeof(o), .threads = v->threads,
				    .root_hash = v->has_root ? v->root : NULL, .offset = v->offset,
				    .report = on_report, .ctx = v };
	struct sqk_check_result r = { .size = sizeof(r) };
	int rc;

	rc = probe(v, io, size);
	if (rc >= 0)
		return rc;
	if (v->json)
		json_begin(v);
	progress_init(&v->pr, "verify", !v->no_progress);
	rc = progress_check(&v->pr, io, size, &o, &r);
	if (rc)
		return fail(v, EXIT_OPER, "%s: %s", v->image, sqk_strerror(rc));
	if (!v->shown && !v->offset) { /* a local image: its dm-verity tree, if any */
		char msg[600];

		rc = vv_run(&v->vv, v->image, io, size, on_report, v, msg, sizeof(msg));
		if (rc)
			return fail(v, EXIT_OPER, "%s: %s", v->image, msg);
		r.errors += v->vv.findings;
		r.corrupt_ranges += v->vv.findings;
	}
	sigs_read(v, io, g);
	if (v->json) {
		json_result(v, &r, g);
	} else {
		if (r.has_integrity && (g->n || g->rc)) /* else one summary line, as before */
			cmd_sigs_text(g->s, g->n < 64 ? g->n : 64, g->rc);
		summary(v, &r);
	}
	return r.errors || g->refused ? EXIT_ERRORS : EXIT_CLEAN;
}

static void log_line(void *ctx, const char *msg)
{
	struct verify *v = ctx;

	flockfile(stderr); /* also guards v->why: the fetches of a check run on its threads */
	snprintf(v->why, sizeof(v->why), "%s", msg);
	fprintf(stderr, "sqk verify: %s\n", msg);
	funlockfile(stderr);
}

/* A remote image: raw bytes, straight from the server (the checker judges every chunk). */
static int run_url(struct verify *v, const char *url)
{
	struct sqk_io *io;
	uint64_t size;
	int rc;

	v->remote.o.size = sizeof(v->remote.o);
	v->remote.o.raw = true;
	v->remote.o.log = log_line;
	v->remote.o.log_ctx = v;
	v->shown = sqk_url_display(url);
	v->image = v->shown ? v->shown : "URL";
	rc = sqk_io_http_create(url, &v->remote.o, &io);
	if (rc && sqk_err_not_image(rc) && v->why[0]) { /* log_line printed what it is */
		if (v->json)
			json_error(v, EXIT_OPER, v->why);
		return EXIT_OPER;
	}
	if (rc && v->why[0])
		return fail(v, EXIT_OPER, "%s: %s (%s)", v->image, sqk_strerror(rc), v->why);
	if (rc)
		return fail(v, EXIT_OPER, "%s: %s", v->image, sqk_strerror(rc));
	sqk_io_get_size(io, &size);
	rc = run(v, io, size);
	if (v->remote.stats)
		cmd_stats_line("verify", v->image, io);
	sqk_io_destroy(io);
	return rc;
}

/* Opens v->image into *fd: a regular file or a block device (an image written in place); else
 * the failure names what the path is. Returns -1 to go on, else the exit status. */
static int open_file(struct verify *v, int *fd)
{
	struct stat st;
	int e;

	*fd = open(v->image, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: named, not waited on */
	if (*fd < 0 && errno == ENOENT && sqk_looks_like_url(v->image))
		return fail(v, EXIT_OPER, "%s: unsupported URL scheme; http, https and s3 are",
			    v->image);
	if (*fd < 0)
		return fail(v, EXIT_OPER, "%s: cannot open image: %s", v->image, strerror(errno));
	if (fstat(*fd, &st)) {
		e = errno;
		close(*fd);
		return fail(v, EXIT_OPER, "%s: %s", v->image, strerror(e));
	}
	if (!(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		close(*fd);
		return fail(v, EXIT_OPER, "'%s' is %s", v->image, S_ISDIR(st.st_mode) ?
			    "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO: not a SquashFS image" :
			    "not a regular file or a block device");
	}
	fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
	return -1;
}

static int run_file(struct verify *v)
{
	struct sqk_io *io;
	uint64_t size;
	int fd, r = open_file(v, &fd);

	if (r >= 0)
		return r;
	r = sqk_io_fd_create(fd, 0, false, &io);
	if (!r && (r = sqk_io_get_size(io, &size))) /* a device: the image on it (io.h) */
		sqk_io_destroy(io);
	if (r) {
		close(fd);
		return fail(v, EXIT_OPER, "%s: %s", v->image, sqk_strerror(r));
	}
	r = run(v, io, size);
	sqk_io_destroy(io);
	close(fd);
	return r;
}

/* The signal thread's callback: the findings printed so far flushed, one line saying the
 * check is incomplete, and the documented status (EXIT_INTERRUPTED, as fsck's 32). Nothing is
 * written but to stdout and stderr, so there is nothing to undo. */
static void on_signal(void *ctx, int sig)
{
	struct verify *v = ctx;

	fflush(stdout);
	flockfile(stderr);
	progress_clear(&v->pr);
	fprintf(stderr, "sqk verify: %s: the check was interrupted by %s and is incomplete "
		"(exit %d)\n", v->shown ? v->shown : v->image, sig == SIGINT ? "SIGINT" :
		sig == SIGTERM ? "SIGTERM" : "SIGHUP", EXIT_INTERRUPTED);
	funlockfile(stderr);
	_exit(EXIT_INTERRUPTED);
}

/* Entry point of `sqk verify`; argv[0] is the command name. Returns the exit status. */
int verify_main(int argc, char **argv)
{
	struct verify v = { 0 };
	struct sigwatch sw;
	bool watching = false;
	int r = parse(&v, argc, argv);

	if (r >= 0) {
		cmd_remote_free(&v.remote);
		return r;
	}
	if (sigwatch_start(&sw, on_signal, &v) == 0)
		watching = true;
	r = sqk_is_url(v.image) ? run_url(&v, v.image) : run_file(&v);
	if (watching)
		sigwatch_stop(&sw);
	if (fflush(stdout) || ferror(stdout))
		r = EXIT_OPER;
	cmd_remote_free(&v.remote);
	vv_free(&v.vv);
	free(v.shown);
	return r;
}
