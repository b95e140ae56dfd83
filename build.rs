//! Turns on the PostgreSQL half of the storage test suite when `TEST_POSTGRES_URL` is set;
//! without it those tests are reported as ignored, with the reason (`scripts/test` sets it).
//!
//! Links the binary with packed relative relocations (DT_RELR) where the C library it is built
//! against loads them (glibc 2.36 and later): a position-independent executable otherwise
//! carries one 24-byte record per pointer to fix up at start-up, about 1.8 MiB here, which the
//! loader reads through and so keeps resident for the process's life; packed, it is a few KiB.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(postgres_tests)");
    println!("cargo::rerun-if-env-changed=TEST_POSTGRES_URL");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=migrations");
    if std::env::var_os("TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=postgres_tests");
    }
    if packed_relocations_load() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether a binary linked here may carry DT_RELR: a native glibc build whose C library
/// declares the `GLIBC_ABI_DT_RELR` version (a cross build, or any other C library, keeps the
/// classic relocations).
fn packed_relocations_load() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return false;
    }
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let Ok(found) = std::process::Command::new(compiler)
        .arg("-print-file-name=libc.so.6")
        .output()
    else {
        return false;
    };
    let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    std::fs::read(&path).is_ok_and(|libc| {
        libc.windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|w| w == b"GLIBC_ABI_DT_RELR")
    })
}
