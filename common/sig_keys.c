/* SPDX-License-Identifier: BSD-2-Clause */
/* The key files of image signatures (sign.h): loading a private or public Ed25519 key from PEM
 * with a reason for every refusal (mode, type, encryption, format), making a new key pair, key
 * ids, and the set of trusted keys read from files and folders. */
#include "sign.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "grow.h"
#include "integrity.h"
#include "sqk/error.h"

/* A key file larger than this is not a key (an Ed25519 PEM file is about 120 bytes). */
#define KEY_FILE_MAX 65536

#define HINT_NEW "make one with sqk keygen or openssl genpkey -algorithm ed25519"

void sig_key_id(const uint8_t pub[SQK_SIG_PUB_SIZE], uint8_t id[SQK_SIG_ID_SIZE])
{
	uint8_t d[SQK_INTEG_DIGEST_SIZE];

	hash_sha256(pub, SQK_SIG_PUB_SIZE, d);
	memcpy(id, d, SQK_SIG_ID_SIZE);
}

void sig_key_id_hex(const uint8_t pub[SQK_SIG_PUB_SIZE], char out[2 * SQK_SIG_ID_SIZE + 1])
{
	uint8_t id[SQK_SIG_ID_SIZE];

	sig_key_id(pub, id);
	bytes_hex(id, SQK_SIG_ID_SIZE, out);
	out[2 * SQK_SIG_ID_SIZE] = '\0';
}

int sig_parse_key_id(const char *hex, uint8_t id[SQK_SIG_ID_SIZE])
{
	return bytes_from_hex(hex, id, SQK_SIG_ID_SIZE) ? SQK_EINVAL : 0;
}

static int say(char *why, size_t whylen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Puts the reason in why and returns err. */
static int say(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int errno_code(int e)
{
	return e == ENOENT ? SQK_ENOENT : e == EACCES || e == EPERM ? SQK_EACCESS : SQK_EIO;
}

/* Reads the whole key file path into *buf (caller frees; NUL-terminated) of *len bytes and its
 * mode into *mode. */
static int read_key_file(const char *path, char **buf, size_t *len, mode_t *mode, char *why,
			 size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t got = 0;
	int err = 0;

	*buf = NULL;
	if (fd < 0)
		return say(why, whylen, errno_code(errno), "cannot open: %s", strerror(errno));
	if (fstat(fd, &st))
		err = say(why, whylen, SQK_EIO, "cannot stat: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		err = say(why, whylen, SQK_EINVAL, "not a regular file");
	else if (st.st_size > KEY_FILE_MAX)
		err = say(why, whylen, SQK_EINVAL, "%lld bytes: too large for a key file",
			  (long long)st.st_size);
	else if (!(*buf = malloc((size_t)st.st_size + 1)))
		err = SQK_ENOMEM;
	while (!err && got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = say(why, whylen, SQK_EIO, "cannot read: %s",
				  n ? strerror(errno) : "shorter than its size");
		else
			got += (size_t)n;
	}
	close(fd);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	(*buf)[got] = '\0';
	*len = got;
	*mode = st.st_mode;
	return 0;
}

/* The label of the first PEM object of buf that is not parameters ("PRIVATE KEY", "PUBLIC
 * KEY"...) into label (cap bytes); false when buf holds no PEM object. */
static bool pem_label(const char *buf, size_t len, char *label, size_t cap)
{
	BIO *bio = BIO_new_mem_buf(buf, (int)len);
	bool found = false;

	while (bio && !found) {
		char *name = NULL, *header = NULL;
		unsigned char *data = NULL;
		long dlen = 0;

		if (!PEM_read_bio(bio, &name, &header, &data, &dlen))
			break;
		size_t nl = strlen(name);
		if (nl < 10 || strcmp(name + nl - 10, "PARAMETERS")) {
			snprintf(label, cap, "%s", name);
			found = true;
		}
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
	}
	BIO_free(bio);
	ERR_clear_error();
	return found;
}

/* Why a file that holds no PEM object is no key: said for the formats one may mistake for one. */
static int not_pem(const char *buf, char *why, size_t whylen)
{
	if (!strncmp(buf, "ssh-ed25519 ", 12) || !strncmp(buf, "ssh-", 4))
		return say(why, whylen, SQK_EINVAL, "an OpenSSH public key, not a PEM key (%s)",
			   HINT_NEW);
	if (!strncmp(buf, "untrusted comment:", 18))
		return say(why, whylen, SQK_EINVAL, "a minisign or signify key, not a PEM key (%s)",
			   HINT_NEW);
	return say(why, whylen, SQK_EINVAL, "not a PEM key file (%s)", HINT_NEW);
}

/* The type of a key that is not Ed25519, in a reason. */
static int wrong_type(EVP_PKEY *k, const char *what, char *why, size_t whylen)
{
	const char *name = EVP_PKEY_get0_type_name(k);

	return say(why, whylen, SQK_EINVAL, "%s %s key, not Ed25519 (%s)", what,
		   name ? name : "unknown", HINT_NEW);
}

/* The password callback: an encrypted key is refused, never asked for. */
static int no_password(char *buf, int size, int rwflag, void *asked)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	*(bool *)asked = true;
	return -1;
}

/* Refusals that follow from the label of a file given as a private key alone. */
static int private_label(const char *label, char *why, size_t whylen)
{
	if (!strcmp(label, "ENCRYPTED PRIVATE KEY"))
		return say(why, whylen, SQK_EINVAL, "an encrypted private key: sqk needs it "
			   "unencrypted (openssl pkey -in KEY -out PLAIN, then chmod 600 PLAIN)");
	if (!strcmp(label, "PUBLIC KEY") || !strcmp(label, "RSA PUBLIC KEY"))
		return say(why, whylen, SQK_EINVAL, "a public key, not a private key (sign with "
			   "the private key; the .pub file is for checking)");
	if (!strcmp(label, "CERTIFICATE") || !strcmp(label, "TRUSTED CERTIFICATE"))
		return say(why, whylen, SQK_EINVAL, "a certificate, not a private key");
	if (!strcmp(label, "OPENSSH PRIVATE KEY"))
		return say(why, whylen, SQK_EINVAL, "an OpenSSH private key, not PKCS#8 PEM (%s)",
			   HINT_NEW);
	size_t n = strlen(label);
	if (n < 11 || strcmp(label + n - 11, "PRIVATE KEY"))
		return say(why, whylen, SQK_EINVAL, "a PEM '%s', not a private key", label);
	return 0;
}

/* Reads the key file path (read_key_file) and judges its PEM label with judge: 0 with *buf
 * (caller cleanses and frees), *len and *mode set; else an error with why, nothing to free. */
static int read_pem(const char *path, int (*judge)(const char *label, char *why, size_t whylen),
		    char **buf, size_t *len, mode_t *mode, char *why, size_t whylen)
{
	char label[80];
	int err = read_key_file(path, buf, len, mode, why, whylen);

	if (err)
		return err;
	if (!pem_label(*buf, *len, label, sizeof(label)))
		err = not_pem(*buf, why, whylen);
	else
		err = judge(label, why, whylen);
	if (err) {
		OPENSSL_cleanse(*buf, *len);
		free(*buf);
		*buf = NULL;
	}
	return err;
}

/* Borrows path; the caller owns *out. A file that holds no private key is named for what it
 * holds before its mode is judged: a public key given by mistake is said to be one. */
int sig_load_private(const char *path, EVP_PKEY **out, char *why, size_t whylen)
{
	char *buf;
	size_t len;
	mode_t mode;
	bool asked = false;
	int err = read_pem(path, private_label, &buf, &len, &mode, why, whylen);

	*out = NULL;
	if (err)
		return err;
	if (mode & 077)
		err = say(why, whylen, SQK_EINVAL, "mode %04o: a private key must not be readable "
			  "or writable by group or others (chmod 600 it)",
			  (unsigned)(mode & 07777));
	BIO *bio = err ? NULL : BIO_new_mem_buf(buf, (int)len);
	EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_password, &asked) : NULL;
	if (!err && !k)
		err = asked ? say(why, whylen, SQK_EINVAL, "an encrypted private key: sqk needs "
				  "it unencrypted")
			    : say(why, whylen, SQK_EINVAL, "a damaged PEM private key");
	else if (!err && EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519)
		err = wrong_type(k, "a private", why, whylen);
	BIO_free(bio);
	OPENSSL_cleanse(buf, len);
	free(buf);
	ERR_clear_error();
	if (err) {
		EVP_PKEY_free(k);
		return err;
	}
	*out = k;
	return 0;
}

/* Refusals that follow from the label of a file given as a public key. */
static int public_label(const char *label, char *why, size_t whylen)
{
	size_t n = strlen(label);

	if (n >= 11 && !strcmp(label + n - 11, "PRIVATE KEY"))
		return say(why, whylen, SQK_EINVAL, "a private key, not a public key (give its "
			   ".pub file, or make one: openssl pkey -in KEY -pubout)");
	if (!strcmp(label, "CERTIFICATE") || !strcmp(label, "TRUSTED CERTIFICATE"))
		return say(why, whylen, SQK_EINVAL, "a certificate, not a public key (sqk trusts "
			   "Ed25519 public keys: openssl x509 -pubkey -noout extracts one)");
	if (!strcmp(label, "RSA PUBLIC KEY"))
		return say(why, whylen, SQK_EINVAL, "an RSA public key, not Ed25519 (%s)",
			   HINT_NEW);
	if (strcmp(label, "PUBLIC KEY"))
		return say(why, whylen, SQK_EINVAL, "a PEM '%s', not a public key", label);
	return 0;
}

/* Borrows key; fills the caller's pub. */
int sig_public_of(EVP_PKEY *key, uint8_t pub[SQK_SIG_PUB_SIZE])
{
	size_t n = SQK_SIG_PUB_SIZE;

	if (!key || EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519 ||
	    !EVP_PKEY_get_raw_public_key(key, pub, &n) || n != SQK_SIG_PUB_SIZE) {
		ERR_clear_error();
		return SQK_EINVAL;
	}
	return 0;
}

/* Borrows path; fills the caller's pub. */
int sig_load_public(const char *path, uint8_t pub[SQK_SIG_PUB_SIZE], char *why, size_t whylen)
{
	char *buf;
	size_t len;
	mode_t mode;
	int err = read_pem(path, public_label, &buf, &len, &mode, why, whylen);

	if (err)
		return err;
	BIO *bio = BIO_new_mem_buf(buf, (int)len);
	EVP_PKEY *k = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
	if (!err && !k)
		err = say(why, whylen, SQK_EINVAL, "a damaged PEM public key");
	else if (!err && EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519)
		err = wrong_type(k, "a public", why, whylen);
	else if (!err && sig_public_of(k, pub))
		err = say(why, whylen, SQK_EINVAL, "a damaged Ed25519 public key");
	BIO_free(bio);
	EVP_PKEY_free(k);
	free(buf);
	ERR_clear_error();
	return err;
}

/* ---- keygen ---- */

/* A temporary file in path's folder ("PATH.XXXXXX", mode 0600) holding the PEM text of key
 * (private or public), synced; its name in *tmp (caller frees and removes). */
static int write_temp(const char *path, EVP_PKEY *key, bool private, char **tmp, char *why,
		      size_t whylen)
{
	size_t plen = strlen(path);
	BIO *bio = BIO_new(BIO_s_mem());
	char *pem = NULL;
	long n = 0;
	int fd, err = 0;

	*tmp = malloc(plen + 8);
	if (!*tmp || !bio) {
		BIO_free(bio);
		return SQK_ENOMEM;
	}
	memcpy(*tmp, path, plen);
	memcpy(*tmp + plen, ".XXXXXX", 8);
	if (!(private ? PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
		      : PEM_write_bio_PUBKEY(bio, key)) ||
	    (n = BIO_get_mem_data(bio, &pem)) <= 0) {
		BIO_free(bio);
		return SQK_ENOMEM;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		err = say(why, whylen, errno_code(errno), "%s: cannot create: %s", path,
			  strerror(errno));
		free(*tmp);
		*tmp = NULL;
	} else if ((!private && fchmod(fd, 0644)) || write(fd, pem, (size_t)n) != n ||
		   fsync(fd)) {
		err = say(why, whylen, SQK_EIO, "%s: cannot write: %s", path, strerror(errno));
	}
	if (fd >= 0 && close(fd) && !err)
		err = say(why, whylen, SQK_EIO, "%s: cannot write: %s", path, strerror(errno));
	if (private)
		OPENSSL_cleanse(pem, (size_t)n);
	BIO_free(bio);
	return err;
}

/* Renames tmp to path: over an existing file only when force. */
static int place(const char *tmp, const char *path, bool force, char *why, size_t whylen)
{
	if (force ? !rename(tmp, path) : !renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
						       RENAME_NOREPLACE))
		return 0;
	if (!force && errno == EINVAL) { /* the file system cannot: link never replaces either */
		if (!link(tmp, path)) {
			unlink(tmp);
			return 0;
		}
	}
	if (errno == EEXIST)
		return say(why, whylen, SQK_EINVAL, "%s exists: not replaced (--force replaces "
			   "it)", path);
	return say(why, whylen, errno_code(errno), "%s: cannot rename into place: %s", path,
		   strerror(errno));
}

/* Syncs the folder that holds path (best effort: the renames are then durable). */
static void sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* Writes key's two files (both names taken before the first rename). */
static int write_pair(const char *path, const char *pubpath, EVP_PKEY *key, bool force,
		      char *why, size_t whylen)
{
	char *tpriv = NULL, *tpub = NULL;
	int err = write_temp(path, key, true, &tpriv, why, whylen);

	if (!err)
		err = write_temp(pubpath, key, false, &tpub, why, whylen);
	if (!err)
		err = place(tpriv, path, force, why, whylen);
	if (!err && (err = place(tpub, pubpath, force, why, whylen)))
		unlink(path); /* made just now: no private key without its .pub */
	if (err && tpriv)
		unlink(tpriv);
	if (err && tpub)
		unlink(tpub);
	free(tpriv);
	free(tpub);
	if (!err)
		sync_dir_of(path);
	return err;
}

/* Borrows path; fills the caller's pub. */
int sig_keygen(const char *path, bool force, uint8_t pub[SQK_SIG_PUB_SIZE], char *why,
	       size_t whylen)
{
	size_t plen = strlen(path);
	char *pubpath = malloc(plen + 5);
	struct stat st;
	EVP_PKEY *key = NULL;
	uint8_t raw[SQK_SIG_PUB_SIZE];
	int err = 0;

	if (!pubpath)
		return SQK_ENOMEM;
	memcpy(pubpath, path, plen);
	memcpy(pubpath + plen, ".pub", 5);
	if (!plen || path[plen - 1] == '/')
		err = say(why, whylen, SQK_EINVAL, "'%s' names a folder, not a key file", path);
	else if (!force && !lstat(path, &st))
		err = say(why, whylen, SQK_EINVAL, "%s exists: not replaced (--force replaces it)",
			  path);
	else if (!force && !lstat(pubpath, &st))
		err = say(why, whylen, SQK_EINVAL, "%s exists: not replaced (--force replaces it)",
			  pubpath);
	else if (!(key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) || sig_public_of(key, raw))
		err = say(why, whylen, SQK_ENOMEM, "OpenSSL cannot make an Ed25519 key");
	if (!err)
		err = write_pair(path, pubpath, key, force, why, whylen);
	if (!err && pub)
		memcpy(pub, raw, SQK_SIG_PUB_SIZE);
	EVP_PKEY_free(key);
	free(pubpath);
	ERR_clear_error();
	return err;
}

/* ---- the trust set ---- */

int sig_trust_add(struct sig_trust *t, const uint8_t pub[SQK_SIG_PUB_SIZE])
{
	if (sig_trust_has(t, pub))
		return 0;
	if (mem_grow(&t->keys, &t->cap, t->n + 1, sizeof(*t->keys), 0))
		return SQK_ENOMEM;
	memcpy(t->keys[t->n++], pub, SQK_SIG_PUB_SIZE);
	return 0;
}

/* Borrows path. */
int sig_trust_add_file(struct sig_trust *t, const char *path, char *why, size_t whylen)
{
	uint8_t pub[SQK_SIG_PUB_SIZE];
	int err = sig_load_public(path, pub, why, whylen);

	return err ? err : sig_trust_add(t, pub);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the regular *.pub files of the open folder d, sorted, into *names (caller frees
 * each and the array). */
static int pub_names(DIR *d, int dfd, char ***names, size_t *n)
{
	size_t cap = 0;
	struct dirent *de;
	struct stat st;

	*names = NULL;
	*n = 0;
	errno = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l < 5 || strcmp(de->d_name + l - 4, ".pub") || de->d_name[0] == '.' ||
		    fstatat(dfd, de->d_name, &st, 0) || !S_ISREG(st.st_mode))
			continue;
		if (mem_grow(names, &cap, *n + 1, sizeof(**names), 0) ||
		    !((*names)[*n] = strdup(de->d_name)))
			return SQK_ENOMEM;
		++*n;
	}
	if (errno)
		return SQK_EIO;
	if (*n)
		qsort(*names, *n, sizeof(**names), by_name);
	return 0;
}

/* Borrows dir. */
int sig_trust_add_dir(struct sig_trust *t, const char *dir, char *why, size_t whylen)
{
	DIR *d = opendir(dir);
	char **names = NULL, path[4096], one[400];
	size_t n = 0;
	int err;

	if (!d)
		return say(why, whylen, errno_code(errno), "%s: cannot read the folder: %s", dir,
			   strerror(errno));
	err = pub_names(d, dirfd(d), &names, &n);
	if (err)
		say(why, whylen, err, "%s: cannot read the folder: %s", dir,
		    err == SQK_ENOMEM ? "out of memory" : strerror(errno));
	else if (!n)
		err = say(why, whylen, SQK_ENOENT, "%s: no public key (*.pub file) in the folder",
			  dir);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!err && (err = sig_trust_add_file(t, path, one, sizeof(one))))
			say(why, whylen, err, "%s: %s", path, one);
		free(names[i]);
	}
	free(names);
	closedir(d);
	return err;
}

bool sig_trust_has(const struct sig_trust *t, const uint8_t pub[SQK_SIG_PUB_SIZE])
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!memcmp(t->keys[i], pub, SQK_SIG_PUB_SIZE))
			return true;
	return false;
}

void sig_trust_free(struct sig_trust *t)
{
	if (!t)
		return;
	free(t->keys);
	memset(t, 0, sizeof(*t));
}
