//! Discord's ids as the adapter reads them: the bot's own user id (known once the gateway says
//! READY) and a snowflake in Discord's JSON.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

/// The bot's own user id, known once the gateway says READY (0 before).
#[derive(Debug, Default, Clone)]
pub struct BotId(Arc<AtomicU64>);

impl BotId {
    pub fn set(&self, id: u64) {
        self.0.store(id, Ordering::Release);
    }

    pub fn get(&self) -> Option<u64> {
        let id = self.0.load(Ordering::Acquire);
        (id != 0).then_some(id)
    }
}

/// A snowflake from a JSON string (or number).
pub fn snowflake(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}
