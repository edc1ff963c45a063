/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk keygen: a new Ed25519 key pair for sqk sign and sqk mkimage --sign (sig_keygen): KEY, the
 * private key, and KEY.pub, the public key readers trust; prints the key id. */
#include "sign.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "sqk/error.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk keygen [--force] KEY\n"
		   "\n"
		   "Makes an Ed25519 key pair: KEY, the private key (PEM, PKCS#8, mode\n"
		   "0600), which sqk sign and sqk mkimage --sign sign with, and KEY.pub, the\n"
		   "public key (PEM, SubjectPublicKeyInfo), which readers trust; prints the\n"
		   "key's id (16 hex digits). Keys made by OpenSSL work as well:\n"
		   "  openssl genpkey -algorithm ed25519 -out KEY\n"
		   "  openssl pkey -in KEY -pubout -out KEY.pub\n"
		   "\n"
		   "  -f, --force   replace an existing KEY and KEY.pub\n"
		   "  -h, --help    this text\n"
		   "\n"
		   "Exit status: 0 made, 1 error (nothing written), 2 usage.\n");
}

/* Entry point of `sqk keygen`; argv[0] is the command name. Returns the exit status. */
int keygen_main(int argc, char **argv)
{
	static const struct option lo[] = { { "force", no_argument, NULL, 'f' },
					    { "help", no_argument, NULL, 'h' },
					    { NULL, 0, NULL, 0 } };
	uint8_t pub[SQK_SIG_PUB_SIZE];
	char why[600], id[2 * SQK_SIG_ID_SIZE + 1];
	bool force = false;
	int ch;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "fh", lo, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 0;
		} else if (ch == 'f') {
			force = true;
		} else {
			fprintf(stderr, "sqk keygen: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "sqk keygen: expected one KEY, got %d arguments (see --help)\n",
			argc - optind);
		return 2;
	}
	if (sig_keygen(argv[optind], force, pub, why, sizeof(why))) {
		fprintf(stderr, "sqk keygen: %s; no key written\n", why);
		return 1;
	}
	sig_key_id_hex(pub, id);
	printf("private key  %s (mode 0600: keep it secret)\n"
	       "public key   %s.pub\n"
	       "key id       %s\n", argv[optind], argv[optind], id);
	return 0;
}
