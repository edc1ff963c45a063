/* SPDX-License-Identifier: BSD-2-Clause */
/* The dm-verity files beside an image, as systemd looks for them (`sqk mkimage --verity` writes
 * them, `sqk verify` reads them): their names, the root hash file (lower-case hex and a
 * newline), and the PKCS#7 signature of the root hash (IMAGE.roothash.p7s) made with an X.509
 * certificate and its RSA or ECDSA key through OpenSSL. */
#ifndef SQK_CLI_VERITY_FILES_H
#define SQK_CLI_VERITY_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "common/verity.h"

/* The sidecar suffixes, systemd's. */
#define VERITY_SUFFIX_TREE ".verity"
#define VERITY_SUFFIX_ROOT ".roothash"
#define VERITY_SUFFIX_SIG ".roothash.p7s"

/* The sidecar of image with suffix, as systemd-dissect names it: a ".raw" suffix replaced (foo.raw
 * -> foo.verity), any other name extended (img.sqsh -> img.sqsh.verity). Caller frees; NULL
 * when out of memory. */
char *verity_sidecar_path(const char *image, const char *suffix);

/* The text of a root hash file: 64 lower-case hex digits and a newline, NUL-terminated. */
void verity_root_text(const uint8_t root[VERITY_DIGEST], char out[2 * VERITY_DIGEST + 2]);

/* Reads the root hash file path: 64 hex digits (either case), then at most a newline. 0;
 * SQK_ENOENT when there is no such file; SQK_ECORRUPT (why says what is wrong) or an I/O
 * error otherwise. */
int verity_read_root(const char *path, uint8_t root[VERITY_DIGEST], char *why, size_t cap);

struct x509_st;
struct evp_pkey_st;

/* A certificate and its private key, loaded and checked. */
struct verity_signer {
	struct x509_st *cert;     /* owned */
	struct evp_pkey_st *key;  /* owned */
};

/* Loads the PEM certificate cert_path and the PEM private key key_path (not encrypted) and
 * checks them: an RSA or ECDSA key (what the kernel's keyring and systemd verify), the one
 * whose public half the certificate holds. 0; else SQK_EINVAL (or SQK_ENOENT, an I/O error)
 * with a message in msg naming the file and the reason, and nothing left to free. */
int verity_signer_load(struct verity_signer *s, const char *cert_path, const char *key_path,
		       char *msg, size_t cap);

/* The detached DER PKCS#7 signature (the signer's certificate inside, no signed attributes) of
 * text[0..len), as systemd-repart makes it and the kernel's dm-verity and systemd check it.
 * Caller frees *der (OPENSSL_free). 0, or SQK_ENOMEM / SQK_EINVAL with a message in msg. */
int verity_signer_sign(const struct verity_signer *s, const char *text, size_t len,
		       uint8_t **der, size_t *der_len, char *msg, size_t cap);

/* Frees what s holds; NULL-safe, and safe again. */
void verity_signer_free(struct verity_signer *s);

#endif
