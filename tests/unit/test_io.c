/* Unit tests for common/io.c: the memory backend (read-only view and growable buffer), the fd
 * backend with a base offset on a temporary file, and the fault-injecting double. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/io.h"
#include "common/outfile.h"
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
	struct sqk_outfile o;
	ck_assert_int_eq(sqk_outfile_open(&o, path, ".t"), 0);
	ck_assert_int_eq(write(o.fd, "lost", 4), 4);
	ck_assert_int_eq(access(path, F_OK), -1);
	sqk_outfile_abort(&o);
	ck_assert_int_eq(entries_in(dir), 0);

	FILE *f = fopen(path, "w");
	fputs("old", f);
	fclose(f);
	mode_t um = umask(027);
	ck_assert_int_eq(sqk_outfile_open(&o, path, ".t"), 0);
	umask(um);
	ck_assert_int_eq(write(o.fd, "new content", 11), 11);
	ck_assert_int_eq(entries_in(dir), 1); /* the old file only: the new one has no name */
	ck_assert_int_eq(sqk_outfile_commit(&o, path), 0);
	sqk_outfile_abort(&o); /* after a commit: nothing to do */
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
	ck_assert_int_eq(sqk_outfile_open(&o, bad, ".t"), -1);
	ck_assert_int_eq(errno, ENOENT);
	sqk_outfile_abort(&o);
	unlink(path);
	rmdir(dir);
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
	tcase_add_test(fault, test_fault_write_enospc_third);
	tcase_add_test(fault, test_fault_read);
	tcase_add_test(fault, test_fault_read_flip);
	tcase_add_test(fault, test_fault_on_other_backend);
	suite_add_tcase(s, mem);
	suite_add_tcase(s, fd);
	suite_add_tcase(s, fault);
	return s;
}

int main(void)
{
	return test_run_suite(io_suite());
}
