//! A fresh database per test: a SQLite file in a temporary folder, or a new database on the
//! PostgreSQL server named by `TEST_POSTGRES_URL` (left for `scripts/test` to drop); and
//! [`on_both_databases!`](crate::on_both_databases), which runs a test once on each.

use std::time::Duration;

use persona_bot::config::{Config, DatabaseConfig};
use persona_bot::storage::{Backend, Storage};
use sqlx::Connection;

/// A fresh database for one test.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    _dir: Option<tempfile::TempDir>,
}

pub fn config() -> DatabaseConfig {
    let mut config = Config::shipped_defaults().database;
    config.flush_interval_ms = 5;
    config
}

impl TestDb {
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/nested/bot.db", dir.path().display());
        Self {
            url,
            backend: Backend::Sqlite,
            _dir: Some(dir),
        }
    }

    pub async fn postgres() -> Self {
        let admin = std::env::var("TEST_POSTGRES_URL")
            .expect("TEST_POSTGRES_URL must name a PostgreSQL server (scripts/test sets it)");
        sqlx::any::install_default_drivers();
        let name = format!("pbtest_{}", uuid::Uuid::now_v7().simple());
        let mut conn = sqlx::AnyConnection::connect(&admin)
            .await
            .expect("connect to TEST_POSTGRES_URL");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create the test database");
        conn.close().await.ok();
        let (base, query) = match admin.split_once('?') {
            Some((b, q)) => (b, format!("?{q}")),
            None => (admin.as_str(), String::new()),
        };
        let base = base.rsplit_once('/').map_or(base, |(head, _)| head);
        Self {
            url: format!("{base}/{name}{query}"),
            backend: Backend::Postgres,
            _dir: None,
        }
    }

    pub async fn open(&self) -> Storage {
        persona_bot::telemetry::init_for_tests();
        let storage = Storage::open(&self.url, &config())
            .await
            .expect("open storage");
        assert_eq!(storage.db.backend(), self.backend);
        storage
    }
}

/// A hung database test fails after a minute instead of stalling the run.
pub async fn bounded(test: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("database test took over 60 s");
}

/// Runs each named `async fn(TestDb)` of the calling module twice, each under [`bounded`]:
/// `sqlite::<name>` on a fresh SQLite file and `postgres::<name>` on a fresh PostgreSQL
/// database. Without `TEST_POSTGRES_URL` (the build script's `postgres_tests` cfg) the
/// PostgreSQL half is reported as ignored, with the reason.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::support::db::TestDb::sqlite().await;
                    $crate::support::db::bounded(super::$name(db)).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(
                    not(postgres_tests),
                    ignore = "PostgreSQL suite: set TEST_POSTGRES_URL (scripts/test does) to run it"
                )]
                async fn $name() {
                    let db = $crate::support::db::TestDb::postgres().await;
                    $crate::support::db::bounded(super::$name(db)).await;
                }
            )*
        }
    };
}
