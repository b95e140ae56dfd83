//! `allowed_mentions`: which mentions of a message ping, and so what its `mentions`,
//! `mention_roles` and `mention_everyone` hold, and Discord's refusal of contradictory settings.
//!
//! Without `allowed_mentions` everything in the content parses and a reply pings its author. With
//! it, `<@id>` pings when `parse` holds `"users"` or `users` lists the id, `<@&id>` when `parse`
//! holds `"roles"` or `roles` lists it, `@everyone`/`@here` when `parse` holds `"everyone"`, and a
//! reply pings its author only with `replied_user: true`. As on Discord, `@everyone`, `@here` and
//! roles (none of the fake's is mentionable) ping only for an author with MENTION_EVERYONE in the
//! channel.

use axum::response::Response;
use serde_json::Value;

use super::permissions::MENTION_EVERYONE;
use super::rest::{invalid_form_body_at, parse_id};
use super::world::World;

/// Who a message pings.
#[derive(Debug, Default)]
pub(super) struct Pings {
    pub(super) users: Vec<u64>,
    pub(super) roles: Vec<u64>,
    pub(super) everyone: bool,
}

/// What `allowed_mentions` allows, checked as Discord checks it.
struct Allowed {
    parse_users: bool,
    parse_roles: bool,
    parse_everyone: bool,
    users: Vec<u64>,
    roles: Vec<u64>,
    replied_user: bool,
}

const PARSE_TYPES: [&str; 3] = ["users", "roles", "everyone"];
const MAX_IDS: usize = 100;

fn ids(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| match v {
            Value::String(s) => parse_id(s),
            Value::Number(n) => n.as_u64(),
            _ => None,
        })
        .collect()
}

#[allow(clippy::result_large_err)] // the error is the response to send
fn allowed(body: &Value) -> Result<Allowed, Response> {
    let Some(am) = body.get("allowed_mentions").filter(|a| !a.is_null()) else {
        return Ok(Allowed {
            parse_users: true,
            parse_roles: true,
            parse_everyone: true,
            users: Vec::new(),
            roles: Vec::new(),
            replied_user: true,
        });
    };
    let mut parse = Vec::new();
    for (i, kind) in am["parse"].as_array().into_iter().flatten().enumerate() {
        match kind.as_str().filter(|k| PARSE_TYPES.contains(k)) {
            Some(k) => parse.push(k),
            None => {
                return Err(invalid_form_body_at(
                    &["allowed_mentions", "parse", &i.to_string()],
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {'everyone', 'roles', 'users'}.",
                ));
            }
        }
    }
    for list in ["users", "roles"] {
        if am[list].as_array().is_some_and(|l| l.len() > MAX_IDS) {
            return Err(invalid_form_body_at(
                &["allowed_mentions", list],
                "BASE_TYPE_MAX_LENGTH",
                "Must be 100 or fewer in length.",
            ));
        }
        if parse.contains(&list) && am[list].as_array().is_some_and(|l| !l.is_empty()) {
            return Err(invalid_form_body_at(
                &["allowed_mentions"],
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                &format!("parse:[\"{list}\"] and {list}: [ids...] are mutually exclusive."),
            ));
        }
    }
    Ok(Allowed {
        parse_users: parse.contains(&"users"),
        parse_roles: parse.contains(&"roles"),
        parse_everyone: parse.contains(&"everyone"),
        users: ids(&am["users"]),
        roles: ids(&am["roles"]),
        replied_user: am["replied_user"].as_bool().unwrap_or(false),
    })
}

/// Who a message by the bot with this `content` pings in the channel; `replied_author` is the
/// author of the message it replies to. Refuses contradictory `allowed_mentions` (50035).
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) fn pings(
    world: &World,
    channel_id: u64,
    guild_id: Option<u64>,
    content: &str,
    body: &Value,
    replied_author: Option<u64>,
) -> Result<Pings, Response> {
    let allowed = allowed(body)?;
    let may_mention_everyone = guild_id.is_some()
        && world.permissions_in(world.bot_id, channel_id) & MENTION_EVERYONE != 0;
    let mut users: Vec<u64> = mentioned(content, "<@")
        .into_iter()
        .filter(|id| allowed.parse_users || allowed.users.contains(id))
        .collect();
    if let Some(author) = replied_author
        && allowed.replied_user
        && !users.contains(&author)
    {
        users.push(author);
    }
    let guild_roles: Vec<u64> = guild_id
        .map(|g| {
            world
                .roles_json(g)
                .iter()
                .filter_map(|r| r["id"].as_str().and_then(parse_id))
                // `<@&guild id>` is not how @everyone is mentioned
                .filter(|id| *id != g)
                .collect()
        })
        .unwrap_or_default();
    let roles = mentioned(content, "<@&")
        .into_iter()
        .filter(|id| guild_roles.contains(id))
        .filter(|id| allowed.parse_roles || allowed.roles.contains(id))
        .filter(|_| may_mention_everyone)
        .collect();
    let everyone = (content.contains("@everyone") || content.contains("@here"))
        && allowed.parse_everyone
        && may_mention_everyone;
    Ok(Pings {
        users,
        roles,
        everyone,
    })
}

/// Ids written as `<@id>`/`<@!id>` (`open` "<@") or `<@&id>` (`open` "<@&"), in order, once each.
fn mentioned(content: &str, open: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(at) = rest.find(open) {
        rest = &rest[at + open.len()..];
        let digits = if open == "<@" {
            rest.strip_prefix('!').unwrap_or(rest)
        } else {
            rest
        };
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        if digits[end..].starts_with('>')
            && let Some(id) = parse_id(&digits[..end])
            && !out.contains(&id)
        {
            out.push(id);
        }
    }
    out
}
