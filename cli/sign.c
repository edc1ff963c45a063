/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk sign: adds, replaces or removes an Ed25519 signature of an image (common/sign.h). The
 * whole image is checked against its integrity data first, so a damaged image is never signed;
 * then a new file is made beside it (cli/lib/outfile.h: an unnamed temporary with the image's
 * mode and owner) holding the image's bytes up to its old signature block, copied in the kernel
 * (cli/sign_image.c), and the new block; synced, then renamed over the image. A failure or a
 * signal leaves the image as it was and no temporary file. */
#include "sign.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/lib/outfile.h"
#include "cli/lib/sigwatch.h"
#include "common/bytes.h"
#include "common/format.h"
#include "common/parse.h"
#include "sqk/error.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const struct outfile_kind image_kind = {
	.what = "a SquashFS image",
	.ours = outfile_is_squashfs,
	.devices = false,
};

struct sign {
	const char *image;
	const char *key_path;        /* --key */
	const char *comment;         /* --comment (NULL: none) */
	const char *remove;          /* --remove KEYID|PUBKEY (NULL: sign) */
	bool has_time;               /* --time given */
	uint64_t time;
	bool quiet;
	EVP_PKEY *key;               /* --key, loaded */
	uint8_t pub[SQK_SIG_PUB_SIZE]; /* the key's (or --remove's) public key */
	uint8_t id[SQK_SIG_ID_SIZE]; /* the key id signed with or removed */
	bool replaced;               /* the key had signed the image before */
	struct sigwatch sw;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk sign --key KEY [--comment TEXT] [--time SECONDS] IMAGE\n"
		   "       sqk sign --remove KEYID IMAGE\n"
		   "\n"
		   "Signs IMAGE with the Ed25519 private key KEY (made by sqk keygen, or by\n"
		   "openssl genpkey -algorithm ed25519; mode 0600): a signature of its integrity\n"
		   "root digest, its size, the time and the comment, added to the signatures at\n"
		   "the end of IMAGE, in place of the key's earlier one. IMAGE is checked against\n"
		   "its integrity data first (a damaged image, or one without integrity data, is\n"
		   "not signed) and replaced atomically; its bytes before the signatures do not\n"
		   "change, so other readers (the kernel, unsquashfs, dm-verity) see the same\n"
		   "image.\n"
		   "\n"
		   "  -k, --key KEY       the private key (PEM, PKCS#8, unencrypted)\n"
		   "      --comment TEXT  a signed comment, e.g. a version (UTF-8 without control\n"
		   "                      characters, at most 1024 bytes)\n"
		   "      --time SECONDS  the signed time (default: SOURCE_DATE_EPOCH when set,\n"
		   "                      else now)\n"
		   "      --remove KEYID  remove the signature of that key instead (KEYID: its 16\n"
		   "                      hex digits, or its public key file)\n"
		   "  -q, --quiet         print nothing on success\n"
		   "  -h, --help          this text\n"
		   "\n"
		   "Exit status: 0 signed, 1 error (IMAGE unchanged), 2 usage or a bad key.\n");
}

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "sqk sign: message (see --help)"; returns EXIT_USAGE. */
static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sqk sign: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see --help)\n");
	return EXIT_USAGE;
}

/* Parses argv; returns -1 to go on, else an exit status. */
static int parse(struct sign *s, int argc, char **argv)
{
	enum { OPT_COMMENT = 256, OPT_TIME, OPT_REMOVE };
	static const struct option lo[] = { { "key", required_argument, NULL, 'k' },
					    { "comment", required_argument, NULL, OPT_COMMENT },
					    { "time", required_argument, NULL, OPT_TIME },
					    { "remove", required_argument, NULL, OPT_REMOVE },
					    { "quiet", no_argument, NULL, 'q' },
					    { "help", no_argument, NULL, 'h' },
					    { NULL, 0, NULL, 0 } };
	int ch;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":k:qh", lo, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else if (ch == 'k') {
			s->key_path = optarg;
		} else if (ch == OPT_COMMENT) {
			s->comment = optarg;
		} else if (ch == OPT_REMOVE) {
			s->remove = optarg;
		} else if (ch == 'q') {
			s->quiet = true;
		} else if (ch == OPT_TIME && !parse_u64(optarg, INT64_MAX, &s->time)) {
			s->has_time = true;
		} else if (ch == OPT_TIME) {
			return usage_err("bad --time '%s': need seconds since 1970", optarg);
		} else {
			return usage_err(ch == ':' ? "option '%s' needs a value" :
					 "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "sqk sign: expected one IMAGE, got %d arguments (see --help)\n",
			argc - optind);
		return EXIT_USAGE;
	}
	s->image = argv[optind];
	if (!s->key_path == !s->remove)
		return usage_err("%s", s->remove ? "--key and --remove do not go together" :
				 "need --key KEY (or --remove KEYID)");
	if (s->remove && (s->comment || s->has_time))
		return usage_err("%s", "--remove takes no --comment or --time");
	return -1;
}

/* The key, the comment and the time: checked before the image is looked at. Returns -1 to go
 * on, else an exit status. */
static int prepare(struct sign *s)
{
	char why[512];
	const char *sde = getenv("SOURCE_DATE_EPOCH");

	if (s->remove && !sig_parse_key_id(s->remove, s->id))
		return -1;
	if (s->remove && sig_load_public(s->remove, s->pub, why, sizeof(why))) {
		fprintf(stderr, "sqk sign: --remove '%s': neither a key id (16 hex digits) nor a "
			"public key file: %s\n", s->remove, why);
		return EXIT_USAGE;
	}
	if (s->remove) {
		sig_key_id(s->pub, s->id);
		return -1;
	}
	if (sig_load_private(s->key_path, &s->key, why, sizeof(why))) {
		fprintf(stderr, "sqk sign: %s: %s\n", s->key_path, why);
		return EXIT_USAGE;
	}
	sig_public_of(s->key, s->pub);
	sig_key_id(s->pub, s->id);
	if (s->comment && sig_comment_check(s->comment, strlen(s->comment)))
		return usage_err("bad --comment: need UTF-8 without control characters, at most "
				 "1024 bytes");
	if (s->has_time)
		return -1;
	if (sde && *sde && parse_u64(sde, INT64_MAX, &s->time))
		return usage_err("invalid SOURCE_DATE_EPOCH '%s': need seconds since 1970", sde);
	if (!sde || !*sde)
		s->time = (uint64_t)time(NULL);
	return -1;
}

/* Opens the judged image for reading, which must be the file judged, and says what it is when
 * it is no SquashFS image. 0, or -1 with why. */
static int open_image(const struct outfile_target *t, struct sign_image *im, char *why,
		      size_t whylen)
{
	uint8_t head[SQK_PROBE_SIZE];
	struct stat st;
	ssize_t n;

	im->fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (im->fd < 0 || fstat(im->fd, &st)) {
		snprintf(why, whylen, "cannot open %s: %s", im->name, strerror(errno));
		return -1;
	}
	if (st.st_dev != t->st.st_dev || st.st_ino != t->st.st_ino) {
		snprintf(why, whylen, "%s changed while it was looked at", im->name);
		return -1;
	}
	im->size = (uint64_t)st.st_size;
	n = pread(im->fd, head, sizeof(head), 0);
	if (n < 0) {
		snprintf(why, whylen, "cannot read %s: %s", im->name, strerror(errno));
		return -1;
	}
	return super_diagnose(im->name, 0, head, (size_t)n, NULL, 0, im->size, why, whylen) ? -1
												: 0;
}

/* The judge's verdict on the image: only an existing SquashFS image (or a regular file, which
 * open_image names) is signed. 0, or -1 with why. */
static int judge(const char *image, struct outfile_target *t, char *why, size_t whylen)
{
	if (outfile_judge(image, &image_kind, false, t)) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (t->verdict == SQK_OUT_NEW)
		snprintf(why, whylen, "cannot open %s: %s", image, strerror(ENOENT));
	else if (t->verdict == SQK_OUT_REFUSED && !S_ISREG(t->st.st_mode))
		snprintf(why, whylen, "%s", t->why);
	else
		return 0;
	return -1;
}

/* The new signature into im->blk, or the one removed: the block to write (*out, caller frees;
 * NULL when no signature is left). 0, or -1 with why. */
static int new_block(struct sign *s, struct sign_image *im, uint8_t **out, size_t *len,
		     char *why, size_t whylen)
{
	struct sig_entry e;
	char hex[2 * SQK_SIG_ID_SIZE + 1];
	int err;

	*out = NULL;
	*len = 0;
	bytes_hex(s->id, sizeof(s->id), hex);
	hex[sizeof(hex) - 1] = '\0';
	if (s->remove && !sig_block_remove(&im->blk, s->id)) {
		snprintf(why, whylen, "%s has no signature by key %s", im->name, hex);
		return -1;
	}
	if (!s->remove) {
		for (size_t i = 0; i < im->blk.n; i++)
			s->replaced |= !memcmp(im->blk.e[i].pub, s->pub, SQK_SIG_PUB_SIZE);
		err = sig_sign(s->key, im->root, im->image_end, s->time, s->comment, &e);
		if (!err)
			err = sig_block_set(&im->blk, &e);
		sig_entry_clear(&e);
		if (err == SQK_ETOOBIG) {
			snprintf(why, whylen, "%s has %u signatures already, the most a block "
				 "holds: remove one first (--remove KEYID)", im->name,
				 SQK_SIG_MAX_ENTRIES);
			return -1;
		}
	} else {
		err = 0;
	}
	im->blk.image_end = im->image_end;
	if (!err && im->blk.n)
		err = sig_block_encode(&im->blk, out, len);
	if (err)
		snprintf(why, whylen, "cannot make the signature: %s", sqk_strerror(err));
	return err ? -1 : 0;
}

/* Writes the new file and renames it over the image. 0, or -1 with why. */
static int replace(struct sign *s, struct sign_image *im, struct outfile_target *t,
		   const uint8_t *blk, size_t len, char *why, size_t whylen)
{
	struct outfile of;

	if (outfile_create_judged(&of, s->image, t, ".sqk-sign", why, whylen)) {
		outfile_abort(&of);
		return -1;
	}
	if (sign_image_write(im, of.fd, blk, len, &s->sw.sig, why, whylen)) {
		outfile_abort(&of);
		return -1;
	}
	if (outfile_commit(&of, NULL)) {
		if (errno == EEXIST)
			snprintf(why, whylen, "%s changed while it was signed: not replaced",
				 s->image);
		else
			snprintf(why, whylen, "cannot rename the signed copy to %s: %s", s->image,
				 strerror(errno));
		outfile_abort(&of);
		return -1;
	}
	return 0;
}

static void report(const struct sign *s, const struct sign_image *im)
{
	char hex[2 * SQK_SIG_ID_SIZE + 1], when[64] = "";
	time_t tt = (time_t)s->time;
	struct tm tm;

	if (s->quiet)
		return;
	bytes_hex(s->id, sizeof(s->id), hex);
	hex[sizeof(hex) - 1] = '\0';
	if (s->remove) {
		if (im->blk.n)
			printf("%s: the signature by key %s removed; %zu signature%s left\n",
			       s->image, hex, im->blk.n, im->blk.n == 1 ? "" : "s");
		else
			printf("%s: the signature by key %s removed; no signature left\n",
			       s->image, hex);
		return;
	}
	if (gmtime_r(&tt, &tm))
		strftime(when, sizeof(when), " (%Y-%m-%d %H:%M:%S UTC)", &tm);
	printf("%s: signed by key %s at %llu%s%s; %zu signature%s\n", s->image, hex,
	       (unsigned long long)s->time, when, s->replaced ? ", in place of its earlier one" :
	       "", im->blk.n, im->blk.n == 1 ? "" : "s");
}

/* Judges, checks and replaces the image. Returns the exit status. */
static int run(struct sign *s)
{
	struct outfile_target t = { 0 };
	struct sign_image im = { .name = s->image, .fd = -1 };
	uint8_t *blk = NULL;
	size_t len = 0;
	char why[1024] = "";
	int r = judge(s->image, &t, why, sizeof(why));
	bool opened = false;

	if (!r)
		r = open_image(&t, &im, why, sizeof(why));
	opened = !r;
	if (!r)
		r = sign_image_locate(&im, why, sizeof(why));
	if (!r && !s->remove)
		r = sign_image_check(&im, &s->sw.sig, why, sizeof(why));
	if (!r)
		r = new_block(s, &im, &blk, &len, why, sizeof(why));
	if (!r)
		r = replace(s, &im, &t, blk, len, why, sizeof(why));
	if (!r)
		report(s, &im);
	outfile_target_free(&t);
	if (im.fd >= 0)
		close(im.fd);
	sig_block_free(&im.blk);
	free(blk);
	if (!r)
		return EXIT_OK;
	int sig = atomic_load(&s->sw.sig);
	if (sig) {
		fprintf(stderr, "sqk sign: interrupted by %s; %s unchanged\n", strsignal(sig),
			s->image);
		return 128 + sig;
	}
	if (opened)
		fprintf(stderr, "sqk sign: %s%s; %s unchanged\n", s->remove ? "" : "cannot sign: ",
			why, s->image);
	else
		fprintf(stderr, "sqk sign: %s%s\n", s->remove ? "" : "cannot sign: ", why);
	return EXIT_FAIL;
}

/* Entry point of `sqk sign`; argv[0] is the command name. Returns the exit status. */
int sign_main(int argc, char **argv)
{
	struct sign s = { 0 };
	int r = parse(&s, argc, argv);

	if (r < 0)
		r = prepare(&s);
	if (r < 0 && sigwatch_start(&s.sw, NULL, NULL)) {
		fprintf(stderr, "sqk sign: cannot start the signal thread\n");
		r = EXIT_FAIL;
	} else if (r < 0) {
		r = run(&s);
		sigwatch_stop(&s.sw);
	}
	EVP_PKEY_free(s.key);
	if (fflush(stdout) || ferror(stdout))
		r = r ? r : EXIT_FAIL;
	return r;
}
