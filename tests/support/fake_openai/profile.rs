//! Server profiles: the scripted replies rendered on the wire as the model servers self-hosters
//! run would send them: llama.cpp's `llama-server`, Ollama's OpenAI-compatible
//! `/v1/chat/completions`, and vLLM's OpenAI-compatible server. A script is written once, with
//! [`Sse`] steps shaped like OpenAI's; the profile changes the chunks' envelopes, the first
//! chunk, how tool calls are cut and named, and the usage chunk. Steps other than chunks (raw
//! lines, delays, hangs, aborts) and chunks without `choices` (an in-stream error) go as they are.
//!
//! Facts from each server's code: llama.cpp `tools/server/server-task.cpp` (chunks, tool-call
//! diffs, usage and `timings`), `server-common.cpp` (`format_error_response`, `random_string`),
//! `server-context.cpp` (the context check, errors inside a stream); Ollama `openai/openai.go`
//! and `middleware/openai.go`; vLLM `entrypoints/openai/serving_chat.py` and
//! `serving_engine.py`.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::Rng;
use serde_json::{Value, json};

use super::{Reply, Sse};

/// The server a [`super::FakeOpenAi`] speaks as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profile {
    /// OpenAI itself: every scripted step is sent as written.
    #[default]
    OpenAi,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// Ollama's OpenAI-compatible endpoint, as releases before 0.4.7 send it: tool calls
    /// without `index` (ollama/ollama#7881).
    Ollama,
    /// vLLM's OpenAI-compatible server.
    Vllm,
}

/// What rendering needs to know of the request.
pub(super) struct Asked {
    pub model: String,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// A rough count of the request's tokens, for the usage a profile adds.
    pub prompt_tokens: u32,
}

impl Asked {
    pub fn of(body: &Value) -> Self {
        Self {
            model: body["model"].as_str().unwrap_or_default().to_owned(),
            include_usage: body["stream_options"]["include_usage"] == true,
            prompt_tokens: u32::try_from(body["messages"].to_string().len() / 4)
                .unwrap_or(u32::MAX),
        }
    }
}

/// `steps` as `profile`'s server sends them, and the tool-call ids it made up on the way.
pub(super) fn render(profile: Profile, steps: Vec<Sse>, asked: Asked) -> (Vec<Sse>, Vec<String>) {
    if profile == Profile::OpenAi {
        return (steps, Vec::new());
    }
    let mut r = Renderer::new(profile, asked);
    for step in steps {
        r.step(step);
    }
    r.flush();
    (r.out, r.wire_ids)
}

/// One call of a tool-call fragment, or (Ollama) a whole call gathered from its fragments.
#[derive(Debug, Default)]
struct Call {
    index: Option<u64>,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

impl Call {
    fn of(fragment: &Value) -> Self {
        Self {
            index: fragment["index"].as_u64(),
            id: fragment["id"].as_str().map(str::to_owned),
            name: fragment["function"]["name"].as_str().map(str::to_owned),
            arguments: fragment["function"]["arguments"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// It starts a call rather than continuing one.
    fn opens(&self) -> bool {
        self.id.is_some() || self.name.is_some()
    }
}

struct Renderer {
    profile: Profile,
    asked: Asked,
    /// The stream's id, in every chunk.
    id: String,
    created: u64,
    /// The first chunk (the role) was sent.
    started: bool,
    usage_sent: bool,
    completion_tokens: u32,
    /// The call index the last fragment went to, and the next free one.
    last_index: u64,
    next_index: u64,
    /// Scripted call id -> the id sent.
    ids: HashMap<String, String>,
    wire_ids: Vec<String>,
    /// Ollama: calls gathered whole, sent at the next step that is not a fragment.
    pending: Vec<Call>,
    out: Vec<Sse>,
}

impl Renderer {
    fn new(profile: Profile, asked: Asked) -> Self {
        let id = match profile {
            // llama.cpp: gen_chatcmplid(), "chatcmpl-" and random_string() (32 letters/digits).
            Profile::LlamaCpp => format!("chatcmpl-{}", alphanumeric(32)),
            // Ollama: fmt.Sprintf("chatcmpl-%d", rand.Intn(999)).
            Profile::Ollama => format!("chatcmpl-{}", rand::rng().random_range(0..999)),
            // vLLM: "chatcmpl-" and a uuid4's hex.
            _ => format!("chatcmpl-{:032x}", rand::random::<u128>()),
        };
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            profile,
            asked,
            id,
            created,
            started: false,
            usage_sent: false,
            completion_tokens: 0,
            last_index: 0,
            next_index: 0,
            ids: HashMap::new(),
            wire_ids: Vec::new(),
            pending: Vec::new(),
            out: Vec::new(),
        }
    }

    fn step(&mut self, step: Sse) {
        match step {
            Sse::Data(value) if value.get("choices").is_some() => self.chunk(&value),
            Sse::Done => {
                self.flush();
                if self.asked.include_usage && !self.usage_sent {
                    let prompt = self.asked.prompt_tokens;
                    self.usage(prompt, self.completion_tokens);
                }
                self.out.push(Sse::Done);
            }
            other => {
                self.flush();
                self.out.push(other);
            }
        }
    }

    fn chunk(&mut self, value: &Value) {
        let choices = value["choices"].as_array().cloned().unwrap_or_default();
        if choices.is_empty() {
            self.flush();
            let count = |key: &str| {
                u32::try_from(value["usage"][key].as_u64().unwrap_or(0)).unwrap_or(u32::MAX)
            };
            self.usage(count("prompt_tokens"), count("completion_tokens"));
            return;
        }
        self.start();
        for choice in choices {
            let delta = &choice["delta"];
            for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
                self.fragment(Call::of(fragment));
            }
            if let Some(text) = delta["content"].as_str() {
                self.flush();
                self.text(text);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.flush();
                self.finish(reason);
            }
        }
    }

    /// llama.cpp and vLLM open a stream with the role alone; every Ollama chunk carries it.
    fn start(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let delta = match self.profile {
            // llama.cpp: "We have to send an initial update to conform to openai behavior".
            Profile::LlamaCpp => json!({"role": "assistant", "content": null}),
            // vLLM: DeltaMessage(role=role, content="").
            Profile::Vllm => json!({"role": "assistant", "content": ""}),
            _ => return,
        };
        self.send(delta, None);
    }

    fn text(&mut self, text: &str) {
        self.completion_tokens = self.completion_tokens.saturating_add(1);
        let delta = match self.profile {
            Profile::Ollama => json!({"role": "assistant", "content": text}),
            _ => json!({"content": text}),
        };
        self.send(delta, None);
    }

    fn finish(&mut self, reason: &str) {
        let delta = match self.profile {
            Profile::Ollama => json!({"role": "assistant", "content": ""}),
            _ => json!({}),
        };
        self.send(delta, Some(reason));
    }

    fn fragment(&mut self, call: Call) {
        self.completion_tokens = self.completion_tokens.saturating_add(1);
        if self.profile == Profile::Ollama {
            self.gather(call);
            return;
        }
        let index = if call.opens() {
            let index = call.index.unwrap_or(self.next_index);
            self.next_index = self.next_index.max(index.saturating_add(1));
            index
        } else {
            call.index.unwrap_or(self.last_index)
        };
        self.last_index = index;
        if call.opens() {
            let mut head = json!({"index": index, "id": self.wire_id(call.id.as_deref()),
                "type": "function", "function": {}});
            if let Some(name) = &call.name {
                head["function"]["name"] = json!(name);
            }
            // llama.cpp always sends `arguments`, "" with the name; vLLM leaves it out.
            if self.profile == Profile::LlamaCpp {
                head["function"]["arguments"] = json!("");
            }
            self.send(json!({"tool_calls": [head]}), None);
        }
        // Both stream the arguments in pieces as the model writes them.
        for piece in pieces(&call.arguments, 3) {
            let part = json!({"index": index, "function": {"arguments": piece}});
            self.send(json!({"tool_calls": [part]}), None);
        }
    }

    /// Ollama: fragments joined into whole calls (by index, else id, else the last call).
    fn gather(&mut self, call: Call) {
        let same = self.pending.iter().position(|p| {
            (call.index.is_some() && p.index == call.index)
                || (call.id.is_some() && p.id == call.id)
        });
        let at = match same {
            Some(at) => at,
            None if call.opens() || self.pending.is_empty() => {
                self.pending.push(Call {
                    index: call.index,
                    id: call.id.clone(),
                    ..Call::default()
                });
                self.pending.len() - 1
            }
            None => self.pending.len() - 1,
        };
        let whole = &mut self.pending[at];
        if whole.name.is_none() {
            whole.name = call.name;
        }
        whole.arguments.push_str(&call.arguments);
    }

    /// Ollama: each gathered call in one chunk, whole, with no `index` (ToolCall had none
    /// before 0.4.7), its id `call_` and 8 letters/digits.
    fn flush(&mut self) {
        for call in std::mem::take(&mut self.pending) {
            let id = self.wire_id(call.id.as_deref());
            let whole = json!({"id": id, "type": "function", "function": {
                "name": call.name.unwrap_or_default(), "arguments": call.arguments}});
            let delta = json!({"role": "assistant", "content": "", "tool_calls": [whole]});
            self.send(delta, None);
        }
    }

    /// The id sent for a scripted id (the same for every fragment of the call), made up the
    /// way the server makes its own.
    fn wire_id(&mut self, scripted: Option<&str>) -> String {
        if let Some(id) = scripted.and_then(|s| self.ids.get(s)) {
            return id.clone();
        }
        let id = match self.profile {
            // llama.cpp: random_string(), no prefix.
            Profile::LlamaCpp => alphanumeric(32),
            // Ollama: "call_" and 8 lowercase letters or digits.
            Profile::Ollama => format!("call_{}", alphanumeric(8).to_lowercase()),
            // vLLM: random_tool_call_id(), "chatcmpl-tool-" and a uuid4's hex.
            _ => format!("chatcmpl-tool-{:032x}", rand::random::<u128>()),
        };
        if let Some(scripted) = scripted {
            self.ids.insert(scripted.to_owned(), id.clone());
        }
        self.wire_ids.push(id.clone());
        id
    }

    fn usage(&mut self, prompt: u32, completion: u32) {
        self.usage_sent = true;
        let total = prompt.saturating_add(completion);
        let mut chunk = self.envelope(Vec::new());
        chunk["usage"] = json!({"completion_tokens": completion, "prompt_tokens": prompt,
            "total_tokens": total});
        if self.profile == Profile::LlamaCpp {
            chunk["timings"] = timings(prompt, completion);
        }
        self.out.push(Sse::Data(chunk));
    }

    /// One chunk of one choice.
    fn send(&mut self, delta: Value, finish: Option<&str>) {
        let mut choice = json!({"index": 0, "delta": delta, "finish_reason": finish});
        if self.profile == Profile::Vllm {
            choice["logprobs"] = Value::Null;
            if finish.is_some() {
                choice["stop_reason"] = Value::Null;
            }
        }
        let mut chunk = self.envelope(vec![choice]);
        // llama.cpp puts `timings` on the last chunk: the usage chunk, else the finish.
        if self.profile == Profile::LlamaCpp && finish.is_some() && !self.asked.include_usage {
            chunk["timings"] = timings(self.asked.prompt_tokens, self.completion_tokens);
        }
        self.out.push(Sse::Data(chunk));
    }

    /// What every chunk of the stream carries around its choices.
    fn envelope(&self, choices: Vec<Value>) -> Value {
        let mut chunk = json!({"id": self.id, "object": "chat.completion.chunk",
            "created": self.created, "model": self.asked.model, "choices": choices});
        match self.profile {
            // llama.cpp: its build number and commit.
            Profile::LlamaCpp => chunk["system_fingerprint"] = json!("b6097-9515c613"),
            Profile::Ollama => chunk["system_fingerprint"] = json!("fp_ollama"),
            _ => {}
        }
        chunk
    }
}

/// llama.cpp's `timings` object (result_timings::to_json).
fn timings(prompt: u32, predicted: u32) -> Value {
    let (prompt_ms, predicted_ms) = (f64::from(prompt) * 0.2, f64::from(predicted) * 4.0);
    let per = |ms: f64, n: u32| if n == 0 { 0.0 } else { ms / f64::from(n) };
    let rate = |ms: f64, n: u32| {
        if ms == 0.0 {
            0.0
        } else {
            1e3 * f64::from(n) / ms
        }
    };
    json!({"cache_n": 0, "prompt_n": prompt, "prompt_ms": prompt_ms,
        "prompt_per_token_ms": per(prompt_ms, prompt), "prompt_per_second": rate(prompt_ms, prompt),
        "predicted_n": predicted, "predicted_ms": predicted_ms,
        "predicted_per_token_ms": per(predicted_ms, predicted),
        "predicted_per_second": rate(predicted_ms, predicted)})
}

/// `n` random letters and digits.
fn alphanumeric(n: usize) -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// `text` cut into at most `n` non-empty pieces, at character boundaries.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The real error bodies of each server. Each names where the wording comes from.
impl Reply {
    /// The answer to a request naming a model the server does not serve.
    pub fn model_not_found(profile: Profile, model: &str) -> Reply {
        let (status, body) = match profile {
            // OpenAI: 404, code `model_not_found`.
            Profile::OpenAi => (
                404,
                json!({"error": {
                "message": format!("The model `{model}` does not exist or you do not have access to it."),
                "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
            ),
            // llama.cpp in router mode (`--models-preset`; a single-model llama-server answers
            // any name): 400, and the message names no model (tools/server, the router's
            // check of the requested model: "model not found", ERROR_TYPE_INVALID_REQUEST).
            Profile::LlamaCpp => (
                400,
                json!({"error": {
                "code": 400, "message": "model not found", "type": "invalid_request_error"}}),
            ),
            // Ollama: 404, the handler's "model %q not found, try pulling it first" in the
            // OpenAI middleware's error (type `api_error`, `param` and `code` null).
            Profile::Ollama => (
                404,
                json!({"error": {
                "message": format!("model \"{model}\" not found, try pulling it first"),
                "type": "api_error", "param": null, "code": null}}),
            ),
            // vLLM: 404, an ErrorResponse at the top level, not under "error"
            // (serving_engine.py, _check_model).
            Profile::Vllm => (
                404,
                json!({"object": "error",
                "message": format!("The model `{model}` does not exist."),
                "type": "NotFoundError", "param": null, "code": 404}),
            ),
        };
        Reply::Status(status, body.to_string())
    }

    /// The answer to a prompt of `prompt_tokens` that does not fit a context of `n_ctx` with
    /// `max_tokens` (the request's completion budget) on top. `None` for Ollama, which never
    /// refuses one: it keeps the end of the prompt that fits `num_ctx` and answers.
    pub fn context_full(
        profile: Profile,
        prompt_tokens: u32,
        max_tokens: u32,
        n_ctx: u32,
    ) -> Option<Reply> {
        let requested = prompt_tokens.saturating_add(max_tokens);
        let body = match profile {
            // OpenAI: 400, code `context_length_exceeded`.
            Profile::OpenAi => json!({"error": {"message": format!(
                "This model's maximum context length is {n_ctx} tokens. However, you requested \
                 {requested} tokens ({prompt_tokens} in the messages, {max_tokens} in the \
                 completion). Please reduce the length of the messages or completion."),
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}}),
            // llama.cpp: 400, ERROR_TYPE_EXCEED_CONTEXT_SIZE with both counts; the prompt alone
            // is checked (tools/server/server-context.cpp; server-task.cpp, the error's to_json).
            Profile::LlamaCpp => json!({"error": {"code": 400, "message": format!(
                "request ({prompt_tokens} tokens) exceeds the available context size ({n_ctx} \
                 tokens), try increasing it"),
                "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens,
                "n_ctx": n_ctx}}),
            Profile::Ollama => return None,
            // vLLM: 400, a top-level ErrorResponse with the ValueError of _validate_input
            // (serving_engine.py), the form for a request that sets max_tokens.
            Profile::Vllm => json!({"object": "error", "message": format!(
                "This model's maximum context length is {n_ctx} tokens. However, you requested \
                 {requested} tokens ({prompt_tokens} in the messages, {max_tokens} in the \
                 completion). Please reduce the length of the messages or completion."),
                "type": "BadRequestError", "param": null, "code": 400}),
        };
        Some(Reply::Status(400, body.to_string()))
    }

    /// llama.cpp failing inside a stream: `text`, then the error llama_decode's failure sends
    /// ("Compute error.", see [`Reply::stream_error_after_with`]).
    pub fn stream_error_after(text: &str) -> Reply {
        Reply::stream_error_after_with(text, "Compute error.")
    }

    /// llama.cpp failing inside a stream: `text`, then `data: {"error": ...}` with `message`
    /// (type `server_error`, code 500), and the stream ends: no finish_reason, no `[DONE]`
    /// (tools/server/server-context.cpp: an error result mid-stream is sent as
    /// format_oai_sse({"error": ...}) and ends the stream). llama_decode's failures say
    /// "Context size has been exceeded.", "Invalid input batch." or "Compute error.".
    pub fn stream_error_after_with(text: &str, message: &str) -> Reply {
        Reply::Stream(vec![
            Sse::text(text),
            Sse::Data(json!({"error": {"code": 500, "message": message, "type": "server_error"}})),
        ])
    }
}
