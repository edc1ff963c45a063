/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for common/io.c: the memory backend (read-only view and growable buffer), the fd
 * backend with a base offset on a temporary file, the fault-injecting double and the capped
 * sink; and for common/outfile.c: the temporary-then-rename file and the judge of what an
 * output path names. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "sqk/error.h"
#include "sqk/io.h"
#include "cli/lib/outfile.h"
#include "testutil.h"

/* A temporary file, already unlinked: it vanishes with its fd. */
static int temp_fd(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/sqk-test-io-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	return fd;
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

START_TEST(test_mem_view_read)
{
	static const uint8_t data[] = "0123456789";
	struct sqk_io *io;
	uint8_t buf[8];
	uint64_t size = 0;
	size_t len;

	ck_assert_int_eq(sqk_io_mem_create(data, 10, &io), 0);
	ck_assert_int_eq(sqk_io_read_at(io, 3, buf, 4), 0);
	ck_assert_mem_eq(buf, "3456", 4);
	ck_assert_int_eq(sqk_io_read_at(io, 6, buf, 4), 0);
	ck_assert_mem_eq(buf, "6789", 4);
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(sqk_io_read_at(io, 7, buf, 4), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_read_at(io, 11, buf, 1), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_read_at(io, UINT64_MAX, buf, 2), SQK_EBOUNDS);
	ck_assert_mem_eq(buf, "xxxxxxxx", 8);
	ck_assert_int_eq(sqk_io_write_at(io, 0, "ab", 2), SQK_EINVAL);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 10);
	ck_assert_ptr_eq(sqk_io_mem_data(io, &len), data);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(data, "0123456789", 10);
	ck_assert_int_eq(sqk_io_sync(io), 0);
	sqk_io_destroy(io);
	sqk_io_destroy(NULL);
}
END_TEST

START_TEST(test_mem_growable)
{
	struct sqk_io *io;
	const uint8_t *view;
	uint8_t buf[16];
	uint64_t size = 1;
	size_t len = 1;

	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &io), 0);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 0);
	sqk_io_mem_data(io, &len);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 1), SQK_EBOUNDS);

	ck_assert_int_eq(sqk_io_write_at(io, 0, "hello", 5), 0);
	ck_assert_int_eq(sqk_io_write_at(io, 10, "world", 5), 0); /* leaves a hole */
	ck_assert_int_eq(sqk_io_write_at(io, 1, "E", 1), 0);      /* overwrite in place */
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 15);
	view = sqk_io_mem_data(io, &len);
	ck_assert_uint_eq(len, 15);
	ck_assert_mem_eq(view, "hEllo\0\0\0\0\0world", 15);
	ck_assert_int_eq(sqk_io_read_at(io, 8, buf, 7), 0);
	ck_assert_mem_eq(buf, "\0\0world", 7);
	ck_assert_int_eq(sqk_io_read_at(io, 8, buf, 8), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_write_at(io, UINT64_MAX - 1, "ab", 2), SQK_EOVERFLOW);
	sqk_io_destroy(io);
}
END_TEST

/* A write past the end leaves a hole that reads as zeros, even in recycled heap memory. */
START_TEST(test_mem_hole_zeroed)
{
	enum { CAP = 65536, AT = 60000 };
	uint8_t *junk = malloc(CAP), *zeros = calloc(1, AT);
	struct sqk_io *io;
	const uint8_t *view;
	size_t len;

	ck_assert_ptr_nonnull(junk);
	ck_assert_ptr_nonnull(zeros);
	memset(junk, 0xFF, CAP); /* glibc hands this chunk back for the next same-size request */
	free(junk);
	ck_assert_int_eq(sqk_io_mem_create(NULL, CAP, &io), 0);
	ck_assert_int_eq(sqk_io_write_at(io, AT, "end", 3), 0);
	view = sqk_io_mem_data(io, &len);
	ck_assert_uint_eq(len, AT + 3);
	ck_assert_mem_eq(view, zeros, AT);
	ck_assert_mem_eq(view + AT, "end", 3);
	sqk_io_destroy(io);
	free(zeros);
}
END_TEST

/* Many appends through several reallocations keep every byte. */
START_TEST(test_mem_growable_large)
{
	enum { CHUNK = 4099, N = 600 };
	static uint8_t chunk[CHUNK];
	struct sqk_io *io;
	const uint8_t *view;
	size_t len, i;

	ck_assert_int_eq(sqk_io_mem_create(NULL, 16, &io), 0);
	for (i = 0; i < N; i++) {
		fill_pattern(chunk, CHUNK, (unsigned)i);
		ck_assert_int_eq(sqk_io_write_at(io, (uint64_t)i * CHUNK, chunk, CHUNK), 0);
	}
	view = sqk_io_mem_data(io, &len);
	ck_assert_uint_eq(len, (size_t)CHUNK * N);
	for (i = 0; i < N; i += 97) {
		fill_pattern(chunk, CHUNK, (unsigned)i);
		ck_assert_mem_eq(view + i * CHUNK, chunk, CHUNK);
	}
	sqk_io_destroy(io);
}
END_TEST

START_TEST(test_fd_base_offset)
{
	enum { BASE = 1000 };
	uint8_t data[5000], buf[5000], raw[16];
	struct sqk_io *io;
	uint64_t size = 0;
	size_t len = 7;
	int fd = temp_fd();

	fill_pattern(data, sizeof(data), 5);
	ck_assert_int_eq(sqk_io_fd_create(fd, BASE, false, &io), 0);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 0); /* file shorter than the base: never negative */
	ck_assert_int_eq(sqk_io_write_at(io, 0, data, sizeof(data)), 0);
	ck_assert_int_eq(sqk_io_write_at(io, 2, "XY", 2), 0);
	ck_assert_int_eq(sqk_io_sync(io), 0);

	/* the bytes really sit at BASE in the file */
	ck_assert_int_eq(pread(fd, raw, 4, BASE), 4);
	ck_assert_uint_eq(raw[0], data[0]);
	ck_assert_uint_eq(raw[1], data[1]);
	ck_assert_mem_eq(raw + 2, "XY", 2);
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), BASE + (off_t)sizeof(data));

	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, sizeof(data));
	ck_assert_int_eq(sqk_io_read_at(io, 100, buf, 4900), 0);
	ck_assert_mem_eq(buf, data + 100, 4900);
	ck_assert_int_eq(sqk_io_read_at(io, 4999, buf, 1), 0);
	ck_assert_uint_eq(buf[0], data[4999]);
	ck_assert_int_eq(sqk_io_read_at(io, 4999, buf, 2), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_read_at(io, 6000, buf, 1), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_read_at(io, UINT64_MAX - 10, buf, 1), SQK_EBOUNDS);
	ck_assert_int_eq(sqk_io_write_at(io, UINT64_MAX - 10, buf, 1), SQK_EOVERFLOW);
	ck_assert_ptr_null(sqk_io_mem_data(io, &len));
	ck_assert_uint_eq(len, 0);
	sqk_io_destroy(io);

	ck_assert_int_ne(fcntl(fd, F_GETFD), -1); /* borrowed: still open */
	close(fd);
}
END_TEST

START_TEST(test_fd_own_closes)
{
	struct sqk_io *io;
	int fd = temp_fd();

	ck_assert_int_eq(sqk_io_fd_create(fd, 0, true, &io), 0);
	ck_assert_int_eq(sqk_io_write_at(io, 3, "abc", 3), 0);
	sqk_io_destroy(io);
	errno = 0;
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(sqk_io_fd_create(-1, 0, false, &io), SQK_EINVAL);
	ck_assert_ptr_null(io);
}
END_TEST

/* errno from the system calls arrives as an SQK_E* code. */
START_TEST(test_fd_errors)
{
	struct sqk_io *io;
	uint8_t buf[4];
	int fd = temp_fd();
	int rdonly, wronly;
	char path[64];

	ck_assert_int_eq(write(fd, "abcd", 4), 4);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rdonly = open(path, O_RDONLY);
	wronly = open(path, O_WRONLY);
	ck_assert_int_ge(rdonly, 0);
	ck_assert_int_ge(wronly, 0);

	ck_assert_int_eq(sqk_io_fd_create(rdonly, 0, true, &io), 0);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 4), 0);
	ck_assert_mem_eq(buf, "abcd", 4);
	ck_assert_int_eq(sqk_io_write_at(io, 0, "x", 1), SQK_EIO); /* EBADF */
	sqk_io_destroy(io);

	ck_assert_int_eq(sqk_io_fd_create(wronly, 0, true, &io), 0);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 4), SQK_EIO);
	sqk_io_destroy(io);
	close(fd);
}
END_TEST

/* Writes n numbered 100-byte records, stopping at the first error like an image writer. */
static int write_records(struct sqk_io *io, unsigned n)
{
	uint8_t rec[100];
	unsigned i;
	int rc;

	for (i = 0; i < n; i++) {
		memset(rec, 'a' + (int)i, sizeof(rec));
		rc = sqk_io_write_at(io, (uint64_t)i * sizeof(rec), rec, sizeof(rec));
		if (rc)
			return rc;
	}
	return 0;
}

START_TEST(test_fault_write_enospc_third)
{
	struct sqk_io *mem, *io;
	const uint8_t *view;
	size_t len;

	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_int_eq(sqk_io_fault_create(mem, &io), 0);
	sqk_io_fault_arm(io, SQK_FAULT_WRITE, 2, SQK_ENOSPC);
	ck_assert_int_eq(write_records(io, 5), SQK_ENOSPC);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_WRITE), 3);
	view = sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(len, 200); /* the first two landed, the third never reached memory */
	ck_assert_uint_eq(view[0], 'a');
	ck_assert_uint_eq(view[199], 'b');
	/* armed faults stay: every further write fails */
	ck_assert_int_eq(sqk_io_write_at(io, 0, "z", 1), SQK_ENOSPC);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_WRITE), 4);
	ck_assert_uint_eq(sqk_io_mem_data(mem, &len)[0], 'a');
	/* other operations are unaffected */
	ck_assert_int_eq(sqk_io_sync(io), 0);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_SYNC), 1);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_READ), 0);
	sqk_io_destroy(io);
	sqk_io_destroy(mem);
}
END_TEST

START_TEST(test_fault_read)
{
	static const uint8_t data[] = "abcdefghij";
	struct sqk_io *mem, *io;
	uint8_t buf[10];
	uint64_t size = 0;

	ck_assert_int_eq(sqk_io_mem_create(data, 10, &mem), 0);
	ck_assert_int_eq(sqk_io_fault_create(mem, &io), 0);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 10), 0); /* unarmed: pass-through */
	ck_assert_mem_eq(buf, data, 10);
	ck_assert_int_eq(sqk_io_read_at(io, 5, buf, 10), SQK_EBOUNDS); /* inner errors too */
	sqk_io_fault_arm(io, SQK_FAULT_READ, 0, SQK_EIO);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 4), SQK_EIO);
	ck_assert_int_eq(buf[0], 0);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_READ), 3);

	sqk_io_fault_arm(io, SQK_FAULT_SIZE, 1, SQK_EACCESS);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 10);
	ck_assert_int_eq(sqk_io_get_size(io, &size), SQK_EACCESS);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_SIZE), 2);

	sqk_io_fault_arm(io, SQK_FAULT_SYNC, 0, SQK_EIO);
	ck_assert_int_eq(sqk_io_sync(io), SQK_EIO);
	ck_assert_uint_eq(sqk_io_fault_calls(io, SQK_FAULT_SYNC), 1);
	sqk_io_destroy(io);
	sqk_io_destroy(mem);
}
END_TEST

/* err 0 on reads: the call succeeds but one byte of the result is inverted. */
START_TEST(test_fault_read_flip)
{
	static const uint8_t data[] = "abcdefghij";
	struct sqk_io *mem, *io;
	uint8_t buf[10];

	ck_assert_int_eq(sqk_io_mem_create(data, 10, &mem), 0);
	ck_assert_int_eq(sqk_io_fault_create(mem, &io), 0);
	sqk_io_fault_arm(io, SQK_FAULT_READ, 1, 0);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 10), 0);
	ck_assert_mem_eq(buf, data, 10);
	ck_assert_int_eq(sqk_io_read_at(io, 0, buf, 10), 0);
	ck_assert_mem_eq(buf, data, 5);
	ck_assert_uint_eq(buf[5], (uint8_t)~'f');
	ck_assert_mem_eq(buf + 6, data + 6, 4);
	ck_assert_mem_eq(data, "abcdefghij", 10); /* the source is untouched */
	sqk_io_destroy(io);
	sqk_io_destroy(mem);
}
END_TEST

/* The double arms and counts only itself; other backends ignore it. */
START_TEST(test_fault_on_other_backend)
{
	struct sqk_io *mem;
	uint8_t b;

	ck_assert_int_eq(sqk_io_mem_create("x", 1, &mem), 0);
	sqk_io_fault_arm(mem, SQK_FAULT_READ, 0, SQK_EIO);
	ck_assert_int_eq(sqk_io_read_at(mem, 0, &b, 1), 0);
	ck_assert_uint_eq(b, 'x');
	ck_assert_uint_eq(sqk_io_fault_calls(mem, SQK_FAULT_READ), 0);
	sqk_io_destroy(mem);
}
END_TEST

static int entries_in(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	ck_assert_ptr_nonnull(d);
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* The temporary-then-rename output file: nothing visible before the commit, nothing left after
 * an abort, an older file replaced whole, the umask honoured; a missing directory is an error. */
START_TEST(test_outfile)
{
	char dir[] = "/tmp/sqk-outfile-XXXXXX", path[64], bad[96], buf[32];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.bin", dir);
	struct outfile o;
	ck_assert_int_eq(outfile_open(&o, path, ".t"), 0);
	ck_assert_int_eq(write(o.fd, "lost", 4), 4);
	ck_assert_int_eq(access(path, F_OK), -1);
	outfile_abort(&o);
	ck_assert_int_eq(entries_in(dir), 0);

	FILE *f = fopen(path, "w");
	fputs("old", f);
	fclose(f);
	mode_t um = umask(027);
	ck_assert_int_eq(outfile_open(&o, path, ".t"), 0);
	umask(um);
	ck_assert_int_eq(write(o.fd, "new content", 11), 11);
	ck_assert_int_eq(entries_in(dir), 1); /* the old file only: the new one has no name */
	ck_assert_int_eq(outfile_commit(&o, path), 0);
	outfile_abort(&o); /* after a commit: nothing to do */
	ck_assert_int_eq(entries_in(dir), 1);
	f = fopen(path, "r");
	ck_assert_uint_eq(fread(buf, 1, sizeof(buf), f), 11);
	fclose(f);
	ck_assert_mem_eq(buf, "new content", 11);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0640);

	snprintf(bad, sizeof(bad), "%s/missing/out.bin", dir);
	errno = 0;
	ck_assert_int_eq(outfile_open(&o, bad, ".t"), -1);
	ck_assert_int_eq(errno, ENOENT);
	outfile_abort(&o);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* The capped sink: writes that fit go through; the first that does not is dropped with every
 * later one (a superblock at offset 0 included), reported done; the overflow is the furthest
 * end reached. */
START_TEST(test_capped_sink)
{
	struct sqk_io *mem, *cap;
	uint8_t a[64], b[64];
	size_t len;

	fill_pattern(a, sizeof(a), 1);
	fill_pattern(b, sizeof(b), 2);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_int_eq(sqk_io_capped_create(mem, 100, &cap), 0);
	ck_assert_int_eq(sqk_io_write_at(cap, 0, a, 64), 0);
	ck_assert_int_eq(sqk_io_write_at(cap, 64, a, 36), 0); /* ends exactly at the capacity */
	ck_assert_uint_eq(sqk_io_capped_overflow(cap), 0);
	ck_assert_int_eq(sqk_io_write_at(cap, 100, b, 1), 0);
	ck_assert_uint_eq(sqk_io_capped_overflow(cap), 101);
	ck_assert_int_eq(sqk_io_write_at(cap, 0, b, 16), 0);  /* fits, but after the overflow */
	ck_assert_int_eq(sqk_io_write_at(cap, 101, b, 64), 0);
	ck_assert_uint_eq(sqk_io_capped_overflow(cap), 165);
	const uint8_t *d = sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(len, 100);
	ck_assert_mem_eq(d, a, 64);
	ck_assert_mem_eq(d + 64, a, 36);
	ck_assert_int_eq(sqk_io_sync(cap), 0);
	ck_assert_uint_eq(sqk_io_capped_overflow(mem), 0); /* not a capped sink */
	sqk_io_destroy(cap); /* destroys mem too */
	ck_assert_int_eq(sqk_io_capped_create(NULL, 1, &cap), SQK_EINVAL);
	ck_assert_ptr_null(cap);
}
END_TEST

static void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static const struct outfile_kind img_kind = {
	.what = "a SquashFS image", .ours = outfile_is_squashfs, .devices = true,
};
static const struct outfile_kind nodev_kind = {
	.what = "a SquashFS image", .ours = outfile_is_squashfs, .devices = false,
};

/* Judges path; checks the verdict, the path written and, for a refusal, that why holds want. */
static void expect_verdict(const char *path, const struct outfile_kind *k, bool force,
			   enum outfile_verdict v, const char *where, const char *want)
{
	struct outfile_target t;
	ck_assert_int_eq(outfile_judge(path, k, force, &t), 0);
	ck_assert_msg(t.verdict == v, "%s: verdict %d, expected %d (%s)", path, t.verdict, v,
		      t.why);
	if (where)
		ck_assert_str_eq(t.path, where);
	if (want)
		ck_assert_msg(strstr(t.why, want), "%s: why '%s' lacks '%s'", path, t.why, want);
	outfile_target_free(&t);
}

/* The recognisers: the SquashFS magic; ustar at 257 (POSIX and GNU), gzip, xz, zstd heads. */
START_TEST(test_outfile_kinds)
{
	uint8_t h[SQK_OUTFILE_HEAD] = { 0 };
	ck_assert(outfile_is_squashfs((const uint8_t *)"hsqs", 4));
	ck_assert(!outfile_is_squashfs((const uint8_t *)"hsq", 3));
	ck_assert(!outfile_is_squashfs((const uint8_t *)"sqsh", 4)); /* big-endian 3.x */
	ck_assert(!outfile_is_tar(h, sizeof(h)));                   /* zeros */
	memcpy(h + 257, "ustar\0" "00", 8);
	ck_assert(outfile_is_tar(h, sizeof(h)));
	ck_assert(!outfile_is_tar(h, 261));                         /* cut short */
	memcpy(h + 257, "ustar  \0", 8);
	ck_assert(outfile_is_tar(h, sizeof(h)));
	ck_assert(outfile_is_tar((const uint8_t *)"\x1f\x8b\x08", 3));
	ck_assert(outfile_is_tar((const uint8_t *)"\xfd" "7zXZ\0", 6));
	ck_assert(outfile_is_tar((const uint8_t *)"\x28\xb5\x2f\xfd", 4));
	ck_assert(!outfile_is_tar((const uint8_t *)"BZh91AY", 7)); /* not what sqk tar writes */
	ck_assert(!outfile_is_tar((const uint8_t *)"notes\n", 6));
}
END_TEST

/* The judge, by what the path names: nothing (new), an empty file or an image (replaced), a
 * file of another kind (refused, also hard-linked, unless forced), a directory, a FIFO, a socket,
 * character and block device nodes (one that cannot be read refused unless forced); symlinks
 * followed to their end (relative ones from their own directory), a dangling one and a loop of
 * them refused; a name ending in '/' refused. */
START_TEST(test_outfile_judge)
{
	char dir[] = "/tmp/sqk-judge-XXXXXX", p[40][128];
	int n = 0;
	ck_assert_ptr_nonnull(mkdtemp(dir));
#define P(name) (snprintf(p[n], sizeof(p[n]), "%s/%s", dir, name), p[n++])
	const char *missing = P("missing.sqsh"), *empty = P("empty"), *img = P("old.sqsh");
	const char *txt = P("notes.txt"), *txt2 = P("notes-link.txt"), *sub = P("sub");
	const char *fifo = P("fifo"), *sock = P("sock"), *chr = P("full"), *blk = P("loop");
	const char *l_img = P("l-img"), *l_txt = P("sub/l-txt"), *l_dang = P("sub/l-dang");
	const char *dang_end = P("sub/new.sqsh"), *l_chain = P("l-chain"), *l_dir = P("l-dir");
	const char *l_loop1 = P("loop1"), *l_loop2 = P("loop2"), *l_chr = P("l-full");
	const char *unreadable = P("unreadable");

	write_file(empty, "", 0);
	write_file(img, "hsqs\x01\x02", 6);
	write_file(txt, "my notes\n", 9);
	ck_assert_int_eq(link(txt, txt2), 0);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", sock);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	bool nodes = mknod(chr, S_IFCHR | 0644, makedev(1, 7)) == 0 &&
		     mknod(blk, S_IFBLK | 0644, makedev(240, 200)) == 0; /* no such device */
	ck_assert_int_eq(symlink("old.sqsh", l_img), 0);
	ck_assert_int_eq(symlink("../notes.txt", l_txt), 0);
	ck_assert_int_eq(symlink("new.sqsh", l_dang), 0);
	ck_assert_int_eq(symlink(l_img, l_chain), 0); /* absolute, to a relative one */
	ck_assert_int_eq(symlink("sub", l_dir), 0);
	ck_assert_int_eq(symlink("loop2", l_loop1), 0);
	ck_assert_int_eq(symlink("loop1", l_loop2), 0);
	ck_assert_int_eq(symlink("full", l_chr), 0);

	expect_verdict(missing, &img_kind, false, SQK_OUT_NEW, missing, NULL);
	expect_verdict(empty, &img_kind, false, SQK_OUT_REPLACE, empty, NULL);
	expect_verdict(img, &img_kind, false, SQK_OUT_REPLACE, img, NULL);
	char want[6000];
	snprintf(want, sizeof(want), "'%s' is a file (one of 2 hard links) that is not a SquashFS "
		 "image: not replaced (--force replaces it)", txt);
	expect_verdict(txt, &img_kind, false, SQK_OUT_REFUSED, NULL, want);
	expect_verdict(txt, &img_kind, true, SQK_OUT_FORCED, txt, NULL);
	snprintf(want, sizeof(want), "'%s' is a directory: not replaced", sub);
	expect_verdict(sub, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
	snprintf(want, sizeof(want), "'%s' is a FIFO: not replaced", fifo);
	expect_verdict(fifo, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
	snprintf(want, sizeof(want), "'%s' is a socket: not replaced", sock);
	expect_verdict(sock, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
	if (nodes) {
		snprintf(want, sizeof(want), "'%s' is a character device: not replaced", chr);
		expect_verdict(chr, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
		/* what it holds cannot be read: refused unless forced */
		expect_verdict(blk, &img_kind, false, SQK_OUT_REFUSED, NULL,
			       "cannot read the block device");
		expect_verdict(blk, &img_kind, true, SQK_OUT_DEVICE, blk, NULL);
		snprintf(want, sizeof(want), "'%s' is a block device: not replaced", blk);
		expect_verdict(blk, &nodev_kind, true, SQK_OUT_REFUSED, NULL, want);
		snprintf(want, sizeof(want), "'%s' (a symlink to '%s/full') is a character device",
			 l_chr, dir);
		expect_verdict(l_chr, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
	}
	snprintf(want, sizeof(want), "%s/old.sqsh", dir);
	expect_verdict(l_img, &img_kind, false, SQK_OUT_REPLACE, want, NULL);
	expect_verdict(l_chain, &img_kind, false, SQK_OUT_REPLACE, want, NULL);
	snprintf(want, sizeof(want), "'%s' (a symlink to '%s/sub/../notes.txt') is a file", l_txt,
		 dir);
	expect_verdict(l_txt, &img_kind, false, SQK_OUT_REFUSED, NULL, want);
	snprintf(want, sizeof(want),
		 "'%.120s' is a dangling symbolic link (to '%.120s'): not written "
		 "through",
		 l_dang, dang_end);
	expect_verdict(l_dang, &img_kind, true, SQK_OUT_REFUSED, NULL, want);
	snprintf(want, sizeof(want), "%.120s/", missing);
	expect_verdict(want, &img_kind, true, SQK_OUT_REFUSED, NULL, "names a directory");
	expect_verdict(l_dir, &img_kind, false, SQK_OUT_REFUSED, NULL, "is a directory");
	expect_verdict(l_loop1, &img_kind, true, SQK_OUT_REFUSED, NULL,
		       "Too many levels of symbolic links");
	if (geteuid() != 0) { /* root reads anything */
		write_file(unreadable, "secret", 6);
		ck_assert_int_eq(chmod(unreadable, 0), 0);
		expect_verdict(unreadable, &img_kind, false, SQK_OUT_REFUSED, NULL,
			       "Permission denied");
		expect_verdict(unreadable, &img_kind, true, SQK_OUT_FORCED, unreadable, NULL);
	}
	close(s);
	for (int i = n - 1; i >= 0; i--)
		ck_assert(remove(p[i]) == 0 || errno == ENOENT);
	ck_assert_int_eq(rmdir(dir), 0);
#undef P
}
END_TEST

/* outfile_create: a refusal creates nothing and says why (errno 0); forced, a hard-linked
 * file is replaced under its name while its other name keeps the old content; through a
 * symlink, the file it points at is replaced and the symlink stays. */
START_TEST(test_outfile_create)
{
	char dir[] = "/tmp/sqk-create-XXXXXX", txt[64], txt2[64], img[64], lnk[64], msg[700];
	char buf[32];
	struct outfile o;
	struct stat st;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(txt, sizeof(txt), "%s/notes.txt", dir);
	snprintf(txt2, sizeof(txt2), "%s/other-name", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(lnk, sizeof(lnk), "%s/lnk", dir);
	write_file(txt, "notes", 5);
	ck_assert_int_eq(link(txt, txt2), 0);
	errno = EBADF;
	ck_assert_int_eq(outfile_create(&o, txt, &img_kind, false, ".t", msg, sizeof(msg)), -1);
	ck_assert_int_eq(errno, 0);
	ck_assert_ptr_nonnull(strstr(msg, "not a SquashFS image: not replaced"));
	ck_assert_int_eq(o.fd, -1);
	outfile_abort(&o);
	ck_assert_int_eq(entries_in(dir), 2);

	ck_assert_int_eq(outfile_create(&o, txt, &img_kind, true, ".t", msg, sizeof(msg)), 0);
	ck_assert(!o.device);
	ck_assert_int_eq(write(o.fd, "hsqs-new", 8), 8);
	ck_assert_int_eq(outfile_commit(&o, NULL), 0);
	outfile_abort(&o);
	FILE *f = fopen(txt, "r");
	ck_assert_uint_eq(fread(buf, 1, sizeof(buf), f), 8);
	fclose(f);
	ck_assert_mem_eq(buf, "hsqs-new", 8);
	f = fopen(txt2, "r");
	ck_assert_uint_eq(fread(buf, 1, sizeof(buf), f), 5);
	fclose(f);
	ck_assert_mem_eq(buf, "notes", 5);

	write_file(img, "hsqs-old", 8);
	ck_assert_int_eq(symlink("img", lnk), 0);
	ck_assert_int_eq(outfile_create(&o, lnk, &img_kind, false, ".t", msg, sizeof(msg)), 0);
	ck_assert_int_eq(write(o.fd, "hsqs-newer", 10), 10);
	ck_assert_int_eq(outfile_commit(&o, NULL), 0);
	ck_assert_int_eq(lstat(lnk, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert_int_eq(entries_in(dir), 4);

	/* judged new, made meanwhile: not replaced, nothing left */
	snprintf(buf, sizeof(buf), "new");
	char nw[80];
	snprintf(nw, sizeof(nw), "%s/%s", dir, buf);
	ck_assert_int_eq(outfile_create(&o, nw, &img_kind, false, ".t", msg, sizeof(msg)), 0);
	ck_assert_int_eq(write(o.fd, "hsqs", 4), 4);
	write_file(nw, "theirs", 6);
	errno = 0;
	ck_assert_int_eq(outfile_commit(&o, NULL), -1);
	ck_assert_int_eq(errno, EEXIST);
	outfile_abort(&o);
	ck_assert_int_eq(stat(nw, &st), 0);
	ck_assert_int_eq(st.st_size, 6);
	ck_assert_int_eq(entries_in(dir), 5);
	/* judged an old image, replaced by another file meanwhile: not replaced */
	ck_assert_int_eq(outfile_create(&o, img, &img_kind, false, ".t", msg, sizeof(msg)), 0);
	ck_assert_int_eq(unlink(img), 0);
	write_file(img, "hsqs-theirs", 11);
	ck_assert_int_eq(outfile_commit(&o, NULL), -1);
	ck_assert_int_eq(errno, EEXIST);
	outfile_abort(&o);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, 11);
	ck_assert_int_eq(entries_in(dir), 5);
	unlink(nw);
	unlink(lnk);
	unlink(img);
	unlink(txt);
	unlink(txt2);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *io_suite(void)
{
	Suite *s = suite_create("io");
	TCase *mem = tcase_create("mem");
	TCase *fd = tcase_create("fd");
	TCase *fault = tcase_create("fault");

	tcase_add_test(mem, test_mem_view_read);
	tcase_add_test(mem, test_mem_growable);
	tcase_add_test(mem, test_mem_hole_zeroed);
	tcase_add_test(mem, test_mem_growable_large);
	tcase_add_test(fd, test_fd_base_offset);
	tcase_add_test(fd, test_fd_own_closes);
	tcase_add_test(fd, test_fd_errors);
	tcase_add_test(fd, test_outfile);
	tcase_add_test(fd, test_outfile_kinds);
	tcase_add_test(fd, test_outfile_judge);
	tcase_add_test(fd, test_outfile_create);
	tcase_add_test(fault, test_fault_write_enospc_third);
	tcase_add_test(fault, test_fault_read);
	tcase_add_test(fault, test_fault_read_flip);
	tcase_add_test(fault, test_fault_on_other_backend);
	tcase_add_test(fault, test_capped_sink);
	suite_add_tcase(s, mem);
	suite_add_tcase(s, fd);
	suite_add_tcase(s, fault);
	return s;
}

int main(void)
{
	return test_run_suite(io_suite());
}
