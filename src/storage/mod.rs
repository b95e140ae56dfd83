//! sqlx repositories on one `Any` pool: an embedded SQLite file by default, PostgreSQL when several
//! bot processes share one database (SPEC D1). Both run the same migrations (one folder per
//! database, because the DDL differs) and the same queries (runtime `query_as` with `$n`
//! placeholders; ids and times as integers, JSON as text).
//!
//! Hot writes (tool events, usage counters, tool outcomes) go through a background batch
//! [`writer`], so a slow or failing database never stalls a turn. This module is the only one
//! that imports sqlx.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};

use crate::config::DatabaseConfig;
use crate::domain::ports::{ChatPorts, PortError, Ports};

pub mod approvals;
pub mod events;
pub mod feedback;
pub mod health;
pub mod memory;
pub mod outcomes;
pub mod personas;
pub mod plans;
pub mod queue;
pub mod reminders;
pub mod seen;
pub mod settings;
pub mod usage;
pub mod write_queue;
pub mod writer;

pub use write_queue::{WriteQueue, WriterStats};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// Which database a pool talks to, where their SQL differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Why the database could not be opened or migrated. Shown at start-up, so it names the
/// database kind but never the URL (which may hold a password).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database URL must start with sqlite:// or postgres://")]
    UnsupportedUrl,
    #[error("cannot create the database folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    /// The cause is in the message (not a `source`), so a chain printed with `{:#}` shows it
    /// once.
    #[error("cannot open the {backend:?} database: {cause}")]
    Connect { backend: Backend, cause: String },
    #[error("cannot migrate the {backend:?} database: {source}")]
    Migrate {
        backend: Backend,
        source: sqlx::migrate::MigrateError,
    },
}

/// A pool and the backend behind it. Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct Database {
    pool: AnyPool,
    backend: Backend,
    health: Arc<health::Health>,
}

impl Database {
    /// Opens the database at `url`: for SQLite, the file (and its folder) is created when
    /// missing and WAL mode is on, so readers do not block the writer.
    pub async fn connect(
        url: &str,
        max_connections: u32,
        connect_timeout: Duration,
    ) -> Result<Self, StoreError> {
        install_default_drivers();
        if crate::config::database_url_problem(url).is_some() {
            return Err(StoreError::UnsupportedUrl);
        }
        let (backend, url) = if let Some(path) = url.strip_prefix("sqlite://") {
            let path = path.split('?').next().unwrap_or_default();
            if let Some(parent) = Path::new(path).parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent).map_err(|source| StoreError::Folder {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            let sep = if url.contains('?') { '&' } else { '?' };
            (Backend::Sqlite, format!("{url}{sep}mode=rwc"))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            if let Some(cause) = missing_tls_file(url) {
                return Err(StoreError::Connect {
                    backend: Backend::Postgres,
                    cause,
                });
            }
            (Backend::Postgres, url.to_owned())
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        // One connection first, on its own: the pool would retry a refusal until its timeout
        // and report only "pool timed out", losing the cause.
        probe(backend, &url, connect_timeout)
            .await
            .map_err(|cause| StoreError::Connect { backend, cause })?;
        let options = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(connect_timeout);
        let options = match backend {
            Backend::Sqlite => options.after_connect(|conn, _meta| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    conn.execute("PRAGMA foreign_keys = ON").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    Ok(())
                })
            }),
            Backend::Postgres => options,
        };
        let pool = options
            .connect(&url)
            .await
            .map_err(|error| StoreError::Connect {
                backend,
                cause: cause_of(&error, connect_timeout),
            })?;
        Ok(Self {
            pool,
            backend,
            health: Arc::default(),
        })
    }

    /// Applies the backend's migrations (idempotent).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        // SQLite has no lock for the migrator (PostgreSQL's takes an advisory lock): two
        // processes starting on one new file may race on a migration, and the loser's
        // transaction fails. It tries again: each migration is one transaction, so the next
        // try finds what the winner applied and goes on from there.
        let tries = match self.backend {
            Backend::Sqlite => 20,
            Backend::Postgres => 1,
        };
        let mut attempt = 1;
        loop {
            match migrator.run(&self.pool).await {
                Ok(()) => return Ok(()),
                Err(source) if attempt >= tries => {
                    return Err(StoreError::Migrate {
                        backend: self.backend,
                        source,
                    });
                }
                Err(error) => {
                    tracing::debug!(%error, attempt, "migration raced another process; trying again");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Whether the database answers, as the repositories last saw it.
    pub fn health(&self) -> &health::Health {
        &self.health
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A database error as a port error: the detail is for operators only.
pub(crate) fn port_error(error: sqlx::Error) -> PortError {
    PortError::Unavailable {
        what: "database",
        detail: error.to_string(),
    }
}

/// `head VALUES ($1, .., $c), ($c+1, ..) tail` for `rows` rows of `columns` values. Written out
/// by hand because the `Any` driver passes placeholders through as they are, and PostgreSQL only
/// takes `$n`.
pub(crate) fn multi_row_sql(head: &str, columns: usize, rows: usize, tail: &str) -> String {
    use std::fmt::Write as _;
    let mut sql = String::with_capacity(head.len() + tail.len() + rows * columns * 6);
    sql.push_str(head);
    sql.push_str(" VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..columns {
            if column > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "${}", row * columns + column + 1);
        }
        sql.push(')');
    }
    sql.push_str(tail);
    sql
}

/// Opens one connection to `url` and asks the database one question, within `within`: the
/// cause when that fails, in words an operator can act on.
async fn probe(backend: Backend, url: &str, within: Duration) -> Result<(), String> {
    use sqlx::Connection as _;
    let question = match backend {
        // Opening a file that is not SQLite succeeds; reading it does not.
        Backend::Sqlite => "SELECT count(*) FROM sqlite_master",
        Backend::Postgres => "SELECT 1",
    };
    let asked = async {
        let mut conn = sqlx::AnyConnection::connect(url).await?;
        conn.execute(question).await?;
        conn.close().await
    };
    match tokio::time::timeout(within, asked).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(cause_of(&error, within)),
        Err(_) => Err(no_answer(within)),
    }
}

fn no_answer(within: Duration) -> String {
    format!(
        "no answer within {} s (database.connect_timeout_secs): is the host right and the \
         server up?",
        within.as_secs()
    )
}

/// A file the URL names for TLS (`sslrootcert`, a private CA's certificate; `sslcert`, `sslkey`)
/// that is not there, named: sqlx would only say "No such file or directory" at the handshake.
fn missing_tls_file(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    parsed.query_pairs().find_map(|(key, value)| {
        let names_a_file = matches!(
            &*key,
            "sslrootcert"
                | "ssl-root-cert"
                | "ssl-ca"
                | "sslcert"
                | "ssl-cert"
                | "sslkey"
                | "ssl-key"
        );
        (names_a_file && !Path::new(&*value).is_file()).then(|| {
            let shown: String = value.chars().take(80).collect();
            format!("{key} in the database URL names no file ({shown})")
        })
    })
}

/// What to look at when TLS to the database fails.
const TLS_SETTINGS: &str = "sslmode and sslrootcert in the database URL";

/// Why a connection failed, without the URL (it may hold a password).
fn cause_of(error: &sqlx::Error, within: Duration) -> String {
    match error {
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused: is the server running, on that host and port?".to_owned()
        }
        // The handshake's own failure (a certificate no trusted CA signed, a wrong host name)
        // comes as an I/O error carrying rustls's.
        sqlx::Error::Io(io) if io.get_ref().is_some_and(|e| e.is::<rustls::Error>()) => {
            format!("TLS failed: {io} ({TLS_SETTINGS})")
        }
        sqlx::Error::Io(io) => format!("cannot reach the server: {io}"),
        sqlx::Error::PoolTimedOut => no_answer(within),
        sqlx::Error::Database(db) if db.message().contains("not a database") => {
            "the file is not an SQLite database".to_owned()
        }
        sqlx::Error::Database(db) => db.message().chars().take(200).collect(),
        sqlx::Error::Tls(tls) => {
            format!("TLS failed: {tls} ({TLS_SETTINGS})")
        }
        other => crate::redact::redact_text(&other.to_string())
            .chars()
            .take(200)
            .collect(),
    }
}

/// Rows per multi-row statement: with at most 11 values a row this stays far below both
/// databases' parameter limits.
pub(crate) const ROWS_PER_STATEMENT: usize = 500;

/// Text as both databases store it: NUL (U+0000), which PostgreSQL refuses in `TEXT` (SQLSTATE
/// 22021), becomes the six characters `\u0000` (its JSON escape, so JSON text stays the same
/// JSON). SQLite gets the same text, so both databases read back alike. Every text bind of a
/// value that is not one of our own constants goes through here, lookups included, so a key
/// holding a NUL still finds its row. Not reversible: text that already held `\u0000` reads back
/// the same as text that held a NUL.
pub(crate) fn storable(text: &str) -> String {
    text.replace('\0', "\\u0000")
}

/// A snowflake as stored (0 stands for "none").
pub(crate) fn sql_id(id: u64) -> i64 {
    // Bit-for-bit: snowflakes fit in 63 bits, and `as u64` restores any value exactly.
    id as i64
}

/// A stored id back as a snowflake.
pub(crate) fn from_sql_id(id: i64) -> u64 {
    id as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_row_sql_numbers_every_placeholder() {
        let sql = super::multi_row_sql("INSERT INTO t (a, b)", 2, 3, " ON CONFLICT DO NOTHING");
        assert_eq!(
            sql,
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4), ($5, $6) ON CONFLICT DO NOTHING"
        );
    }

    #[test]
    fn storable_spells_nul_as_its_json_escape_and_keeps_the_rest() {
        assert_eq!(super::storable("a\0b\0"), "a\\u0000b\\u0000");
        assert_eq!(super::storable("狐 {\"x\":1}"), "狐 {\"x\":1}");
        let json = serde_json::json!({"k": "a\0b"}).to_string();
        assert_eq!(
            super::storable(&json),
            json,
            "serialized JSON has no raw NUL"
        );
    }
}

/// How long shutdown waits for pending background writes.
pub const CLOSE_FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// Every repository, on one database, with the background writer.
#[derive(Clone)]
pub struct Storage {
    pub db: Database,
    pub writes: WriteQueue,
    pub settings: Arc<settings::SettingsRepo>,
    pub personas: Arc<personas::PersonaRepo>,
    pub memory: Arc<memory::MemoryRepo>,
    pub events: Arc<events::EventRepo>,
    pub usage: Arc<usage::UsageRepo>,
    pub queue: Arc<queue::QueueRepo>,
    pub plans: Arc<plans::PlanRepo>,
    pub outcomes: Arc<outcomes::OutcomeRepo>,
    pub reminders: Arc<reminders::ReminderRepo>,
    pub seen: Arc<seen::SeenRepo>,
    /// Members' verdicts on replies (SPEC E2).
    pub feedback: Arc<feedback::FeedbackRepo>,
    /// Approval requests and their decisions (SPEC E3).
    pub approvals: Arc<approvals::ApprovalRepo>,
}

impl Storage {
    /// Connects to `url`, migrates, and starts the background writer.
    pub async fn open(url: &str, config: &DatabaseConfig) -> Result<Self, StoreError> {
        let db = Database::connect(url, config.max_connections, config.connect_timeout()).await?;
        db.migrate().await?;
        Ok(Self::on(db, config))
    }

    /// The repositories on an open, migrated database.
    pub fn on(db: Database, config: &DatabaseConfig) -> Self {
        let writes = writer::spawn(db.clone(), config);
        Self {
            settings: Arc::new(settings::SettingsRepo::new(db.clone())),
            personas: Arc::new(personas::PersonaRepo::new(db.clone())),
            memory: Arc::new(memory::MemoryRepo::new(db.clone())),
            events: Arc::new(events::EventRepo::new(db.clone(), writes.clone())),
            usage: Arc::new(usage::UsageRepo::new(db.clone(), writes.clone())),
            queue: Arc::new(queue::QueueRepo::new(db.clone(), queue::Claims::default())),
            plans: Arc::new(plans::PlanRepo::new(db.clone())),
            outcomes: Arc::new(outcomes::OutcomeRepo::new(db.clone(), writes.clone())),
            reminders: Arc::new(reminders::ReminderRepo::new(db.clone())),
            seen: Arc::new(seen::SeenRepo::new(db.clone())),
            feedback: Arc::new(feedback::FeedbackRepo::new(db.clone())),
            approvals: Arc::new(approvals::ApprovalRepo::new(db.clone())),
            writes,
            db,
        }
    }

    /// Takes queue entries as `claims` says (a process of several, SPEC D6) instead of as the
    /// only process. Call before the queue is used.
    pub fn claim_queue_as(&mut self, claims: queue::Claims) {
        self.queue = Arc::new(queue::QueueRepo::new(self.db.clone(), claims));
    }

    /// The tool stage's ports: memory, plans, stats, events and outcomes from this database,
    /// the chat-facing ones as given.
    pub fn ports(&self, chat: ChatPorts) -> Ports {
        Ports {
            sink: chat.sink,
            thought_log: chat.thought_log,
            stats: self.usage.clone(),
            events: self.events.clone(),
            clock: chat.clock,
            memory: self.memory.clone(),
            stickers: chat.stickers,
            plans: self.plans.clone(),
            history: chat.history,
            outcomes: self.outcomes.clone(),
            reminders: self.reminders.clone(),
            attachments: chat.attachments,
            approvals: self.approvals.clone(),
        }
    }

    /// Writes everything submitted so far, lets go of the queued messages this process holds
    /// (the next process takes them at once, SPEC D6, D11), then closes the pool (shutdown). A
    /// database that stays unreachable gets [`CLOSE_FLUSH_LIMIT`] to come back; what is still
    /// unwritten then is reported as lost.
    pub async fn close(&self) {
        self.release_queue().await;
        if tokio::time::timeout(CLOSE_FLUSH_LIMIT, self.writes.flush())
            .await
            .is_err()
        {
            tracing::error!(
                "database writes still pending at shutdown after {CLOSE_FLUSH_LIMIT:?}; they are lost"
            );
        }
        self.writes.stop().await;
        self.db.close().await;
    }

    async fn release_queue(&self) {
        use crate::domain::ports::QueueStore as _;
        match self.queue.release_claims().await {
            Ok(0) => {}
            Ok(released) => tracing::info!(released, "queued messages left for the next process"),
            Err(error) => {
                tracing::warn!(%error, "could not let go of queued messages; the next process takes them once the lease ran out")
            }
        }
    }
}
