# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# The second application of tests/bench/bench_app.sh (sourced by it, no side effects when
# sourced): a C and C++ toolchain start. The tree is a sysroot of Debian's gcc 12 and binutils:
# every file of the packages of CC_PKGS under /usr/bin, /usr/lib*, /usr/include (and /lib*,
# moved under usr/ as a merged /usr has them), with lib -> usr/lib and lib64 -> usr/lib64, the
# absolute symbolic links made relative.
# The start (cc_start) compiles tests/bench/app_cc.c (C17, POSIX and Linux headers) with
# MNT/usr/bin/gcc-12 and app_cc.cpp (the C++ standard library's headers) with g++-12, both
# --sysroot=MNT, links them with g++-12, runs the program and prints its output. The tools run
# with PATH=MNT/usr/bin and LD_LIBRARY_PATH=MNT/usr/lib/x86_64-linux-gnu: cc1, cc1plus,
# collect2, as, ld, the headers, crt files and libraries all come from MNT; cc_outside checks
# that with strace on a run (every file opened outside MNT, the work folder and the dynamic
# loader's own files is listed).

CC_PKGS="gcc-12 g++-12 cpp-12 gcc-12-base libgcc-12-dev libstdc++-12-dev binutils
	binutils-x86-64-linux-gnu libbinutils libctf0 libctf-nobfd0 libjansson4 libgprofng0 libc6
	libc6-dev libcrypt-dev libcrypt1 linux-libc-dev libstdc++6 libgcc-s1 libisl23 libmpc3
	libmpfr6 libgmp10 zlib1g libzstd1 libcc1-0"
CC_SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# cc_make_tree DIR LOG: the sysroot (see above); 1 when a tool is missing from it
cc_make_tree() {
	local d=$1 lst
	rm -rf "$d"; mkdir -p "$d/usr/lib" "$d/usr/lib64" || return 1
	ln -s usr/lib "$d/lib" && ln -s usr/lib64 "$d/lib64" || return 1
	lst=$(mktemp)
	# shellcheck disable=SC2086
	dpkg -L $CC_PKGS 2>>"$2" | grep -E '^/(usr/(bin|lib|lib64|libexec|include)|lib|lib64)/' |
		while read -r f; do [ -d "$f" ] && [ ! -L "$f" ] || echo "${f#/}"; done | sort -u >"$lst"
	tar -C / --no-recursion -cf - -T "$lst" 2>>"$2" |
		tar -C "$d" --transform 's,^lib/,usr/lib/,;s,^lib64/,usr/lib64/,' -xf - 2>>"$2"
	rm -f "$lst"
	# absolute links (libm.so's libmvec, lib64/ld-linux-x86-64.so.2) made relative: the kernel
	# would resolve them out of the mount
	find "$d" -lname '/*' | while read -r l; do
		t=$(readlink "$l" | sed 's,^/lib/,/usr/lib/,;s,^/lib64/,/usr/lib64/,')
		ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$d$t")" "$l"
	done
	ln -sf x86_64-linux-gnu-gcc-12 "$d/usr/bin/gcc-12"
	[ -x "$d/usr/bin/gcc-12" ] && [ -x "$d/usr/bin/g++-12" ] && [ -x "$d/usr/bin/as" ] &&
		[ -x "$d/usr/bin/ld" ] && [ -x "$d/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus" ] &&
		[ -e "$d/usr/include/stdio.h" ] && [ -e "$d/usr/include/c++/12/vector" ]
}

# cc_start MNT WORKDIR: the toolchain start from MNT; prints the program's output
cc_start() {
	local m=$1 w=$2 tmo=${TMO:-600}
	local -a env=(timeout -k 10 "$tmo" env -i PATH="$m/usr/bin"
		LD_LIBRARY_PATH="$m/usr/lib/x86_64-linux-gnu" LC_ALL=C TMPDIR="$w")
	(cd "$w" &&
		"${env[@]}" gcc-12 --sysroot="$m" -O1 -c "$CC_SRC_DIR/app_cc.c" -o c.o &&
		"${env[@]}" g++-12 --sysroot="$m" -O1 -std=c++20 -c "$CC_SRC_DIR/app_cc.cpp" -o cpp.o &&
		"${env[@]}" g++-12 --sysroot="$m" -o prog c.o cpp.o -lm &&
		timeout -k 10 "$tmo" env -i ./prog)
}

# cc_outside MNT WORKDIR: runs cc_start under strace; prints "outside N" and the first files
# opened or executed outside MNT and WORKDIR (the program's own run and the dynamic loader's
# files and bash's own start excepted), after the program's output. 1 when strace is missing
# or fails.
cc_outside() {
	local m=$1 w=$2 log
	command -v strace >/dev/null 2>&1 || return 1
	log=$w.strace
	env -i PATH=/usr/bin:/bin strace -f -qq -o "$log" -e status=successful \
		-e trace=openat,open,execve,stat,newfstatat,access bash -c \
		"$(declare -f cc_start); CC_SRC_DIR='$CC_SRC_DIR' TMO=${TMO:-600} cc_start '$m' '$w'" ||
		return 1
	# the program (./prog) is not the toolchain; the folders above MNT, WORKDIR and the
	# sources are looked up on the way
	awk -v m="$m" -v w="$w" -v s="$CC_SRC_DIR" '
		function under(f, d) { return f == d || index(f, d "/") == 1 || index(d "/", f "/") == 1 }
		/execve\("\.\/prog"/ { skip[$1] = 1 }
		skip[$1] { next }
		match($0, /"[^"]*"/) {
			f = substr($0, RSTART + 1, RLENGTH - 2)
			if (f !~ /^\// || under(f, m) || under(f, w) || under(f, s)) next
			if (f ~ /^\/(proc|dev|sys)\// || f == "/etc/ld.so.cache" || f == "/etc/ld.so.preload") next
			if (f ~ /^\/(usr\/)?lib(64)?\/(x86_64-linux-gnu\/)?/ &&
			    f ~ /\/(ld-linux-x86-64\.so\.2|libc\.so\.6|libtinfo\.so\.6)$/) next
			if (f ~ /^\/(usr\/)?bin\/(bash|env|timeout)$/) next
			if (f == "/" || f == "/etc/nsswitch.conf" || f == "/etc/passwd") next # bash
			print f
		}' "$log" | sort -u >"$log.out"
	echo "outside $(wc -l <"$log.out")"
	head -n 5 "$log.out"
	[ -n "${CC_KEEP_STRACE:-}" ] || rm -f "$log" "$log.out"
}
