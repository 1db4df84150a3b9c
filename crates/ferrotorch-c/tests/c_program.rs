//! The C test program (tests/c/train_mlp.c), compiled with the system C
//! compiler against the header and the shared library, and run.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>`, where cargo put `libferrotorch_c.so`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

#[test]
fn c_program_trains_an_mlp_and_checks_errors() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = target_dir();
    let so = lib.join("libferrotorch_c.so");
    // `cargo test` builds the rlib only: the shared library is the one
    // `cargo build` made (scripts/test.sh builds first); refuse a stale one
    let built = std::fs::metadata(&so)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("no {}: run cargo build -p ferrotorch-c", so.display()));
    // the functions' sources (Note [The C ABI's two crates])
    let newest_source = std::fs::read_dir(dir.join("../ferrotorch-capi/src"))
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .max()
        .unwrap();
    assert!(
        built >= newest_source,
        "{} is older than the crate's sources: run cargo build -p ferrotorch-c",
        so.display()
    );
    let tmp = std::env::temp_dir().join(format!("ferrotorch-c-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let exe = tmp.join("train_mlp");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join("tests/c/train_mlp.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lferrotorch_c", "-lm"])
        .output()
        .expect("the C compiler runs");
    assert!(
        out.status.success(),
        "compiling train_mlp.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe)
        .arg(tmp.join("mlp.safetensors"))
        .env("FERROTORCH_TEST_OPS", "1")
        .output()
        .expect("train_mlp runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "train_mlp failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("ok"), "{stdout}");
    let _ = std::fs::remove_dir_all(&tmp);
}
