//! Turning a chunk stream into [`ModelEvent`]s: text as it arrives; tool-call fragments joined
//! by `index` (or, when a server leaves `index` out, by `id` and position), the id kept from the
//! first fragment that had one; "tool call" decided from the fragments, not from
//! `finish_reason`; arguments flagged truncated when the stream ended on `length` or without any
//! finish reason (SPEC T3). First-token and idle timeouts apply here (SPEC C11).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::transport::{Cut, CutReport};
use super::wire::{Chunk, StreamError, ToolCallDelta};
use crate::domain::call::{ToolCallRequest, Truncation};
use crate::domain::ports::{Finish, ModelError, ModelEvent, ModelStream, TokenUsage};
use crate::domain::provider_failure::{ErrorReport, FailureClass, classify};

/// Most calls one pass keeps. One call runs per pass (the rest are refused, SPEC C9), so a
/// few are plenty; past them a server cannot make the assembler keep, and search, thousands.
pub const MAX_CALLS_PER_PASS: usize = 16;

/// One call being assembled.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Partial {
    index: usize,
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The state of one pass's assembly.
#[derive(Debug, Default)]
pub struct Assembler {
    calls: Vec<Partial>,
    /// The call the last fragment went to.
    last: Option<usize>,
    finish: Option<String>,
    usage: Option<TokenUsage>,
    /// Chunks that could not be read and were skipped.
    unreadable_chunks: u32,
    /// Fragments of calls past [`MAX_CALLS_PER_PASS`], dropped.
    dropped_fragments: u32,
}

impl Assembler {
    /// Takes one chunk; returns its visible text, or the error a server reported in-stream.
    pub fn take(&mut self, chunk: Chunk) -> Result<Vec<String>, ModelError> {
        if let Some(error) = chunk.error {
            // Classed like an HTTP error: the server failed, the connection did not.
            let (kind, code, param) = (
                StreamError::text(&error.kind),
                StreamError::text(&error.code),
                StreamError::text(&error.param),
            );
            let message = error.message.clone().unwrap_or_default();
            let report = ErrorReport {
                status: error.status(),
                message: &message,
                kind: kind.as_deref(),
                code: code.as_deref(),
                param: param.as_deref(),
            };
            return Err(ModelError::new(
                report.class(),
                report.status,
                format!(
                    "in-stream error: {message} ({})",
                    kind.or(code).unwrap_or_default()
                ),
            ));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(TokenUsage {
                prompt: usage.prompt_tokens,
                completion: usage.completion_tokens,
            });
        }
        let mut text = Vec::new();
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                    text.push(content);
                }
                for fragment in delta.tool_calls.into_iter().flatten() {
                    self.fragment(fragment);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(text)
    }

    fn fragment(&mut self, fragment: ToolCallDelta) {
        let Some(at) = self.slot_for(&fragment) else {
            self.dropped_fragments = self.dropped_fragments.saturating_add(1);
            return;
        };
        let Some(call) = self.calls.get_mut(at) else {
            return;
        };
        if call.id.is_none() {
            call.id = fragment.id.filter(|id| !id.is_empty());
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                // Some servers repeat the whole name in later fragments; others split it.
                if call.name != name {
                    call.name.push_str(&name);
                }
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        self.last = Some(at);
    }

    /// Which call a fragment belongs to; `None` when it would open one past the bound.
    fn slot_for(&mut self, fragment: &ToolCallDelta) -> Option<usize> {
        if let Some(index) = fragment.index {
            if let Some(at) = self.calls.iter().position(|c| c.index == index) {
                return Some(at);
            }
            return self.open(index);
        }
        // No index: an id names its call; a new id opens a new call; no id continues the last.
        if let Some(id) = fragment.id.as_deref().filter(|id| !id.is_empty()) {
            if let Some(at) = self.calls.iter().position(|c| c.id.as_deref() == Some(id)) {
                return Some(at);
            }
            let last_has_other_id = self.last.is_none_or(|at| {
                self.calls
                    .get(at)
                    .and_then(|c| c.id.as_deref())
                    .is_some_and(|other| other != id)
            });
            if last_has_other_id {
                // Saturating: a server may have used index usize::MAX already.
                let next = self.calls.iter().map(|c| c.index.saturating_add(1)).max();
                return self.open(next.unwrap_or(0));
            }
        }
        match self.last {
            Some(at) => Some(at),
            None => self.open(0),
        }
    }

    /// A new call at `index`, unless the pass already has [`MAX_CALLS_PER_PASS`]. Only the
    /// index is kept, so an index of 4 000 000 000 costs what an index of 1 does.
    fn open(&mut self, index: usize) -> Option<usize> {
        if self.calls.len() >= MAX_CALLS_PER_PASS {
            return None;
        }
        self.calls.push(Partial {
            index,
            ..Partial::default()
        });
        Some(self.calls.len().saturating_sub(1))
    }

    /// The end of the pass.
    pub fn end(mut self, call_prefix: &str) -> ModelEvent {
        let finish = match self.finish.as_deref() {
            None => Finish::Missing,
            Some("stop") => Finish::Stop,
            Some("tool_calls" | "function_call") => Finish::ToolCalls,
            Some("length") => Finish::Length,
            Some(other) => Finish::Other(other.to_owned()),
        };
        let truncated = match finish {
            Finish::Length => Some(Truncation::Length),
            Finish::Missing => Some(Truncation::StreamEnded),
            _ if self.unreadable_chunks > 0 => Some(Truncation::UnreadableChunk),
            _ => None,
        };
        if self.dropped_fragments > 0 {
            tracing::warn!(
                dropped = self.dropped_fragments,
                "fragments of calls past {MAX_CALLS_PER_PASS} in one pass were dropped"
            );
        }
        self.calls.sort_by_key(|c| c.index);
        let mut used = HashSet::new();
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(n, c)| ToolCallRequest {
                id: unique_id(&mut used, c.id, call_prefix, n),
                name: c.name,
                arguments: c.arguments,
                truncated,
            })
            .collect();
        ModelEvent::End {
            tool_calls,
            finish,
            usage: self.usage,
        }
    }
}

/// A call id not yet used in this pass: the server's, else one made from the prefix. Two calls
/// of one answer must not share an id, or their results could not be told apart.
fn unique_id(used: &mut HashSet<String>, given: Option<String>, prefix: &str, n: usize) -> String {
    let mut id = given
        .filter(|id| !used.contains(id))
        .unwrap_or_else(|| format!("{prefix}_{n}"));
    // Ends: `used` holds at most MAX_CALLS_PER_PASS ids, and each turn makes the id longer.
    while used.contains(&id) {
        id.push('_');
    }
    used.insert(id.clone());
    id
}

/// Maps an async-openai error to a classified model error.
pub fn model_error(error: async_openai::error::OpenAIError) -> ModelError {
    use async_openai::error::OpenAIError;
    match error {
        OpenAIError::ApiError(response) => {
            let api = &response.api_error;
            let status = response.status_code.as_u16();
            let report = ErrorReport {
                status: Some(status),
                message: &api.message,
                kind: api.r#type.as_deref(),
                code: api.code.as_deref(),
                param: api.param.as_deref(),
            };
            ModelError::new(report.class(), Some(status), response.to_string())
        }
        OpenAIError::Reqwest(e) => {
            // The endpoint's URL stays out of logs and the thought log.
            let e = e.without_url();
            let class = if e.is_timeout() {
                FailureClass::Timeout
            } else {
                classify(e.status().map(|s| s.as_u16()), &e.to_string())
            };
            ModelError::new(class, e.status().map(|s| s.as_u16()), e.to_string())
        }
        OpenAIError::JSONDeserialize(e, content) => {
            ModelError::new(classify(None, &content), None, format!("{e}: {content}"))
        }
        other => {
            let text = other.to_string();
            ModelError::new(classify(None, &text), None, text)
        }
    }
}

/// Maps an error that ended a stream: the transport's report names the bound that cut it (the
/// error itself lost that on the way), else the error is classified as usual.
pub fn stream_error(error: async_openai::error::OpenAIError, report: &CutReport) -> ModelError {
    match report.get() {
        Some(cut) => cut_error(cut),
        None => model_error(error),
    }
}

fn cut_error(cut: Cut) -> ModelError {
    ModelError::new(FailureClass::ReplyTooLong, None, cut.to_string())
}

type ChunkResult = Result<Chunk, async_openai::error::OpenAIError>;

/// One pass's event stream, while it runs.
struct Events {
    chunks: BoxStream<'static, ChunkResult>,
    first: Option<ChunkResult>,
    /// `None` once the pass has ended (its end or an error was yielded).
    assembler: Option<Assembler>,
    /// Text of the last chunk not yielded yet.
    pending: std::collections::VecDeque<String>,
    idle: Duration,
    prefix: String,
    /// Set by the transport when a bound cut the body: the pass fails at once, without
    /// delivering chunks still queued.
    report: Arc<CutReport>,
}

impl Events {
    /// Ends the pass with `error`.
    fn fail(&mut self, error: ModelError) -> Option<Result<ModelEvent, ModelError>> {
        self.assembler = None;
        Some(Err(error))
    }

    /// The next event; `None` after the end.
    async fn next_event(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            self.assembler.as_ref()?;
            if let Some(cut) = self.report.get() {
                return self.fail(cut_error(cut));
            }
            if let Some(text) = self.pending.pop_front() {
                return Some(Ok(ModelEvent::Text(text)));
            }
            let next = match self.first.take() {
                Some(first) => Some(first),
                None => match tokio::time::timeout(self.idle, self.chunks.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        let detail = format!("no chunk for {:?}", self.idle);
                        return self.fail(ModelError::new(FailureClass::Timeout, None, detail));
                    }
                },
            };
            let assembler = self.assembler.as_mut()?;
            match next {
                Some(Ok(chunk)) => match assembler.take(chunk) {
                    Ok(texts) => self.pending.extend(texts),
                    Err(error) => return self.fail(error),
                },
                Some(Err(async_openai::error::OpenAIError::JSONDeserialize(e, content))) => {
                    // A chunk we cannot read at all: skipped, the stream goes on, and any tool
                    // call of the pass is flagged (its arguments may miss a piece, SPEC T3).
                    tracing::warn!(%e, content = %content.chars().take(200).collect::<String>(), "unreadable stream chunk skipped");
                    assembler.unreadable_chunks = assembler.unreadable_chunks.saturating_add(1);
                }
                Some(Err(error)) => {
                    let error = stream_error(error, &self.report);
                    return self.fail(error);
                }
                None => return Some(Ok(self.assembler.take()?.end(&self.prefix))),
            }
        }
    }
}

/// Wraps a chunk stream into the pass's event stream, with the idle timeout between chunks.
/// (The first-token timeout covers the request and the first chunk; see the provider.)
pub fn events(
    chunks: BoxStream<'static, ChunkResult>,
    first: Option<ChunkResult>,
    idle: Duration,
    call_prefix: String,
    report: Arc<CutReport>,
) -> ModelStream {
    let state = Events {
        chunks,
        first,
        assembler: Some(Assembler::default()),
        pending: Default::default(),
        idle,
        prefix: call_prefix,
        report,
    };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        let event = s.next_event().await?;
        Some((event, s))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(raw: &str) -> Chunk {
        serde_json::from_str(raw).expect("chunk")
    }

    fn calls(event: ModelEvent) -> (Vec<ToolCallRequest>, Finish) {
        match event {
            ModelEvent::End {
                tool_calls, finish, ..
            } => (tool_calls, finish),
            other => panic!("{other:?}"),
        }
    }

    // SPEC T3, C9: fragments join by index; the id comes from the first fragment.
    #[test]
    fn fragments_join_by_index_with_the_first_id() {
        let mut a = Assembler::default();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"plan_image","arguments":"{\"pro"}}]}}]}"#)).unwrap();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"recall_facts","arguments":"{}"}}]}}]}"#)).unwrap();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"mpt\":\"fox\"}"}}]}}]}"#)).unwrap();
        a.take(chunk(
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ))
        .unwrap();
        let (calls, finish) = calls(a.end("x"));
        assert_eq!(finish, Finish::ToolCalls);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("call_a", "plan_image")
        );
        assert_eq!(calls[0].arguments, r#"{"prompt":"fox"}"#);
        assert_eq!(calls[0].truncated, None);
        assert_eq!(calls[1].name, "recall_facts");
    }

    // Servers that leave out `index`: fragments without an id continue the last call.
    #[test]
    fn fragments_without_index_join_by_id_and_position() {
        let mut a = Assembler::default();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"t","arguments":"{\"a\":"}}]}}]}"#)).unwrap();
        a.take(chunk(
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
        ))
        .unwrap();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"id":"c2","function":{"name":"u","arguments":"{}"}}]}}]}"#)).unwrap();
        a.take(chunk(r#"{"choices":[{"finish_reason":"stop"}]}"#))
            .unwrap();
        let (calls, finish) = calls(a.end("x"));
        assert_eq!(
            finish,
            Finish::Stop,
            "some servers end tool calls with stop"
        );
        assert_eq!(calls.len(), 2, "decided from the fragments");
        assert_eq!(calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(calls[1].id, "c2");
    }

    // SPEC T3: `length` and a missing finish reason flag the arguments as truncated.
    #[test]
    fn length_or_missing_finish_flags_truncation() {
        for (finish, flag) in [
            (Some("length"), Some(Truncation::Length)),
            (None, Some(Truncation::StreamEnded)),
            (Some("eos_token"), None),
            (Some(""), None),
        ] {
            let mut a = Assembler::default();
            a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"t","arguments":"{\"a\":"}}]}}]}"#)).unwrap();
            if let Some(f) = finish {
                a.take(chunk(&format!(
                    r#"{{"choices":[{{"finish_reason":"{f}"}}]}}"#
                )))
                .unwrap();
            }
            let (calls, _) = calls(a.end("gen"));
            assert_eq!(calls[0].truncated, flag, "{finish:?}");
            assert_eq!(calls[0].id, "gen_0", "an id is made up when none came");
        }
    }

    // SPEC T3: a chunk that cannot be read is skipped, but the pass's tool call is flagged: the
    // joined arguments are valid JSON yet miss whatever that chunk carried. The first chunk is
    // handled like any other.
    #[tokio::test]
    async fn an_unreadable_chunk_flags_the_call_as_truncated() {
        use async_openai::error::OpenAIError;
        let unreadable = || {
            let error = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
            Err(OpenAIError::JSONDeserialize(error, "{garbage".into()))
        };
        let rest = vec![
            Ok(chunk(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"plan_image","arguments":"{\"prompt\":\"a red "}}]}}]}"#,
            )),
            unreadable(),
            Ok(chunk(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}}]}"#,
            )),
            Ok(chunk(
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            )),
        ];
        let stream = events(
            futures::stream::iter(rest).boxed(),
            Some(unreadable()),
            Duration::from_secs(5),
            "x".into(),
            Arc::default(),
        );
        let events: Vec<_> = stream.collect().await;
        let last = events
            .into_iter()
            .last()
            .expect("an end")
            .expect("no error");
        let (calls, _) = calls(last);
        assert_eq!(calls[0].arguments, r#"{"prompt":"a red "}"#, "valid JSON");
        assert_eq!(calls[0].truncated, Some(Truncation::UnreadableChunk));
    }

    // Once the transport reports a cut, the pass fails at once: chunks still queued behind the cut
    // are not delivered.
    #[tokio::test]
    async fn a_cut_stream_fails_before_its_queued_chunks() {
        let report = Arc::new(CutReport::default());
        let queued = vec![Ok(chunk(r#"{"choices":[{"delta":{"content":"late"}}]}"#))];
        let mut stream = events(
            futures::stream::iter(queued).boxed(),
            Some(Ok(chunk(r#"{"choices":[{"delta":{"content":"early"}}]}"#))),
            Duration::from_secs(5),
            "x".into(),
            report.clone(),
        );
        assert_eq!(
            stream.next().await,
            Some(Ok(ModelEvent::Text("early".into())))
        );
        report.set(Cut::Bytes(10));
        let error = stream.next().await.expect("an event").unwrap_err();
        assert_eq!(error.class, FailureClass::ReplyTooLong);
        assert!(error.detail.contains("10 bytes"), "{}", error.detail);
        assert_eq!(stream.next().await, None);
    }

    #[test]
    fn a_repeated_full_name_is_not_doubled() {
        let mut a = Assembler::default();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"plan_image"}}]}}]}"#)).unwrap();
        a.take(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"plan_image","arguments":"{}"}}]}}]}"#)).unwrap();
        let (calls, _) = calls(a.end("x"));
        assert_eq!(calls[0].name, "plan_image");
    }

    #[test]
    fn in_stream_errors_are_classified() {
        let mut a = Assembler::default();
        let error = a
            .take(chunk(r#"{"error":{"message":"Overloaded","code":529}}"#))
            .unwrap_err();
        assert_eq!(error.class, FailureClass::ServerError);
    }
}
