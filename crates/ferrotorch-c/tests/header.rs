//! The committed header is what cbindgen makes from the sources today
//! (ferrotorch-capi's: Note [The C ABI's two crates]).

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut made = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir.join("../ferrotorch-capi"))
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

/// `ft_get_proc` (Note [Plugin ABI]) finds every function the header
/// declares: a function added to the header and not to the table fails
/// here.
#[test]
fn every_header_function_is_in_the_proc_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(dir.join("include/ferrotorch.h")).unwrap();
    let procs = ferrotorch_capi::proc_names();
    let mut declared = Vec::new();
    for line in header.lines() {
        // declarations start at column 0: `FtStatus ft_tensor_free(...`,
        // `const char *ft_version(void);`
        if line.starts_with(|c: char| c.is_whitespace() || c == '/' || c == '#') {
            continue;
        }
        let Some(p) = line.find("ft_") else { continue };
        if p == 0 || !matches!(line.as_bytes()[p - 1], b' ' | b'*') {
            continue;
        }
        let rest = &line[p..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if rest[name.len()..].starts_with('(') {
            declared.push(name);
        }
    }
    assert!(declared.len() > 100, "{}", declared.len());
    for name in &declared {
        assert!(procs.contains(&name.as_str()), "{name} is not in procs.rs");
    }
    for name in &procs {
        assert!(
            declared.iter().any(|d| d == name),
            "{name} is not in the header"
        );
    }
}
