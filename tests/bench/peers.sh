# SPDX-License-Identifier: BSD-2-Clause
# tests/bench/peers.sh: which peer tools the benchmarks run. Sourced (POSIX sh and bash) by
# bench.sh, bench_read.sh, bench_remote.sh and bench_many.sh; the caller defines log().
#
#   peers_init BENCHDIR    once, before peers_pick (BENCHDIR: tests/bench, to find build.sh)
#   peers_pick NAME...     picks each tool: the newest release built into the anchors directory
#                          when it is there and runs, else the Debian one on PATH; says once
#                          when an anchor is missing. Known names: mksquashfs unsquashfs sqfscat
#                          sqfstar squashfuse squashfuse_ll mkfs.erofs fsck.erofs
#   peer NAME              its path (empty when there is none)
#   peer_label NAME        "NAME VERSION", e.g. "mksquashfs 4.7.5": every result line quotes it
#   peer_from NAME         anchor, debian or missing
#   peers_summary          one line per picked tool: label, where it comes from, path
#
# Environment:
#   BENCH_PEERS=auto       (default) the anchors where present, else Debian's, saying so
#   BENCH_PEERS=debian     always the PATH ones (Debian 12's), to quote both sets of figures
#   BENCH_PEERS=anchors    the anchors or a setup error (exit 2)
#   BENCH_ANCHORS=DIR      where the anchors are (default /opt/anchors; NAME's package under
#                          DIR/PACKAGE/bin)
#   BENCH_BUILD_ANCHORS=1  run ../shared/anchors/build.sh first when an anchor is missing (root
#                          only). Opt-in: it installs a dozen build packages with apt-get and
#                          compiles for 1 to 3 minutes on a machine that may be shared, and the
#                          script lives outside this repository; a benchmark does not change the
#                          system it measures unless asked. BENCH_ANCHORS_SH=FILE: another build.sh.
# The anchors are for benchmarks only: the product never links or calls them.

peers_init() {
	PEERS_DIR=$1
	PEERS_MODE=${BENCH_PEERS:-auto}
	PEERS_ANCHORS=${BENCH_ANCHORS:-/opt/anchors}
	PEERS_PICKED=
	PEERS_BUILT=0
	case $PEERS_MODE in
	auto|debian|anchors) ;;
	*) echo "BENCH_PEERS must be auto, debian or anchors (got '$PEERS_MODE')" >&2; exit 2;;
	esac
}

# _peer_pkg NAME: the anchor package of NAME and its release, "squashfs-tools 4.7.5"
_peer_pkg() {
	case $1 in
	mksquashfs|unsquashfs|sqfscat|sqfstar) echo "squashfs-tools 4.7.5";;
	squashfuse|squashfuse_ll) echo "squashfuse 0.6.2";;
	mkfs.erofs|fsck.erofs) echo "erofs-utils 1.9.3";;
	*) echo "unknown 0";;
	esac
}

_peer_key() { echo "$1" | tr '.-' '__'; }

# _peer_version PATH NAME: the version the tool prints (4.7.5), empty when it does not run
_peer_version() {
	_pv_opt=-version
	case $2 in squashfuse*|*.erofs) _pv_opt=--version;; esac
	timeout 10 "$1" $_pv_opt </dev/null 2>&1 | head -n 1 |
		grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n 1
}

# _peer_path_debian NAME: NAME on PATH outside the anchors directory
_peer_path_debian() {
	_pd_ifs=$IFS; IFS=:
	for _pd_d in $PATH; do
		case $_pd_d/ in "$PEERS_ANCHORS"/*) continue;; esac
		[ -x "$_pd_d/$1" ] && [ ! -d "$_pd_d/$1" ] && { IFS=$_pd_ifs; echo "$_pd_d/$1"; return 0; }
	done
	IFS=$_pd_ifs
	return 1
}

# _peers_build: build.sh once, when asked to and able to
_peers_build() {
	[ "$PEERS_BUILT" = 0 ] || return 0
	PEERS_BUILT=1
	case ${BENCH_BUILD_ANCHORS:-0} in ''|0|no|false) return 0;; esac
	_pb_sh=${BENCH_ANCHORS_SH:-$PEERS_DIR/../../../shared/anchors/build.sh}
	if [ "$(id -u)" != 0 ]; then log "BENCH_BUILD_ANCHORS: not root, $_pb_sh not run"; return 0; fi
	if [ ! -f "$_pb_sh" ]; then log "BENCH_BUILD_ANCHORS: no $_pb_sh"; return 0; fi
	log "building the anchors into $PEERS_ANCHORS: sh $_pb_sh (1 to 3 minutes)"
	sh "$_pb_sh" "$PEERS_ANCHORS" 2>&1 | sed 's/^/  | /' || log "build.sh failed"
}

peers_pick() {
	for _pp_n in "$@"; do
		# shellcheck disable=SC2046
		set -- $(_peer_pkg "$_pp_n")
		_pp_pkg=$1 _pp_rel=$2
		_pp_a=$PEERS_ANCHORS/$_pp_pkg/bin/$_pp_n
		_pp_path= _pp_ver= _pp_from=missing
		if [ "$PEERS_MODE" != debian ]; then
			[ -x "$_pp_a" ] || _peers_build
			if [ -x "$_pp_a" ]; then
				_pp_ver=$(_peer_version "$_pp_a" "$_pp_n")
				if [ -n "$_pp_ver" ]; then _pp_path=$_pp_a _pp_from=anchor
				else log "$_pp_a does not run (no version printed): not used"; fi
			fi
		fi
		if [ -z "$_pp_path" ] && [ "$PEERS_MODE" = anchors ]; then
			echo "$_pp_n $_pp_rel not in $PEERS_ANCHORS and BENCH_PEERS=anchors: run ../shared/anchors/build.sh" >&2
			exit 2
		fi
		if [ -z "$_pp_path" ] && _pp_d=$(_peer_path_debian "$_pp_n"); then
			_pp_ver=$(_peer_version "$_pp_d" "$_pp_n")
			_pp_path=$_pp_d _pp_from=debian
			[ "$PEERS_MODE" = auto ] &&
				log "$_pp_n $_pp_rel not in $PEERS_ANCHORS: using Debian's ${_pp_ver:-(version unknown)}; run ../shared/anchors/build.sh"
		elif [ -z "$_pp_path" ]; then
			if [ "$PEERS_MODE" = debian ]; then log "$_pp_n: none on PATH (BENCH_PEERS=debian)"
			else log "$_pp_n: not in $PEERS_ANCHORS ($_pp_pkg $_pp_rel) and none on PATH"; fi
		fi
		_pp_k=$(_peer_key "$_pp_n")
		eval "PEER_PATH_$_pp_k=\$_pp_path PEER_VER_$_pp_k=\${_pp_ver:-?} PEER_FROM_$_pp_k=\$_pp_from"
		case " $PEERS_PICKED " in *" $_pp_n "*) ;; *) PEERS_PICKED="${PEERS_PICKED:+$PEERS_PICKED }$_pp_n";; esac
	done
}

peer() { eval "echo \"\${PEER_PATH_$(_peer_key "$1"):-}\""; }
peer_from() { eval "echo \"\${PEER_FROM_$(_peer_key "$1"):-missing}\""; }
peer_label() { eval "echo \"$1 \${PEER_VER_$(_peer_key "$1"):-?}\""; }

peers_summary() {
	for _ps_n in $PEERS_PICKED; do
		case $(peer_from "$_ps_n") in
		anchor) _ps_w="newest release, $PEERS_ANCHORS";;
		debian) _ps_w="Debian's$( [ "$PEERS_MODE" = debian ] && echo ', BENCH_PEERS=debian')";;
		*) printf '%-22s (not found)\n' "$_ps_n"; continue;;
		esac
		printf '%-22s %-30s %s\n' "$(peer_label "$_ps_n")" "($_ps_w)" "$(peer "$_ps_n")"
	done
}
