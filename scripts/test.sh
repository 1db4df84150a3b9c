#!/usr/bin/env bash
# Run every test of the project. This is the README's test command and what
# .ci/run calls. It installs what it needs itself.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test"
cargo test --workspace --quiet 2>&1 | tee /tmp/ferrotorch-test.log
# Print the plain summary line CI reads ("N passed, N failed").
passed=$(grep -Eo '[0-9]+ passed' /tmp/ferrotorch-test.log | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' /tmp/ferrotorch-test.log | awk '{s+=$1} END {print s+0}')
echo "rust: ${passed} passed, ${failed} failed"
