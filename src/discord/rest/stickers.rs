//! The server's stickers and own emoji on Discord (the `StickerCatalog` port): from the
//! gateway's cache, asked of Discord only when the cache does not hold the server; and the
//! server's name.

use async_trait::async_trait;

use super::delivery::DiscordSink;
use super::ratelimit::Route;
use crate::discord::ids::snowflake;
use crate::domain::ports::{CustomEmoji, PortError, Sticker, StickerCatalog};
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

    /// From the gateway's cache (GUILD_CREATE and emoji updates keep it current); asked of
    /// Discord only when the cache does not hold the server.
    async fn emojis(&self, server: ServerId) -> Result<Vec<CustomEmoji>, PortError> {
        if let Some(cached) = self.cache.emojis(server) {
            return Ok(cached);
        }
        let emojis = self
            .rest
            .get(
                Route {
                    template: "GET /guilds/{}/emojis",
                    major: server.0,
                    local_per_5s: None,
                },
                &format!("/guilds/{}/emojis", server.0),
            )
            .await
            .map_err(|detail| PortError::Unavailable {
                what: "discord",
                detail,
            })?;
        Ok(emojis
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["available"].as_bool() != Some(false))
            .filter_map(|e| {
                Some(CustomEmoji {
                    id: snowflake(&e["id"])?,
                    name: e["name"].as_str()?.to_owned(),
                    animated: e["animated"].as_bool().unwrap_or(false),
                })
            })
            .collect())
    }
}
