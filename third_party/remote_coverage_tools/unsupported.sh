#!/bin/sh
echo "pare: 'bazel coverage' needs the real remote_coverage_tools, which this offline workspace stubs out" >&2
exit 1
