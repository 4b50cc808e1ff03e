#!/bin/sh
# Rewrites the golden files of the dialects (testdata/golden/*.json) from
# the dialect tables; review the diff against the reference each names.
set -e
cd "$(dirname "$0")/../.."
VFSMOUNT_UPDATE_GOLDEN=1 go test -run 'TestGolden' -count=1 .
