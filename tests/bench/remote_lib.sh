# SPDX-License-Identifier: BSD-2-Clause
# Helpers for the remote benchmarks (sourced by bash, no side effects when sourced): an image
# directory served by nginx on 127.0.0.1 inside a network namespace with a fixed delay on lo
# (netem where the kernel has it, else NFQUEUE and tests/netdelay.py), cold-cache helpers for
# the part that runs inside the namespace, and the number formatting of the reports.
# The same setup as tests/bench/bench_remote.sh (which keeps its own copy); used by bench_app.sh.
#
# The caller sets RL_NAME (the prefix of messages) before sourcing, and keeps these globals:
#   PIDS (array: processes to end at exit), NS, NS_MADE, DELAY_HOW, DELAY_PID, NGINX_PID.

RL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RL_NETDELAY=$(cd "$RL_DIR/.." && pwd)/netdelay.py

die() { echo "${RL_NAME:-bench}: $*" >&2; exit 2; }
log() { echo "${RL_NAME:-bench}: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
median() { # numbers on stdin (other words ignored) -> median or n/a
	grep -E '^[0-9.]+$' | sort -n | awk '{ a[NR] = $1 } END { if (!NR) print "n/a";
		else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { case "$1$2" in *n/a*) echo n/a;; *) awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }';; esac; }
# goal VALUE LIMIT [min]: "met" when VALUE <= LIMIT (>= LIMIT with min), n/a passes through
goal() {
	case $1 in n/a) echo n/a;; *) awk -v v="$1" -v l="$2" -v m="${3:-max}" 'BEGIN {
		ok = (m == "min") ? (v + 0 >= l + 0) : (v + 0 <= l + 0); print ok ? "met" : "NOT met" }';; esac
}
mib() { case $1 in n/a) echo n/a;; *) awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }';; esac; }
pct() { case "$1$2" in *n/a*) echo n/a;; *) awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.1f%%\n", 100 * a / b }';; esac; }

# need COMMAND PACKAGE...: installs the Debian packages when COMMAND is missing (as root)
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	log "installing ${*:2}"
	apt_install "${@:2}"
}
apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; }
}

# net_up DELAY_MS LOGDIR: network namespace $NS (lo up), DELAY_MS added to every packet on lo.
# With netem, the root qdisc is "handle 1: netem" (a rate limit goes below it, parent 1:1).
# Sets NS_MADE=1, DELAY_HOW, and DELAY_PID (the NFQUEUE helper) when netem is missing.
net_up() {
	local ms=$1 logs=$2 ready
	ip netns add "$NS" || die "ip netns add failed"
	NS_MADE=1
	ip netns exec "$NS" ip link set lo up || die "cannot bring lo up in the namespace"
	if ip netns exec "$NS" tc qdisc add dev lo root handle 1: netem delay "${ms}ms" 2>/dev/null ||
		{ modprobe sch_netem >/dev/null 2>&1 &&
			ip netns exec "$NS" tc qdisc add dev lo root handle 1: netem delay "${ms}ms" 2>/dev/null; }; then
		DELAY_HOW="netem delay ${ms}ms on lo"
		return 0
	fi
	log "this kernel has no netem qdisc: delaying lo packets by ${ms} ms through NFQUEUE instead"
	need iptables iptables
	command -v iptables >/dev/null 2>&1 || die "no netem and no iptables: cannot add delay"
	ready=$logs/delay.ready
	ip netns exec "$NS" python3 "$RL_NETDELAY" 0 "$ms" "$ready" $$ 2>"$logs/delay.err" &
	PIDS+=($!); DELAY_PID=$!
	for _ in $(seq 100); do [ -e "$ready" ] && break; kill -0 "$DELAY_PID" 2>/dev/null || break; sleep 0.1; done
	[ -e "$ready" ] || die "the NFQUEUE delay helper did not start: $(tail -n 1 "$logs/delay.err")"
	# the receive side of lo: the sender's socket no longer owns the packet (as with netem)
	ip netns exec "$NS" iptables -t raw -A PREROUTING -i lo -j NFQUEUE --queue-num 0 --queue-bypass 2>"$logs/iptables.err" ||
		ip netns exec "$NS" iptables-legacy -t raw -A PREROUTING -i lo -j NFQUEUE --queue-num 0 --queue-bypass 2>>"$logs/iptables.err" ||
		die "iptables NFQUEUE rule failed: $(tail -n 1 "$logs/iptables.err")"
	DELAY_HOW="NFQUEUE ${ms}ms each way (no netem in this kernel)"
}

# rate_limit on|off: inside the namespace, `tbf rate 100mbit burst 32kbit latency 400ms` on lo,
# on top of the delay (below netem when netem is the root qdisc). lo's MTU goes to 1500 while
# it is on: tbf drops every packet larger than its burst, and splits only GSO packets, not the
# plain 64 KiB packets of lo's usual MTU (with it, no TCP transfer gets through at all).
rate_limit() {
	case $1 in
	on)
		RL_MTU=$(cat /sys/class/net/lo/mtu)
		ip link set lo mtu 1500 || return 1
		case $DELAY_HOW in
		netem*) tc qdisc add dev lo parent 1:1 handle 10: tbf rate 100mbit burst 32kbit latency 400ms;;
		*) tc qdisc add dev lo root tbf rate 100mbit burst 32kbit latency 400ms;;
		esac;;
	off)
		[ -n "${RL_MTU:-}" ] || return 0
		case $DELAY_HOW in
		netem*) tc qdisc del dev lo parent 1:1 handle 10: 2>/dev/null;;
		*) tc qdisc del dev lo root 2>/dev/null;;
		esac
		ip link set lo mtu "$RL_MTU"
		RL_MTU="";;
	esac
}

# nginx_up DIR ROOT PORT: nginx (worker_processes 1, keepalive, sendfile) serving ROOT on
# 127.0.0.1:PORT inside $NS, state and logs in DIR; access.log lines are
#   status body_bytes_sent method "range" request_time
# Sets NGINX_PID; dies when it does not answer within 10 s.
nginx_up() {
	local d=$1 root=$2 port=$3 ok=0
	mkdir -p "$d/tmp"
	cat >"$d/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 1024; }
http {
	types { application/octet-stream sqsh; }
	default_type application/octet-stream;
	log_format bench '\$status \$body_bytes_sent \$request_method "\$http_range" \$request_time';
	access_log $d/access.log bench;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 75s;
	keepalive_requests 1000000;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$port;
		root $root;
	}
}
EOF
	: >"$d/access.log"
	ip netns exec "$NS" nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" -g 'daemon off;' 2>"$d/nginx.err" &
	PIDS+=($!); NGINX_PID=$!
	for _ in $(seq 100); do
		ip netns exec "$NS" curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$port/" && { ok=1; break; }
		kill -0 "$NGINX_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ "$ok" = 1 ] || die "nginx did not come up: $(cat "$d/nginx.err" "$d/error.log" 2>/dev/null | tail -n 2)"
}

# rtt_ms URL: TCP connect time in ms, median of 5
rtt_ms() {
	for _ in 1 2 3 4 5; do ip netns exec "$NS" curl -s -o /dev/null -r 0-0 -w '%{time_connect}\n' "$1"; done |
		median | awk '{ printf "%.1f", $1 * 1000 }'
}

# net_down: ends every process of the namespace and PIDS, deletes the namespace
net_down() {
	[ "$NS_MADE" = 1 ] || return 0
	for p in $(ip netns pids "$NS" 2>/dev/null) "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 50); do [ -z "$(ip netns pids "$NS" 2>/dev/null)" ] && break; sleep 0.1; done
	for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	NS_MADE=0
}

# ---- for the part inside the namespace ----
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# from /proc/self/mountinfo, without touching the file system (a hung daemon cannot block it)
is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }
alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }
# wait_mount MNT PID: 0 mounted, 1 the daemon exited, 2 timed out (MOUNT_TMO seconds)
wait_mount() {
	local end=$((SECONDS + MOUNT_TMO))
	while ! is_mounted "$1"; do
		alive "$2" || return 1
		[ "$SECONDS" -ge "$end" ] && return 2
		sleep 0.01
	done
}
# unmount_wait MNT [PID]: unmount, then wait (30 s at most) for the daemon to exit
unmount_wait() {
	local end=$((SECONDS + 30))
	if is_mounted "$1"; then
		fusermount3 -u "$1" 2>/dev/null || umount "$1" 2>/dev/null || umount -l "$1"
	fi
	[ -n "${2:-}" ] || return 0
	while alive "$2" && [ "$SECONDS" -lt "$end" ]; do sleep 0.01; done
	if alive "$2"; then
		log "daemon $2 still running 30 s after unmounting $1: killed"
		kill -TERM "$2" 2>/dev/null; sleep 1; alive "$2" && kill -KILL "$2" 2>/dev/null
	fi
	wait "$2" 2>/dev/null
	return 0
}
# logmark ALOG: lines so far; served ALOG MARK: "requests body_bytes non_2xx" logged after MARK
# (waits for the log to settle: nginx writes a line when a response is complete)
logmark() { wc -l <"$1"; }
served() {
	local n0=-1 n i
	for ((i = 0; i < 20; i++)); do n=$(wc -l <"$1"); [ "$n" = "$n0" ] && break; n0=$n; sleep 0.1; done
	tail -n +"$(($2 + 1))" "$1" | awk '{ n++; b += $2; if ($1 !~ /^2/) e++ } END { printf "%d %d %d\n", n, b, e }'
}

# verdict VALUE LIMIT [min]: PASS when VALUE <= LIMIT (>= LIMIT with min), MISS otherwise, n/a
# when VALUE is not a number
verdict() {
	case $1 in '' | *[!0-9.]*) echo n/a;; *) awk -v v="$1" -v l="$2" -v m="${3:-max}" 'BEGIN {
		ok = (m == "min") ? (v + 0 >= l + 0) : (v + 0 <= l + 0); print ok ? "PASS" : "MISS" }';; esac
}
# maxof A B: the larger of two numbers, n/a when either is not one
maxof() { case "$1$2" in *n/a*) echo n/a;; *) awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0) ? a : b }';; esac; }
