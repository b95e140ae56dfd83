//! Turns on the PostgreSQL half of the storage test suite when `TEST_POSTGRES_URL` is set;
//! without it those tests are reported as ignored, with the reason (`scripts/test` sets it).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(postgres_tests)");
    println!("cargo::rerun-if-env-changed=TEST_POSTGRES_URL");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=migrations");
    if std::env::var_os("TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=postgres_tests");
    }
}
