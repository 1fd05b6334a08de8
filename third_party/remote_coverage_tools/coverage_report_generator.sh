#!/bin/sh
echo "coverage_report_generator: not available offline; use per-test lcov files under bazel-testlogs" >&2
exit 1
