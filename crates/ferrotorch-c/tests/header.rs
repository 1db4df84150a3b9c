//! The committed header is what cbindgen makes from the sources today.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut made = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut made);
    let path = dir.join("include/ferrotorch.h");
    if std::env::var("FERROTORCH_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &made).expect("write the header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == made,
        "include/ferrotorch.h is stale: regenerate it with \
         FERROTORCH_BLESS=1 cargo test -p ferrotorch-c --test header, and commit it"
    );
}
