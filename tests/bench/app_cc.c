/* SPDX-License-Identifier: BSD-2-Clause */
/* The C translation unit of the toolchain start of tests/bench/bench_app.sh (app_cc.sh): it
 * includes the C17 headers and most POSIX and Linux ones, so that the start reads a few hundred
 * headers from the image; main() prints results that depend on the code only. */
#include <assert.h>
#include <complex.h>
#include <ctype.h>
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <iso646.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <tgmath.h>
#include <threads.h>
#include <time.h>
#include <uchar.h>
#include <wchar.h>
#include <wctype.h>
#include <aio.h>
#include <arpa/inet.h>
#include <cpio.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fmtmsg.h>
#include <fnmatch.h>
#include <ftw.h>
#include <glob.h>
#include <grp.h>
#include <iconv.h>
#include <langinfo.h>
#include <libgen.h>
#include <monetary.h>
#include <mqueue.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nl_types.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <regex.h>
#include <sched.h>
#include <search.h>
#include <semaphore.h>
#include <spawn.h>
#include <strings.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <syslog.h>
#include <tar.h>
#include <termios.h>
#include <unistd.h>
#include <utime.h>
#include <utmpx.h>
#include <wordexp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <linux/fs.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

const char *cc_cpp_part(unsigned n); /* app_cc.cpp */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	int v[64];
	unsigned h = 2166136261u;
	regex_t re;
	regmatch_t m[2];
	char buf[64];
	struct tm tm = { 0 };
	time_t t = 1700000000;

	for (int i = 0; i < 64; i++)
		v[i] = (i * 7919) % 101;
	qsort(v, 64, sizeof(v[0]), cmp_int);
	for (int i = 0; i < 64; i++)
		h = (h ^ (unsigned)v[i]) * 16777619u;
	if (regcomp(&re, "([a-z]+)[0-9]+", REG_EXTENDED) || regexec(&re, "x:abc123", 2, m, 0))
		return 1;
	regfree(&re);
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	printf("c: fnv %08x, match %d-%d, %s, lgamma(10) %.6f, htonl %08x\n", h, (int)m[1].rm_so,
	       (int)m[1].rm_eo, buf, lgamma(10.0), (unsigned)htonl(0x01020304u));
	printf("%s\n", cc_cpp_part(12));
	return 0;
}
