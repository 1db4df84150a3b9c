//! Plugins (Note [Plugin ABI]): tests/c/plugin.c compiled with the system
//! C compiler as a shared library, loaded, and its ops called through the
//! dispatcher; a plugin of another ABI version, a library that is not a
//! plugin and a missing file are refused with reasons.

use ferrotorch_capi::plugin::{load_library, loaded_libraries, FT_PLUGIN_ABI_VERSION};
use ferrotorch_core::dispatch::{call, IValue};
use ferrotorch_core::{ErrorKind, Tensor};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `plugin.c` built into `out` with extra compiler flags.
fn build(out: &Path, flags: &[&str], source: &Path) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let r = Command::new(&cc)
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC",
        ])
        .args(flags)
        .arg("-I")
        .arg(dir.join("include"))
        .arg(source)
        .arg("-o")
        .arg(out)
        .output()
        .expect("the C compiler runs");
    assert!(
        r.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&r.stderr)
    );
    out.to_path_buf()
}

fn tmp() -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrotorch-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/plugin.c")
}

#[test]
fn a_plugin_registers_ops_written_in_c() {
    let dir = tmp();
    let so = build(&dir.join("libftplugin.so"), &[], &source());
    load_library(&so).unwrap();
    load_library(&so).unwrap(); // again: nothing happens
    assert_eq!(
        loaded_libraries()
            .iter()
            .filter(|p| p.ends_with("libftplugin.so"))
            .count(),
        1
    );
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
    let y = Tensor::from_slice(&[10.0f32, 20.0, 30.0]);
    let out = call(
        "ftplugin::axpy",
        &[x.clone().into(), y.clone().into()],
        &[("a", IValue::Float(2.0))],
    )
    .unwrap()
    .into_tensor()
    .unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![12.0, 24.0, 36.0]);
    // the default a=1.0 from the plugin's schema
    let out = call("ftplugin::axpy", &[x.clone().into(), y.clone().into()], &[])
        .unwrap()
        .into_tensor()
        .unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0]);
    // an op calling back into the library
    let out = call("ftplugin::twice", &[x.clone().into()], &[])
        .unwrap()
        .into_tensor()
        .unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    // the kernel's own error, with its message and the op's name
    let e = call(
        "ftplugin::axpy",
        &[x.clone().into(), Tensor::from_slice(&[1.0f32]).into()],
        &[],
    )
    .unwrap_err();
    assert!(
        e.message().contains("ftplugin::axpy") && e.message().contains("same shape"),
        "{}",
        e.message()
    );
    // not differentiable: backward says so, naming the op
    let xg = x.requires_grad_(true).unwrap();
    let out = call("ftplugin::axpy", &[xg.into(), y.into()], &[])
        .unwrap()
        .into_tensor()
        .unwrap();
    let e = out.sum().unwrap().backward().unwrap_err();
    assert!(e.message().contains("ftplugin::axpy"), "{}", e.message());
}

#[test]
fn plugins_of_another_abi_and_other_libraries_are_refused() {
    let dir = tmp();
    let wrong = FT_PLUGIN_ABI_VERSION + 98;
    let flag = format!("-DFT_TEST_ABI={wrong}");
    let so = build(&dir.join("libftplugin_v99.so"), &[&flag], &source());
    let e = load_library(&so).unwrap_err();
    assert!(
        e.message().contains(&format!("plugin ABI version {wrong}"))
            && e.message()
                .contains(&format!("loads version {FT_PLUGIN_ABI_VERSION}")),
        "{}",
        e.message()
    );
    let plain = dir.join("plain.c");
    std::fs::write(&plain, "int not_a_plugin(void) { return 1; }\n").unwrap();
    let so = build(&dir.join("libplain.so"), &[], &plain);
    let e = load_library(&so).unwrap_err();
    assert!(
        e.message().contains("not a ferrotorch plugin"),
        "{}",
        e.message()
    );
    let e = load_library(dir.join("missing.so")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    let text = dir.join("text.so");
    std::fs::write(&text, "not an ELF file").unwrap();
    assert!(load_library(&text).is_err());
}

/// A class written in C (Note [Plugin classes]): seeds/004's TensorQueue
/// from tests/c/plugin_class.c, constructed, called and copied through the
/// class registry; its objects free their state when the last handle goes.
#[test]
fn a_plugin_registers_a_class_written_in_c() {
    use ferrotorch_core::library::{construct, find_class};
    let dir = tmp();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/plugin_class.c");
    let so = build(&dir.join("libftclass.so"), &["-pthread"], &src);
    load_library(&so).unwrap();
    let class = find_class("ftplugin::TensorQueue").expect("registered");
    assert_eq!(
        class.method_names(),
        [
            "__getstate__",
            "__init__",
            "__setstate__",
            "get_raw_queue",
            "pop",
            "push",
            "size",
            "top"
        ]
    );
    let init = Tensor::from_slice(&[-1.0f32]);
    let q = construct("ftplugin::TensorQueue", &[init.into()], &[]).unwrap();
    for v in [1.0f32, 2.0, 3.0] {
        q.call_method("push", &[Tensor::from_slice(&[v]).into()], &[])
            .unwrap();
    }
    let int = |v: IValue| match v {
        IValue::Int(i) => i,
        v => panic!("{}", v.type_name()),
    };
    let vals = |v: IValue| -> Vec<f32> { v.into_tensor().unwrap().to_vec::<f32>().unwrap() };
    assert_eq!(int(q.call_method("size", &[], &[]).unwrap()), 3);
    assert_eq!(vals(q.call_method("top", &[], &[]).unwrap()), [1.0]);
    assert_eq!(vals(q.call_method("pop", &[], &[]).unwrap()), [1.0]);
    let copy = q.deep_copy().unwrap();
    assert_eq!(vals(q.call_method("pop", &[], &[]).unwrap()), [2.0]);
    // the copy kept its own queue: 2 and 3
    match copy.call_method("get_raw_queue", &[], &[]).unwrap() {
        IValue::TensorList(l) => assert_eq!(
            l.iter()
                .map(|t| t.to_vec::<f32>().unwrap()[0])
                .collect::<Vec<_>>(),
            [2.0, 3.0]
        ),
        v => panic!("{}", v.type_name()),
    }
    assert_eq!(vals(q.call_method("pop", &[], &[]).unwrap()), [3.0]);
    // empty: the init tensor
    assert_eq!(vals(q.call_method("pop", &[], &[]).unwrap()), [-1.0]);
    // a wrong argument is the dispatcher's error, naming the method
    let e = q.call_method("push", &[IValue::Int(3)], &[]).unwrap_err();
    assert!(e.message().contains("push"), "{}", e.message());
}
