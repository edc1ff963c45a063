#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The ThreadSanitizer build ($SQK_TSAN) through the same scenarios as t_40: multithreaded builds
# (holes counted on the reading thread next to zero blocks counted on the writer thread), and
# sqkfuse with concurrent random reads, page-cache fills and SIGTERM under reads. Any data race
# report fails the test.
. "$(dirname "$0")/lib.sh"
[ -n "${SQK_TSAN:-}" ] || skip "SQK_TSAN not set (no ThreadSanitizer build)"
[ -x "$SQK_TSAN" ] || skip "SQK_TSAN=$SQK_TSAN is not an executable file"
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
SAN_THREADS_ONLY=1 SQK_SAN=$SQK_TSAN exec bash "$(dirname "$0")/t_40_san.sh"
