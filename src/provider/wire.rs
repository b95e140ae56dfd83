//! The wire format: our request as OpenAI-compatible JSON, and lenient stream chunks. Every field
//! of a chunk is optional and `finish_reason` is free text, so odd servers (`""`, `eos_token`,
//! missing tool-call `index`, `tool_calls: null`) do not make a chunk fail to parse.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::domain::ports::{ChatMessage, ModelRequest};

/// The JSON body of one streamed pass.
pub fn request_body(
    model: &str,
    request: &ModelRequest,
    max_tokens: u32,
    send_parallel_tool_calls: bool,
    vision: bool,
) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| message(m, vision))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    body.insert("max_tokens".into(), json!(max_tokens));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(request.tools.clone()));
        body.insert("tool_choice".into(), json!("auto"));
        if send_parallel_tool_calls {
            // One tool call per pass (SPEC C9).
            body.insert("parallel_tool_calls".into(), json!(false));
        }
    }
    Value::Object(body)
}

/// One message; a user message's pictures go as `image_url` parts only to a model that sees
/// (`vision`), otherwise its text alone (which names them).
fn message(m: &ChatMessage, vision: bool) -> Value {
    match m {
        ChatMessage::System { content } => json!({ "role": "system", "content": content }),
        ChatMessage::User {
            name,
            content,
            images,
        } => {
            let content =
                if vision && !images.is_empty() {
                    let mut parts = vec![json!({ "type": "text", "text": content })];
                    parts.extend(images.iter().map(
                        |i| json!({ "type": "image_url", "image_url": { "url": &*i.data_url } }),
                    ));
                    Value::Array(parts)
                } else {
                    json!(content)
                };
            match name {
                Some(name) => json!({ "role": "user", "name": name, "content": content }),
                None => json!({ "role": "user", "content": content }),
            }
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            if tool_calls.is_empty() {
                return json!({ "role": "assistant", "content": content });
            }
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments },
                    })
                })
                .collect();
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        ChatMessage::Tool { call_id, content } => {
            json!({ "role": "tool", "tool_call_id": call_id, "content": content })
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Chunk {
    pub choices: Vec<Choice>,
    pub usage: Option<Usage>,
    /// Some servers report a failure inside the stream.
    pub error: Option<StreamError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Choice {
    pub delta: Option<Delta>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Delta {
    pub content: Option<String>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolCallDelta {
    pub index: Option<usize>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StreamError {
    pub message: Option<String>,
    pub code: Option<Value>,
    #[serde(rename = "type")]
    pub kind: Option<Value>,
    pub param: Option<Value>,
}

impl StreamError {
    /// A field as text (`400` and `"400"` alike), `None` when absent or null.
    pub fn text(field: &Option<Value>) -> Option<String> {
        match field.as_ref()? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// The HTTP status the error stands for: its `code` when that is one (llama.cpp sends the
    /// status there).
    pub fn status(&self) -> Option<u16> {
        Self::text(&self.code)?
            .parse()
            .ok()
            .filter(|s| (400..600).contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::AssistantToolCall;

    #[test]
    fn odd_chunks_parse() {
        for raw in [
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":""}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"eos_token"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":null}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"a"}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            r#"{"error":{"message":"overloaded","code":529}}"#,
        ] {
            serde_json::from_str::<Chunk>(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
        }
    }

    // A model that sees gets the pictures as image parts after the text; one that does not gets the
    // text alone.
    #[test]
    fn pictures_go_only_to_a_model_that_sees() {
        use crate::domain::ports::ImagePart;
        let request = ModelRequest {
            messages: vec![ChatMessage::User {
                name: None,
                content: "[alice] what is this? [image: cat.png]".into(),
                images: vec![ImagePart {
                    data_url: "data:image/png;base64,iVBO".into(),
                }],
            }],
            tools: vec![],
        };
        let seeing = request_body("m", &request, 1, true, true);
        assert_eq!(
            seeing["messages"][0]["content"],
            json!([
                { "type": "text", "text": "[alice] what is this? [image: cat.png]" },
                { "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBO" } },
            ])
        );
        let blind = request_body("m", &request, 1, true, false);
        assert_eq!(
            blind["messages"][0]["content"],
            "[alice] what is this? [image: cat.png]"
        );
    }

    // SPEC C9: one tool call per pass is requested where the server supports it.
    #[test]
    fn request_body_has_tools_and_no_parallel_calls() {
        let request = ModelRequest {
            messages: vec![
                ChatMessage::System {
                    content: "s".into(),
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![AssistantToolCall {
                        id: "c1".into(),
                        name: "t".into(),
                        arguments: "{}".into(),
                    }],
                },
                ChatMessage::Tool {
                    call_id: "c1".into(),
                    content: "{}".into(),
                },
            ],
            tools: vec![json!({"type": "function"})],
        };
        let body = request_body("m", &request, 100, true, false);
        assert_eq!(body["parallel_tool_calls"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["name"],
            "t"
        );
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        let without = request_body(
            "m",
            &ModelRequest {
                messages: vec![],
                tools: vec![],
            },
            1,
            true,
            false,
        );
        assert!(
            without.get("parallel_tool_calls").is_none(),
            "only with tools"
        );
        assert!(without.get("tools").is_none());
    }
}
