//! Compiles the Gloo shim (`shim/gloo_shim.cc`) when the `gloo` feature
//! is on and Gloo's headers are installed (Debian: `libgloo-dev`); else
//! the backend is built as unavailable (`cfg(ft_gloo)` unset).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ft_gloo)");
    println!("cargo:rerun-if-changed=shim/gloo_shim.cc");
    #[cfg(feature = "gloo")]
    {
        let include = std::env::var("GLOO_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".into());
        let header = std::path::Path::new(&include).join("gloo/config.h");
        println!("cargo:rerun-if-changed={}", header.display());
        if header.exists() {
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
        } else {
            println!(
                "cargo:warning=Gloo's headers are not at {} (Debian: apt-get install libgloo-dev); the gloo backend is unavailable",
                header.display()
            );
        }
    }
}
