//! The tool call as the provider adapter hands it over: fragments already joined by index.

/// Why the adapter (or the stage) considers a call's arguments incomplete (SPEC T3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The stream ended with `finish_reason: length`: the JSON was cut.
    Length,
    /// The stream ended without a finish reason or `[DONE]`.
    StreamEnded,
    /// The arguments are not a JSON object (a server sent `tool_calls` with broken JSON).
    InvalidJson,
    /// A chunk of the stream could not be read: whatever it carried is missing, so the joined
    /// arguments may be valid JSON yet incomplete.
    UnreadableChunk,
}

impl Truncation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Length => "length",
            Self::StreamEnded => "stream_ended",
            Self::InvalidJson => "invalid_json",
            Self::UnreadableChunk => "unreadable_chunk",
        }
    }
}

/// One function call from the model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCallRequest {
    /// The provider's call id; the adapter makes one up when the provider sent none.
    pub id: String,
    pub name: String,
    /// The raw argument text, fragments joined.
    pub arguments: String,
    /// Set by the adapter when it knows the arguments were cut.
    pub truncated: Option<Truncation>,
}

impl ToolCallRequest {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            truncated: None,
        }
    }

    /// The arguments as a JSON object, or why they cannot be trusted. Empty text means no
    /// arguments (`{}`), which some servers send for tools without parameters.
    pub fn parse_arguments(&self) -> Result<serde_json::Value, Truncation> {
        if let Some(flag) = self.truncated {
            return Err(flag);
        }
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(serde_json::Map::new()));
        }
        match serde_json::from_str::<serde_json::Value>(&self.arguments) {
            Ok(value @ serde_json::Value::Object(_)) => Ok(value),
            _ => Err(Truncation::InvalidJson),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC T3: adapter flags win; broken or non-object JSON is treated as truncated.
    #[test]
    fn arguments_parse_only_when_whole() {
        let mut call = ToolCallRequest::new("c1", "t", r#"{"a":1}"#);
        assert!(call.parse_arguments().is_ok());
        call.truncated = Some(Truncation::Length);
        assert_eq!(call.parse_arguments(), Err(Truncation::Length));
        let cut = ToolCallRequest::new("c1", "t", r#"{"a":"#);
        assert_eq!(cut.parse_arguments(), Err(Truncation::InvalidJson));
        let array = ToolCallRequest::new("c1", "t", "[1]");
        assert_eq!(array.parse_arguments(), Err(Truncation::InvalidJson));
        let empty = ToolCallRequest::new("c1", "t", "  ");
        assert_eq!(empty.parse_arguments(), Ok(serde_json::json!({})));
    }
}
