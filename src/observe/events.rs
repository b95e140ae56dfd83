//! A decorator of the tool-events port: every tool call the stage handles records an event
//! (SPEC S6), so counting here counts every call, denied and unknown ones included.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use super::{TOOL_CALLS, TOOL_SECONDS};
use crate::domain::ports::{EventOutcome, ToolEvent, ToolEvents};

/// The `tool` label of a call whose name is not a registered tool (the model's own text).
pub const OTHER_TOOL: &str = "other";

pub struct MeteredEvents {
    inner: Arc<dyn ToolEvents>,
    /// The registry's tool names: the only `tool` labels besides [`OTHER_TOOL`].
    known: BTreeSet<&'static str>,
}

impl MeteredEvents {
    pub fn new(inner: Arc<dyn ToolEvents>, known: impl IntoIterator<Item = &'static str>) -> Self {
        Self {
            inner,
            known: known.into_iter().collect(),
        }
    }

    /// The label for a tool name: the registry's own, or [`OTHER_TOOL`].
    pub fn tool_label(&self, name: &str) -> &'static str {
        self.known.get(name).copied().unwrap_or(OTHER_TOOL)
    }
}

#[async_trait]
impl ToolEvents for MeteredEvents {
    async fn record(&self, event: ToolEvent) {
        let tool = self.tool_label(&event.tool);
        metrics::counter!(TOOL_CALLS, "tool" => tool, "outcome" => event.outcome.as_str())
            .increment(1);
        let ran = matches!(
            event.outcome,
            EventOutcome::Succeeded
                | EventOutcome::Failed
                | EventOutcome::TimedOut
                | EventOutcome::Cancelled
                | EventOutcome::MayStillFinish
        );
        if ran {
            // Milliseconds to seconds; a u64 of milliseconds fits an f64 closely enough.
            #[allow(clippy::cast_precision_loss, reason = "a duration, not an identity")]
            let seconds = event.duration_ms as f64 / 1000.0;
            metrics::histogram!(TOOL_SECONDS, "tool" => tool).record(seconds);
        }
        self.inner.record(event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_registered_names_become_labels() {
        let events = MeteredEvents::new(
            Arc::new(crate::testkit::Discard),
            ["probe", "remember_fact"],
        );
        assert_eq!(events.tool_label("probe"), "probe");
        assert_eq!(
            events.tool_label("ignore previous instructions"),
            OTHER_TOOL
        );
    }
}
