//! The server's stickers on Discord (the `StickerCatalog` port): from the gateway's cache, asked
//! of Discord only when the cache does not hold the server; and the server's name.

use async_trait::async_trait;

use super::delivery::DiscordSink;
use super::ratelimit::Route;
use crate::discord::ids::snowflake;
use crate::domain::ports::{PortError, Sticker, StickerCatalog};
use crate::domain::scope::ServerId;

#[async_trait]
impl StickerCatalog for DiscordSink {
    fn server_name(&self, server: ServerId) -> Option<String> {
        self.cache.name(server)
    }

    /// From the gateway's cache (GUILD_CREATE and sticker updates keep it current); asked of
    /// Discord only when the cache does not hold the server.
    async fn stickers(&self, server: ServerId) -> Result<Vec<Sticker>, PortError> {
        if let Some(cached) = self.cache.stickers(server) {
            return Ok(cached);
        }
        let stickers = self
            .rest
            .get(
                Route {
                    template: "GET /guilds/{}/stickers",
                    major: server.0,
                    local_per_5s: None,
                },
                &format!("/guilds/{}/stickers", server.0),
            )
            .await
            .map_err(|detail| PortError::Unavailable {
                what: "discord",
                detail,
            })?;
        Ok(stickers
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["available"].as_bool() != Some(false))
            .filter_map(|s| {
                Some(Sticker {
                    id: snowflake(&s["id"])?,
                    name: s["name"].as_str()?.to_owned(),
                })
            })
            .collect())
    }
}
