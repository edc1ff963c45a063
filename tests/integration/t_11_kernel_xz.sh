#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Same as t_10 with -c xz.
. "$(dirname "$0")/lib.sh"
kernel_roundtrip xz -c xz
