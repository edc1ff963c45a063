#!/bin/bash
# Same as t_10 with -c xz.
. "$(dirname "$0")/lib.sh"
kernel_roundtrip xz -c xz
