/* SPDX-License-Identifier: BSD-2-Clause */
/* The dm-verity files beside an image (verity_files.h): names, the root hash file, and the
 * PKCS#7 signer over OpenSSL's libcrypto. */
#include "verity_files.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/integrity.h"
#include "sqk/error.h"

char *verity_sidecar_path(const char *image, const char *suffix)
{
	size_t n = strlen(image), s = strlen(suffix);
	char *p;

	if (n > 4 && !strcmp(image + n - 4, ".raw"))
		n -= 4;
	p = malloc(n + s + 1);
	if (!p)
		return NULL;
	memcpy(p, image, n);
	memcpy(p + n, suffix, s + 1);
	return p;
}

/* Fills the caller's out. */
void verity_root_text(const uint8_t root[VERITY_DIGEST], char out[2 * VERITY_DIGEST + 2])
{
	bytes_hex(root, VERITY_DIGEST, out);
	out[2 * VERITY_DIGEST] = '\n';
	out[2 * VERITY_DIGEST + 1] = 0;
}

/* Fills the caller's root and why. */
int verity_read_root(const char *path, uint8_t root[VERITY_DIGEST], char *why, size_t cap)
{
	char buf[2 * VERITY_DIGEST + 3];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	int e = errno;

	if (fd < 0 && e == ENOENT)
		return SQK_ENOENT;
	if (fd < 0) {
		snprintf(why, cap, "cannot open '%s': %s", path, strerror(e));
		return sqk_from_errno(e);
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		snprintf(why, cap, "cannot read '%s': %s", path, strerror(errno));
	close(fd);
	if (n < 0)
		return SQK_EIO;
	buf[n] = 0;
	if (n == 2 * VERITY_DIGEST + 1 && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (n != 2 * VERITY_DIGEST || integ_parse_hex(buf, root)) {
		snprintf(why, cap, "'%s' does not hold a root hash (64 hex digits and a newline)",
			 path);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* msg: what failed, naming path, with OpenSSL's reason when it gave one and what is read. */
static int load_fail(char *msg, size_t cap, const char *path, const char *what,
		     const char *expected)
{
	unsigned long e = ERR_peek_last_error();
	const char *reason = e ? ERR_reason_error_string(e) : NULL;

	snprintf(msg, cap, "cannot read %s '%s'%s%s (%s)", what, path, reason ? ": " : "",
		 reason ? reason : "", expected);
	ERR_clear_error();
	return SQK_EINVAL;
}

/* No passphrase is ever asked for: an encrypted key fails to load, with its message. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* Opens path for reading into *f, or says why in msg. */
static int open_pem(const char *path, FILE **f, char *msg, size_t cap)
{
	*f = fopen(path, "re");
	if (*f)
		return 0;
	snprintf(msg, cap, "cannot open '%s': %s", path, strerror(errno));
	return errno == ENOENT ? SQK_ENOENT : SQK_EINVAL;
}

/* The key's type, in words, when it is one the kernel and systemd do not verify; NULL for RSA
 * and ECDSA. */
static const char *refused_type(EVP_PKEY *key)
{
	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_RSA: case EVP_PKEY_EC: return NULL;
	case EVP_PKEY_ED25519: return "an Ed25519 key";
	case EVP_PKEY_ED448: return "an Ed448 key";
	case EVP_PKEY_DSA: return "a DSA key";
	case EVP_PKEY_RSA_PSS: return "an RSA-PSS key";
	default: return "a key of another type";
	}
}

/* Fills the caller's *s, or msg. */
int verity_signer_load(struct verity_signer *s, const char *cert_path, const char *key_path,
		       char *msg, size_t cap)
{
	FILE *f;
	int err;

	s->cert = NULL;
	s->key = NULL;
	if ((err = open_pem(cert_path, &f, msg, cap)))
		return err;
	s->cert = PEM_read_X509(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (!s->cert)
		return load_fail(msg, cap, cert_path, "the X.509 certificate",
				 "a PEM \"CERTIFICATE\" is expected");
	if ((err = open_pem(key_path, &f, msg, cap)) == 0) {
		s->key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
		fclose(f);
		err = s->key ? 0 : load_fail(msg, cap, key_path, "the private key",
					     "a PEM private key is expected, not encrypted");
	}
	if (!err && refused_type(s->key)) {
		snprintf(msg, cap, "'%s' is %s: dm-verity signatures (the kernel's keyring, "
			 "systemd) take RSA or ECDSA keys", key_path, refused_type(s->key));
		err = SQK_EINVAL;
	} else if (!err && X509_check_private_key(s->cert, s->key) != 1) {
		snprintf(msg, cap, "the private key '%s' does not match the certificate '%s'",
			 key_path, cert_path);
		err = SQK_EINVAL;
	}
	ERR_clear_error();
	if (err)
		verity_signer_free(s);
	return err;
}

/* Caller frees *der. */
int verity_signer_sign(const struct verity_signer *s, const char *text, size_t len,
		       uint8_t **der, size_t *der_len, char *msg, size_t cap)
{
	BIO *in = BIO_new_mem_buf(text, (int)len);
	PKCS7 *p7 = in ? PKCS7_sign(s->cert, s->key, NULL, in,
				    PKCS7_DETACHED | PKCS7_BINARY | PKCS7_NOATTR) : NULL;
	unsigned char *out = NULL;
	int n = p7 ? i2d_PKCS7(p7, &out) : -1;

	PKCS7_free(p7);
	BIO_free(in);
	if (n <= 0) {
		unsigned long e = ERR_get_error();

		snprintf(msg, cap, "cannot sign the root hash: %s",
			 e && ERR_reason_error_string(e) ? ERR_reason_error_string(e) :
			 "out of memory");
		ERR_clear_error();
		return SQK_EINVAL;
	}
	*der = out;
	*der_len = (size_t)n;
	return 0;
}

/* Frees what s holds. */
void verity_signer_free(struct verity_signer *s)
{
	if (!s)
		return;
	X509_free(s->cert);
	EVP_PKEY_free(s->key);
	s->cert = NULL;
	s->key = NULL;
}
