/* SPDX-License-Identifier: BSD-2-Clause */
/* Ed25519 signatures of an image (not installed): the key files, the signature block's codec,
 * signing and checking, the set of trusted keys. Written by `sqk sign` and `sqk mkimage --sign`,
 * read by the commands that trust keys. OpenSSL's libcrypto does the cryptography.
 *
 * File layout: [0, E) is the image with its integrity data (E = integ_end of the trailer, a
 * multiple of 4096), an optional appended dm-verity area may follow, and the signature block
 * [S, F) ends the file (F its size). The block (all integers little-endian):
 *   entries from S, each:
 *     0    u32     entry length (header + comment, padded to a multiple of 8)
 *     4    u32     algorithm (1 = Ed25519)
 *     8    u8[32]  public key (raw Ed25519)
 *     40   u64     time (seconds since the epoch, when it was signed)
 *     48   u32     comment length (0 .. 1024; UTF-8 without control characters)
 *     52   u32     zero
 *     56   u8[64]  signature
 *     120  comment bytes, then zero bytes to the entry length
 *   zero bytes up to the footer (fewer than 4096: the block is as short as its entries allow)
 *   footer, the last 64 bytes of the block and of the file:
 *     0    u8[8]   magic "SQKSIGS1"
 *     8    u32     version (1)
 *     12   u32     count of entries (1 .. 64)
 *     16   u64     block length L (a multiple of 4096; S = F - L)
 *     24   u64     image end E (a multiple of 4096, 4096 <= E <= S)
 *     32   u8[24]  zero
 *     56   u8[8]   magic "SQKSIGS1"
 * The signed message (Ed25519, pure): "SQKSIG1\0" || public key || root digest of the
 * integrity trailer || u64 E || u64 time || u32 comment length || comment bytes.
 * One entry per public key. A key's id is the first 8 bytes of SHA-256(raw public key), shown
 * as 16 lower-case hex digits. Keys are PEM files: the private key PKCS#8 ("PRIVATE KEY", as
 * `openssl genpkey -algorithm ed25519` writes it), the public key SubjectPublicKeyInfo ("PUBLIC
 * KEY", as `openssl pkey -pubout` writes it). */
#ifndef SQK_SIGN_H
#define SQK_SIGN_H

#include <openssl/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sqk/io.h"

#define SQK_SIG_MAGIC "SQKSIGS1"
#define SQK_SIG_VERSION 1u
#define SQK_SIG_ED25519 1u
#define SQK_SIG_PUB_SIZE 32u
#define SQK_SIG_SIG_SIZE 64u
#define SQK_SIG_ID_SIZE 8u
#define SQK_SIG_ROOT_SIZE 32u
#define SQK_SIG_HEADER_SIZE 120u    /* an entry before its comment */
#define SQK_SIG_COMMENT_MAX 1024u
#define SQK_SIG_MAX_ENTRIES 64u
#define SQK_SIG_FOOTER_SIZE 64u
#define SQK_SIG_ALIGN 4096u
/* The longest block: 64 entries with the longest comments, and the footer, in 4 KiB. */
#define SQK_SIG_BLOCK_MAX                                                                   \
	(((SQK_SIG_MAX_ENTRIES * (SQK_SIG_HEADER_SIZE + SQK_SIG_COMMENT_MAX) +              \
	   SQK_SIG_FOOTER_SIZE + SQK_SIG_ALIGN - 1) / SQK_SIG_ALIGN) * SQK_SIG_ALIGN)

/* One signature. comment is owned (NUL-terminated, comment_len bytes before the NUL; NULL when
 * comment_len is 0). */
struct sig_entry {
	uint32_t algorithm;                 /* SQK_SIG_ED25519 */
	uint8_t pub[SQK_SIG_PUB_SIZE];      /* raw public key */
	uint64_t time;                      /* seconds since the epoch */
	char *comment;
	uint32_t comment_len;
	uint8_t sig[SQK_SIG_SIG_SIZE];
};

/* A signature block: n entries e[0..n) (owned, with their comments) over the image [0,
 * image_end). Zero it to start empty; free with sig_block_free. */
struct sig_block {
	struct sig_entry *e;
	size_t n;
	uint64_t image_end;
};

/* ---- key ids ---- */

/* The id of a public key: the first 8 bytes of SHA-256(pub). Fills the caller's id. */
void sig_key_id(const uint8_t pub[SQK_SIG_PUB_SIZE], uint8_t id[SQK_SIG_ID_SIZE]);

/* The id as 16 lower-case hex digits and a NUL into the caller's out. */
void sig_key_id_hex(const uint8_t pub[SQK_SIG_PUB_SIZE], char out[2 * SQK_SIG_ID_SIZE + 1]);

/* Parses a key id of exactly 16 hex digits into id: 0, or SQK_EINVAL. Borrows hex. */
int sig_parse_key_id(const char *hex, uint8_t id[SQK_SIG_ID_SIZE]);

/* ---- key files ----
 * The loaders return 0, or an SQK_E* code with a one-line reason in why (whylen bytes, the
 * caller's buffer) that does not name the file (the caller puts the path in front): SQK_ENOENT
 * (no such file), SQK_EACCESS (not permitted), SQK_EIO (a read failed), SQK_EINVAL (the file
 * is not an acceptable key: its mode, its type, its format), SQK_ENOMEM. */

/* Loads the Ed25519 private key of the PEM file path (PKCS#8, unencrypted) into *out (caller
 * frees with EVP_PKEY_free). Refuses a file that is not regular, one that group or others may
 * read or write (mode & 077: the reason names the mode and says chmod 600), an encrypted key,
 * a key of another type (named: RSA, EC...), a public key, a file that is not PEM. */
int sig_load_private(const char *path, EVP_PKEY **out, char *why, size_t whylen);

/* Loads the Ed25519 public key of the PEM file path (SubjectPublicKeyInfo, "PUBLIC KEY") into
 * the caller's pub (raw). Refuses a key of another type (named), a private key or a
 * certificate given by mistake (said so), a file that is not PEM. */
int sig_load_public(const char *path, uint8_t pub[SQK_SIG_PUB_SIZE], char *why, size_t whylen);

/* The raw public key of an Ed25519 key (borrowed) into the caller's pub: 0, or SQK_EINVAL. */
int sig_public_of(EVP_PKEY *key, uint8_t pub[SQK_SIG_PUB_SIZE]);

/* Makes a new Ed25519 key: path gets the private key (PKCS#8 PEM, mode 0600) and path.pub the
 * public key (SPKI PEM, mode 0644), each written under a temporary name in its folder, synced
 * and renamed. Without force, refuses (SQK_EINVAL) when path or path.pub exists; with force
 * replaces them. Fills the caller's pub (may be NULL). On failure why (here naming the file)
 * says what failed and neither file was created. Borrows path. */
int sig_keygen(const char *path, bool force, uint8_t pub[SQK_SIG_PUB_SIZE], char *why,
	       size_t whylen);

/* ---- signing and checking ---- */

/* Whether comment[0..len) is an acceptable signed comment: at most SQK_SIG_COMMENT_MAX bytes
 * of valid UTF-8 without control characters (C0, DEL, C1). 0 or SQK_EINVAL. Borrows comment. */
int sig_comment_check(const char *comment, size_t len);

/* Signs the image whose integrity root digest is root and whose end is image_end, at time,
 * with comment (NUL-terminated, NULL = none), with key (borrowed, Ed25519). Fills the caller's
 * out (its comment owned: sig_entry_clear). SQK_EINVAL for a bad comment or key, SQK_ENOMEM
 * when OpenSSL fails. */
int sig_sign(EVP_PKEY *key, const uint8_t root[SQK_SIG_ROOT_SIZE], uint64_t image_end,
	     uint64_t time, const char *comment, struct sig_entry *out);

/* Checks e's signature over root and image_end: 0, SQK_ECORRUPT (not valid, or an algorithm
 * other than Ed25519), SQK_ENOMEM. Borrows everything. */
int sig_verify(const struct sig_entry *e, const uint8_t root[SQK_SIG_ROOT_SIZE],
	       uint64_t image_end);

/* Frees e's comment and zeroes e; NULL-safe. */
void sig_entry_clear(struct sig_entry *e);

/* ---- the block ---- */

/* Reads the footer tail (the last 64 bytes of a file of file_size bytes), distrusting every
 * field: fills *start (S), *len (L), *image_end (E) and *count. SQK_ENOENT when neither magic
 * is there (no block); SQK_ECORRUPT when one magic is (a damaged block, never "no block") or
 * any field is wrong: version, count 1..64, L a multiple of 4096 within what count entries can
 * take, L <= file_size, file_size and E multiples of 4096, 4096 <= E <= S, the zero bytes. */
int sig_block_footer(const uint8_t tail[SQK_SIG_FOOTER_SIZE], uint64_t file_size,
		     uint64_t *start, uint64_t *len, uint64_t *image_end, uint32_t *count);

/* Decodes the whole block blk[0..len) (borrowed) that starts at file offset start: the footer
 * as above (with file size start + len), then every entry: its length (exactly the header and
 * the comment padded to 8, inside the block), algorithm, zero fields and padding, the comment
 * (sig_comment_check), no key twice, exactly count entries, and zero bytes up to the footer,
 * fewer than 4096 of them. Fills out (sig_block_free, also after a failure). 0, SQK_ENOENT,
 * SQK_ECORRUPT, SQK_ENOMEM. */
int sig_block_decode(const uint8_t *blk, size_t len, uint64_t start, struct sig_block *out);

/* The length of b's encoded block (a multiple of 4096). Borrows b. */
uint64_t sig_block_len(const struct sig_block *b);

/* Encodes b (borrowed: 1..64 entries, each with a good comment, image_end a multiple of 4096)
 * into a new buffer *out of *len bytes (caller frees). SQK_EINVAL for a block it would not
 * decode, SQK_ENOMEM. */
int sig_block_encode(const struct sig_block *b, uint8_t **out, size_t *len);

/* Puts a copy of e (borrowed) into b: in place of the entry of the same public key, else
 * appended. SQK_ETOOBIG when b holds 64 other keys already, SQK_ENOMEM. */
int sig_block_set(struct sig_block *b, const struct sig_entry *e);

/* Removes the entry whose key id is id; returns whether there was one. */
bool sig_block_remove(struct sig_block *b, const uint8_t id[SQK_SIG_ID_SIZE]);

/* Frees what b owns and zeroes it; NULL-safe. */
void sig_block_free(struct sig_block *b);

/* Reads and decodes the signature block at the end of the file behind io (borrowed; file_size
 * bytes): fills out (sig_block_free, also after a failure) and *start (S). Errors as
 * sig_block_footer and sig_block_decode, or an I/O error. */
int sig_block_read(struct sqk_io *io, uint64_t file_size, struct sig_block *out,
		   uint64_t *start);

/* ---- trusted keys ---- */

/* A set of trusted public keys. Zero it to start empty; free with sig_trust_free. */
struct sig_trust {
	uint8_t (*keys)[SQK_SIG_PUB_SIZE]; /* n raw public keys (owned), no key twice */
	size_t n, cap;
};

/* Adds the public key pub (borrowed) to t (once). 0 or SQK_ENOMEM. */
int sig_trust_add(struct sig_trust *t, const uint8_t pub[SQK_SIG_PUB_SIZE]);

/* Adds the public key of the PEM file path (sig_load_public); errors and why as there (why
 * does not name the file). */
int sig_trust_add_file(struct sig_trust *t, const char *path, char *why, size_t whylen);

/* Adds the key of every regular file named *.pub in the folder dir, in name order. A folder
 * that cannot be read or holds no such file, and a bad key file, are errors (SQK_EINVAL,
 * SQK_ENOENT, ...) whose why names the folder or that file; t keeps the keys added before. */
int sig_trust_add_dir(struct sig_trust *t, const char *dir, char *why, size_t whylen);

/* Whether pub is in t (NULL: an empty set). */
bool sig_trust_has(const struct sig_trust *t, const uint8_t pub[SQK_SIG_PUB_SIZE]);

/* Frees what t owns and zeroes it; NULL-safe. */
void sig_trust_free(struct sig_trust *t);

/* What sig_check found of one entry. */
struct sig_status {
	bool trusted; /* its key is in the trust set */
	bool valid;   /* its signature verifies over the root digest and image end */
};

/* What sig_check found of the block. */
struct sig_summary {
	bool ok;             /* at least one valid signature by a trusted key */
	size_t valid;        /* entries whose signature verifies */
	size_t trusted_valid; /* ... by a trusted key */
	uint64_t newest;     /* the newest time of a valid trusted signature (0: none) */
	size_t newest_index; /* its entry (meaningful when ok) */
};

/* Checks every entry of b against root and image_end (E as the reader found it) and t (NULL: no
 * key trusted): st[i] (st NULL: not filled; else b->n elements, the caller's) and *sum. 0, or
 * SQK_ENOMEM when OpenSSL fails (nothing is then trusted). Borrows everything. */
int sig_check(const struct sig_block *b, const struct sig_trust *t,
	      const uint8_t root[SQK_SIG_ROOT_SIZE], uint64_t image_end, struct sig_status *st,
	      struct sig_summary *sum);

#endif
