//! Shared by the benches: the run/check switch, percentiles, a fresh PostgreSQL database.

use std::time::Duration;

use sqlx::Connection;

/// The `p` quantile (0.0 to 1.0) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The PostgreSQL server the benches use: `TEST_POSTGRES_URL`, else the local server.
pub fn postgres_admin_url() -> String {
    std::env::var("TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A new, empty database on the server at `admin`: its URL and name; `None` when the server
/// cannot be reached.
pub async fn fresh_postgres(admin: &str) -> Option<(String, String)> {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(admin).await.ok()?;
    let name = format!("pbbench_{}", uuid::Uuid::now_v7().simple());
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .ok()?;
    let base = admin.split('?').next().unwrap_or(admin);
    let base = base.rsplit_once('/').map_or(base, |(head, _)| head);
    Some((format!("{base}/{name}"), name))
}

/// Drops a database [`fresh_postgres`] made.
pub async fn drop_postgres(admin: &str, name: &str) {
    if let Ok(mut conn) = sqlx::AnyConnection::connect(admin).await {
        let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        let _ = sqlx::query(sqlx::AssertSqlSafe(drop))
            .execute(&mut conn)
            .await;
    }
}

/// Whether bench `name` should run now; if not (`cargo test --all-targets` runs benches once
/// as tests), says how to run it. Keeps the test run quick.
pub fn asked_for(name: &str) -> bool {
    let asked = benchmarking();
    if !asked {
        println!("{name}: run with `cargo bench --bench {name}`");
    }
    asked
}

/// Runs `work` on the runtime every bench uses: multi-threaded, two workers, like the machine.
pub fn block_on<F: std::future::Future>(work: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(work)
}

/// Whether cargo asked for a real run (`cargo bench`), not the one-shot check
/// `cargo test --all-targets` does.
pub fn benchmarking() -> bool {
    !std::env::args().any(|a| a == "--test" || a == "--list")
        && std::env::args().any(|a| a == "--bench")
}
