#!/bin/sh
# Runs a fuzz target binary (built with replay_main) over the given corpus files.
set -e
target="$1"
shift
exec "$target" "$@"
