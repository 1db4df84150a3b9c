#!/usr/bin/env bash
# The README's install commands, run as a user runs them, each into a fresh
# project outside the repository (scripts/test.sh calls this after the
# workspace's debug build):
#   pip install ./crates/ferrotorch-python     into a new venv
#   npm install <path>/crates/ferrotorch-node  into a new npm project
#   a new cargo project depending on ferrotorch by path (the README's Rust
#     quick start as its main.rs)
#   a new Go module using go/ through a replace directive
# CI builds them with the dev profile and the tests' features
# (MATURIN_PEP517_ARGS="--profile dev --features ...", FERROTORCH_NODE_DEBUG=1
# and FERROTORCH_NODE_FEATURES, the cargo project's own dev profile set as the
# workspace's and the workspace's Cargo.lock) into the workspace's target
# directory, so each reuses what the debug build compiled and links its own
# library only (scripts/check_shared_features.py checks that the features
# agree); a user's install is the same command with release builds.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$root/target"
# the debug build's directory (Note [One target triple in CI] in test.sh)
out="target/${CARGO_BUILD_TARGET:+$CARGO_BUILD_TARGET/}debug"

# the README block that follows a heading: its first ```LANG block
readme_block() {
    python3 - "$1" "$2" <<'PY'
import re, sys
text = open("README.md").read()
section = text.split(sys.argv[1], 1)[1]
print(re.search(r"```" + sys.argv[2] + r"\n(.*?)```", section, re.S).group(1), end="")
PY
}

echo "-- pip install ./crates/ferrotorch-python (fresh venv)"
python3 -m venv "$tmp/venv"
rm -f crates/ferrotorch-python/python/ferrotorch/_C*.so
MATURIN_PEP517_ARGS="--profile dev --features ferrotorch-codegen/cross-isa" "$tmp/venv/bin/pip" install --quiet \
    --disable-pip-version-check ./crates/ferrotorch-python
(cd "$tmp" && VENV="$tmp/venv" "$tmp/venv/bin/python" -c '
import ferrotorch, os
# the installed package, not the sources
assert ferrotorch.__file__.startswith(os.environ["VENV"]), ferrotorch.__file__
ferrotorch.manual_seed(0)
x = ferrotorch.randn(2)
print("installed ferrotorch:", x)
assert x.shape == (2,)
')

echo "-- npm install <path>/crates/ferrotorch-node (fresh npm project)"
mkdir "$tmp/nodeapp"
(
    cd "$tmp/nodeapp"
    npm init -y >/dev/null
    FERROTORCH_NODE_DEBUG=1 FERROTORCH_NODE_FEATURES=cross-isa npm install --no-audit --no-fund --loglevel=error \
        "$root/crates/ferrotorch-node"
    node -e '
const ft = require("ferrotorch")
const x = ft.ones([2, 3], true)
const y = x.mul(2).sum()
y.backward()
if (x.grad.sum().item() !== 12) throw new Error("wrong gradient: " + x.grad.toString())
console.log("installed ferrotorch (node):", y.toString())
'
)

echo "-- a new cargo project depending on ferrotorch by path"
cargo new --quiet --vcs none "$tmp/rustapp"
cat >>"$tmp/rustapp/Cargo.toml" <<TOML
ferrotorch = { path = "$root/crates/ferrotorch" }

# the workspace's dev profile (dependencies optimised), as the README
# advises for a quick debug build
[profile.dev]
opt-level = 0
debug = false
incremental = false
[profile.dev.package."*"]
opt-level = 3
# ... and, as in the workspace, ferrotorch's own crates unoptimised: here
# they are dependencies, which "*" would optimise (a second build of all)
TOML
for crate in ferrotorch ferrotorch-core ferrotorch-data ferrotorch-derive ferrotorch-kernels ferrotorch-nn ferrotorch-optim; do
    printf '[profile.dev.package.%s]\nopt-level = 0\n' "$crate" >>"$tmp/rustapp/Cargo.toml"
done
# the workspace's lock file: the same dependency versions as the debug
# build (a fresh resolution would pick newer ones and rebuild them all)
cp Cargo.lock "$tmp/rustapp/Cargo.lock"
readme_block "## Quick start (Rust)" rust >"$tmp/rustapp/src/main.rs"
(cd "$tmp/rustapp" && cargo run --quiet)

echo "-- a new Go module using go/ through a replace directive"
mkdir "$tmp/goapp"
cat >"$tmp/goapp/go.mod" <<GOMOD
module example.com/goapp

go 1.19

require ferrotorch v0.0.0

replace ferrotorch => $root/go
GOMOD
readme_block "## Quick start (Go)" go >"$tmp/goapp/main.go"
(
    cd "$tmp/goapp"
    export CGO_LDFLAGS="-L$root/$out -Wl,-rpath,$root/$out"
    export GOFLAGS=-mod=mod
    go run .
)
echo "install commands: 4 passed, 0 failed"
