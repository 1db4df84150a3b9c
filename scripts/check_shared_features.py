#!/usr/bin/env python3
"""Check that the packages users build one after the other select the same
features of every dependency they share (Note [One feature set for shared
dependencies] in crates/ferrotorch-kernels/Cargo.toml).

Cargo resolves features per build: `cargo run --release -p ferrotorch
--example rpf` (the main job, with the facade's dev-dependencies), `pip
install ./crates/ferrotorch-python` and `npm install ./crates/ferrotorch-node`
each select their own. Where one of them turns on a feature of a shared
crate that another does not, that crate and everything above it (gemm,
faer, every ferrotorch crate) is compiled twice. This reads `cargo tree`
(resolution only, no build) and fails naming each crate whose features
differ between two builds.

It also checks CI's reuse: scripts/test.sh builds and tests the whole
workspace (with its dev-dependencies and the tests' features) and then runs
the install commands (scripts/check_installs.sh) with the same features,
which reuse that build only where each of their crates has features the
test build has too (the test build may hold a crate twice: once for proc
macros and build scripts, once for the target).
"""
import subprocess
import sys

BUILDS = {
    "main job (ferrotorch + example deps)": ["-p", "ferrotorch", "-e", "normal,build,dev"],
    "python package": ["-p", "ferrotorch-python", "-e", "normal,build"],
    "node package": ["-p", "ferrotorch-node", "-e", "normal,build"],
    "C library": ["-p", "ferrotorch-c", "-e", "normal,build"],
}

# scripts/test.sh's build, and its install checks' builds (check_installs.sh)
TEST_BUILD = ["--workspace", "--features", "ferrotorch-codegen/cross-isa,ferrotorch/full,ferrotorch-distributed/gloo,ferrotorch-distributed/mpi",
              "-e", "normal,build,dev"]
INSTALL_CHECKS = {
    "pip install (CI)": ["-p", "ferrotorch-python", "--features", "ferrotorch-codegen/cross-isa",
                         "-e", "normal,build"],
    "npm install (CI)": ["-p", "ferrotorch-node", "--features", "cross-isa", "-e", "normal,build"],
    "new cargo project": ["-p", "ferrotorch", "-e", "normal,build"],
}


def features(args):
    out = subprocess.run(
        ["cargo", "tree", "--quiet", "--prefix", "none", "-f", "{p}|{f}", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    seen = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        pkg, feats = line.replace(" (*)", "").rsplit("|", 1)
        if " (/" in pkg or "(proc-macro)" in pkg and "ferrotorch" in pkg:
            continue  # our own crates: their features are the builds' own
        seen.setdefault(pkg.replace(" (proc-macro)", ""), set()).add(feats)
    return seen


def main():
    trees = {name: features(args) for name, args in BUILDS.items()}
    names = list(trees)
    bad = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for pkg in sorted(set(trees[a]) & set(trees[b])):
                if trees[a][pkg] != trees[b][pkg]:
                    bad.append(f"{pkg}: {a} {sorted(trees[a][pkg])} vs {b} {sorted(trees[b][pkg])}")
    test = features(TEST_BUILD)
    for name, args in INSTALL_CHECKS.items():
        for pkg, sets in sorted(features(args).items()):
            for f in sorted(sets - test.get(pkg, set())):
                bad.append(f"{pkg}: {name} [{f}] vs the test build {sorted(test.get(pkg, set()))}")
    if bad:
        print("shared dependencies with different features (each is built twice):")
        print("\n".join("  " + line for line in bad))
        sys.exit(1)
    print(f"shared dependencies: one feature set across {len(names)} builds, "
          f"and CI's {len(INSTALL_CHECKS)} install checks reuse its test build")


if __name__ == "__main__":
    main()
