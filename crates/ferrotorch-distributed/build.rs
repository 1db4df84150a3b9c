//! Compiles the engines' shims when their features are on and their
//! headers are installed, else builds that backend as unavailable:
//! - `gloo`: `shim/gloo_shim.cc` over Gloo (Debian: `libgloo-dev`), `cfg(ft_gloo)`;
//! - `mpi`: `shim/mpi_shim.c` over the MPI that `mpicc` names (Debian:
//!   `libopenmpi-dev`), `cfg(ft_mpi)`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ft_gloo)");
    println!("cargo::rustc-check-cfg=cfg(ft_mpi)");
    println!("cargo:rerun-if-changed=shim/gloo_shim.cc");
    println!("cargo:rerun-if-changed=shim/mpi_shim.c");
    #[cfg(feature = "gloo")]
    gloo();
    #[cfg(feature = "mpi")]
    mpi();
}

#[cfg(feature = "gloo")]
fn gloo() {
    let include = std::env::var("GLOO_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".into());
    let header = std::path::Path::new(&include).join("gloo/config.h");
    println!("cargo:rerun-if-changed={}", header.display());
    if !header.exists() {
        println!(
            "cargo:warning=Gloo's headers are not at {} (Debian: apt-get install libgloo-dev); the gloo backend is unavailable",
            header.display()
        );
        return;
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .include(&include)
        .file("shim/gloo_shim.cc")
        .warnings(false)
        .compile("ferrotorch_gloo_shim");
    let lib = std::env::var("GLOO_LIB_DIR").unwrap_or_else(|_| "/usr/lib".into());
    println!("cargo:rustc-link-search=native={lib}");
    println!("cargo:rustc-link-lib=dylib=gloo");
    println!("cargo:rustc-cfg=ft_gloo");
}

/// `mpicc -showme:<what>` (Open MPI's wrapper), split on spaces.
#[cfg(feature = "mpi")]
fn showme(mpicc: &str, what: &str) -> Option<Vec<String>> {
    let out = std::process::Command::new(mpicc)
        .arg(format!("-showme:{what}"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(feature = "mpi")]
fn mpi() {
    println!("cargo:rerun-if-env-changed=MPICC");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let (Some(inc), Some(libdirs), Some(libs)) = (
        showme(&mpicc, "incdirs"),
        showme(&mpicc, "libdirs"),
        showme(&mpicc, "libs"),
    ) else {
        println!(
            "cargo:warning=`{mpicc} -showme` found no MPI (Debian: apt-get install libopenmpi-dev); the mpi backend is unavailable"
        );
        return;
    };
    let mut b = cc::Build::new();
    b.file("shim/mpi_shim.c").warnings(false);
    for d in &inc {
        b.include(d);
    }
    b.compile("ferrotorch_mpi_shim");
    for d in &libdirs {
        println!("cargo:rustc-link-search=native={d}");
    }
    for l in &libs {
        println!("cargo:rustc-link-lib=dylib={l}");
    }
    println!("cargo:rustc-cfg=ft_mpi");
}
