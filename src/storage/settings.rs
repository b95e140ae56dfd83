//! Per-server settings: Response Drafting, the thought-log channel and which turns it summarizes,
//! deliberate tool mode with its phrases, and the access lists. Lists are stored as JSON text.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{Database, from_sql_id, port_error, sql_id, storable};
use crate::config::ReplyStyle;
use crate::domain::ports::{
    Clock, PortError, ServerSettings, SettingsChange, SettingsStore, SummaryMode, SystemClock,
};
use crate::domain::scope::{ChannelId, ServerId};

fn json_error(e: serde_json::Error) -> PortError {
    PortError::Unavailable {
        what: "database",
        detail: format!("stored settings are not valid JSON: {e}"),
    }
}

/// How long a read stays fresh. Every gateway message reads its server's settings; a change
/// made here is seen at once (the save replaces the entry), one made by another process within
/// this time.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// One server's settings as last read or written here.
struct Entry {
    read_at: Instant,
    settings: ServerSettings,
    /// How many writes this process made: a read that began before a write ends with older
    /// settings than the write's, and must not replace them.
    writes: u64,
}

pub struct SettingsRepo {
    db: Database,
    cache: Mutex<HashMap<ServerId, Entry>>,
    /// Held from a write's transaction to its cache entry, so two writes here reach the cache
    /// in the order they reached the database.
    writing: tokio::sync::Mutex<()>,
}

impl SettingsRepo {
    pub fn new(db: Database) -> Self {
        Self {
            db,
            cache: Mutex::default(),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<ServerId, Entry>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes every cached entry old, as if `FRESH_FOR` had passed (tests of stale reads).
    #[cfg(feature = "testkit")]
    pub fn age_cache(&self) {
        let old = Instant::now().checked_sub(FRESH_FOR * 2);
        for entry in self.cache().values_mut() {
            entry.read_at = old.unwrap_or(entry.read_at);
        }
    }

    /// Caches what a read found, unless this process wrote since the read began (`writes_then`):
    /// then the write's settings are newer, and are the answer.
    fn keep_read(
        &self,
        server: ServerId,
        writes_then: Option<u64>,
        settings: ServerSettings,
    ) -> ServerSettings {
        let mut cache = self.cache();
        match cache.get_mut(&server) {
            Some(entry) if Some(entry.writes) != writes_then => entry.settings.clone(),
            Some(entry) => {
                entry.read_at = Instant::now();
                entry.settings = settings.clone();
                settings
            }
            None => {
                let entry = Entry {
                    read_at: Instant::now(),
                    settings: settings.clone(),
                    writes: 0,
                };
                cache.insert(server, entry);
                settings
            }
        }
    }

    /// Caches what a write stored.
    fn keep_written(&self, server: ServerId, settings: &ServerSettings) {
        let mut cache = self.cache();
        let writes = cache.get(&server).map_or(0, |e| e.writes) + 1;
        let entry = Entry {
            read_at: Instant::now(),
            settings: settings.clone(),
            writes,
        };
        cache.insert(server, entry);
    }

    async fn read(&self, server: ServerId) -> Result<ServerSettings, PortError> {
        let conn = self.db.pool().acquire().await;
        self.db.health().observe(&conn);
        let mut conn = conn.map_err(port_error)?;
        read_row(&mut conn, server).await
    }
}

/// The stored row, on `conn` (a pooled connection or a transaction).
async fn read_row(
    conn: &mut sqlx::AnyConnection,
    server: ServerId,
) -> Result<ServerSettings, PortError> {
    type Row = (
        i64,
        Option<i64>,
        String,
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        i64,
        i64,
        String,
        String,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT drafting, thought_log_channel, deliberate, access, review, random, persona, \
             summaries, reply_style, status_reactions, reply_buttons, approvers, mcp_servers \
             FROM server_settings WHERE server_id = $1",
    )
    .bind(sql_id(server.0))
    .fetch_optional(&mut *conn)
    .await
    .map_err(port_error)?;
    let Some((
        drafting,
        thought_log,
        deliberate,
        access,
        review,
        random,
        persona,
        summaries,
        style,
        status_reactions,
        reply_buttons,
        approvers,
        mcp_servers,
    )) = row
    else {
        return Ok(ServerSettings::default());
    };
    Ok(ServerSettings {
        drafting: drafting != 0,
        thought_log_channel: thought_log.map(|c| ChannelId(from_sql_id(c))),
        deliberate: serde_json::from_str(&deliberate).map_err(json_error)?,
        access: serde_json::from_str(&access).map_err(json_error)?,
        review: serde_json::from_str(&review).map_err(json_error)?,
        random: serde_json::from_str(&random).map_err(json_error)?,
        persona: serde_json::from_str(&persona).map_err(json_error)?,
        summaries: SummaryMode::from_name(&summaries),
        reply_style: style.as_deref().and_then(ReplyStyle::from_name),
        status_reactions: status_reactions != 0,
        hide_buttons: reply_buttons == 0,
        approvers: crate::domain::approvals::Approvers::from_name(&approvers),
        mcp_servers: mcp_servers
            .split('\n')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

#[async_trait]
impl SettingsStore for SettingsRepo {
    async fn settings(&self, server: ServerId) -> Result<ServerSettings, PortError> {
        let writes_then = match self.cache().get(&server) {
            Some(entry) if entry.read_at.elapsed() < FRESH_FOR => {
                return Ok(entry.settings.clone());
            }
            entry => entry.map(|e| e.writes),
        };
        match self.read(server).await {
            Ok(settings) => Ok(self.keep_read(server, writes_then, settings)),
            // An outage: the last known settings, however old, rather than none (a message is
            // still handled by the server's rules, and its review stays on).
            Err(error) => match self.cache().get(&server) {
                Some(entry) => {
                    tracing::debug!(
                        %server, %error, age_secs = entry.read_at.elapsed().as_secs(),
                        "settings read failed; using the last known (stale) settings"
                    );
                    Ok(entry.settings.clone())
                }
                None => Err(error),
            },
        }
    }

    async fn save_settings(
        &self,
        server: ServerId,
        settings: &ServerSettings,
    ) -> Result<(), PortError> {
        let _writing = self.writing.lock().await;
        let mut conn = self.db.pool().acquire().await.map_err(port_error)?;
        write_row(&mut conn, server, settings, Existing::Replace).await?;
        self.keep_written(server, settings);
        Ok(())
    }

    /// One transaction on the stored row: the row is locked first (an UPDATE that changes
    /// nothing: a row lock on PostgreSQL, the write lock on SQLite), then read, changed and
    /// written, so a concurrent change from another process is never overwritten.
    async fn update(
        &self,
        server: ServerId,
        change: SettingsChange,
    ) -> Result<ServerSettings, PortError> {
        let _writing = self.writing.lock().await;
        let mut tx = self.db.pool().begin().await.map_err(port_error)?;
        // A server without a row gets the defaults first, so there is a row to lock.
        write_row(&mut tx, server, &ServerSettings::default(), Existing::Keep).await?;
        sqlx::query("UPDATE server_settings SET updated_at = updated_at WHERE server_id = $1")
            .bind(sql_id(server.0))
            .execute(&mut *tx)
            .await
            .map_err(port_error)?;
        let mut settings = read_row(&mut tx, server).await?;
        change.apply(&mut settings);
        write_row(&mut tx, server, &settings, Existing::Replace).await?;
        tx.commit().await.map_err(port_error)?;
        self.keep_written(server, &settings);
        Ok(settings)
    }
}

/// How a write meets a row already there.
#[derive(Clone, Copy)]
enum Existing {
    Replace,
    Keep,
}

/// Inserts the row, replacing or keeping one already there, on `conn`.
async fn write_row(
    conn: &mut sqlx::AnyConnection,
    server: ServerId,
    settings: &ServerSettings,
    existing: Existing,
) -> Result<(), PortError> {
    let deliberate = serde_json::to_string(&settings.deliberate).map_err(json_error)?;
    let access = serde_json::to_string(&settings.access).map_err(json_error)?;
    let review = serde_json::to_string(&settings.review).map_err(json_error)?;
    let random = serde_json::to_string(&settings.random).map_err(json_error)?;
    let persona = serde_json::to_string(&settings.persona).map_err(json_error)?;
    let now = SystemClock.now_ms();
    let sql = match existing {
        Existing::Replace => {
            "INSERT INTO server_settings (server_id, drafting, thought_log_channel, \
                 deliberate, access, review, random, persona, updated_at, summaries, reply_style, \
                 status_reactions, reply_buttons, approvers, mcp_servers) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
                 ON CONFLICT (server_id) DO UPDATE \
                 SET drafting = excluded.drafting, thought_log_channel = \
                 excluded.thought_log_channel, deliberate = excluded.deliberate, access = \
                 excluded.access, review = excluded.review, random = excluded.random, persona = \
                 excluded.persona, updated_at = excluded.updated_at, summaries = \
                 excluded.summaries, reply_style = excluded.reply_style, status_reactions = \
                 excluded.status_reactions, reply_buttons = excluded.reply_buttons, \
                 approvers = excluded.approvers, mcp_servers = excluded.mcp_servers"
        }
        Existing::Keep => {
            "INSERT INTO server_settings (server_id, drafting, thought_log_channel, \
                 deliberate, access, review, random, persona, updated_at, summaries, reply_style, \
                 status_reactions, reply_buttons, approvers, mcp_servers) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
                 ON CONFLICT (server_id) DO NOTHING"
        }
    };
    sqlx::query(sql)
        .bind(sql_id(server.0))
        .bind(i64::from(settings.drafting))
        .bind(settings.thought_log_channel.map(|c| sql_id(c.0)))
        .bind(storable(&deliberate))
        .bind(storable(&access))
        .bind(storable(&review))
        .bind(storable(&random))
        .bind(storable(&persona))
        .bind(now)
        .bind(settings.summaries.as_str().to_owned())
        .bind(settings.reply_style.map(|s| s.as_str().to_owned()))
        .bind(i64::from(settings.status_reactions))
        .bind(i64::from(!settings.hide_buttons))
        .bind(settings.approvers.as_str())
        .bind(settings.mcp_servers.join("\n"))
        .execute(&mut *conn)
        .await
        .map_err(port_error)?;
    Ok(())
}
