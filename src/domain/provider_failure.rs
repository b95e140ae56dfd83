//! Classification of provider failures (LLM and media backends), shared by the provider client
//! (SPEC C11), the tool failure builder (SPEC T8) and the user-facing error replies.
//!
//! The provider's message is read before its HTTP status: providers answer an exhausted balance
//! with 429 and report safety refusals as invalid requests (400), so the status alone misleads.

use crate::locale::{self, Locale};

/// What went wrong, in terms a user, a moderator and the model can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    RateLimited,
    InsufficientBalance,
    Unauthorized,
    ModelUnknown,
    ContextTooLong,
    SafetyRefusal,
    InvalidRequest,
    MissingModelFile,
    Timeout,
    ServerError,
    Network,
    /// The streamed answer went past the size or time bound of one reply (a runaway server).
    ReplyTooLong,
}

/// Where a failed pass may go next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Another key (of the same model, then the next model).
    NextKey,
    /// Any further attempt: the failure was passing (server error, timeout, network).
    NextAttempt,
    /// Another model: this one cannot take the request.
    NextModel,
    /// Nothing else would answer differently (safety refusal, invalid request).
    No,
}

/// A failure reported by a provider-backed tool or call. `message` is the provider's raw text: it
/// is read by the classifier and never copied into model history or a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderFailure {
    /// HTTP status, `None` when no response arrived (network failure, timeout).
    pub status: Option<u16>,
    /// The provider's error text, for classification only.
    pub message: String,
    /// For ComfyUI: the model file name the workflow sent. The only value a failure reason may
    /// name, because it is ours, not the endpoint's.
    pub workflow_model_file: Option<String>,
}

impl ProviderFailure {
    pub fn class(&self) -> FailureClass {
        if let Some(file) = &self.workflow_model_file
            && !file.is_empty()
            && mentions_missing_model_file(&self.message)
        {
            return FailureClass::MissingModelFile;
        }
        classify(self.status, &self.message)
    }

    /// The reason given to the model: a fixed sentence per class, plus the workflow's own file
    /// name for a missing model file. Nothing from the provider's text.
    pub fn model_reason(&self) -> String {
        match (self.class(), &self.workflow_model_file) {
            (FailureClass::MissingModelFile, Some(file)) => {
                format!(
                    "The image backend does not have the model file `{file}` the workflow uses."
                )
            }
            (class, _) => class.model_reason().to_owned(),
        }
    }
}

const BALANCE: &[&str] = &[
    "insufficient_quota",
    "insufficient balance",
    "insufficient_balance",
    "insufficient funds",
    "insufficient credits",
    "exceeded your current quota",
    "credit balance",
    "out of credits",
    "billing",
    "payment required",
    "余额不足",
    "残高",
];
const SAFETY: &[&str] = &[
    "content_policy",
    "content policy",
    "content_filter",
    "content filter",
    "safety",
    "moderation",
    "flagged",
    "nsfw",
    "responsible ai",
    "request was refused",
    "refused to generate",
];
const CONTEXT: &[&str] = &[
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
];
const MODEL_UNKNOWN: &[&str] = &[
    "model_not_found",
    "model not found",
    "unknown model",
    "no such model",
    "invalid model",
    "model does not exist",
    "is not a valid model",
];
const RATE: &[&str] = &[
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "slow down",
];
const TIMEOUT: &[&str] = &["timed out", "timeout", "deadline exceeded"];
const SERVER: &[&str] = &[
    "overloaded",
    "internal server error",
    "internal error",
    "bad gateway",
    "service unavailable",
    "upstream",
];
const NETWORK: &[&str] = &[
    "connection refused",
    "connection reset",
    "connection closed",
    "dns error",
    "error sending request",
    "broken pipe",
];
const MISSING_MODEL_FILE: &[&str] = &[
    "value not in list",
    "ckpt_name",
    "unet_name",
    "lora_name",
    "vae_name",
    "clip_name",
    "model file",
    "no such file",
    "file not found",
];

/// Values of an error's `type` or `code` field that say what happened whatever the message,
/// with the servers that send them. Generic values (`invalid_request_error`, `server_error`,
/// `api_error`, `BadRequestError`) are not here: the message and the status decide those.
const KNOWN_FIELDS: &[(&str, FailureClass, &str)] = &[
    (
        "insufficient_quota",
        FailureClass::InsufficientBalance,
        "OpenAI",
    ),
    ("invalid_api_key", FailureClass::Unauthorized, "OpenAI"),
    (
        "model_not_found",
        FailureClass::ModelUnknown,
        "OpenAI, LM Studio",
    ),
    (
        "context_length_exceeded",
        FailureClass::ContextTooLong,
        "OpenAI, vLLM",
    ),
    ("rate_limit_exceeded", FailureClass::RateLimited, "OpenAI"),
    (
        "content_filter",
        FailureClass::SafetyRefusal,
        "Azure OpenAI",
    ),
    (
        "exceed_context_size_error",
        FailureClass::ContextTooLong,
        "llama.cpp",
    ),
    (
        "authentication_error",
        FailureClass::Unauthorized,
        "llama.cpp",
    ),
    ("permission_error", FailureClass::Unauthorized, "llama.cpp"),
    (
        "unavailable_error",
        FailureClass::ServerError,
        "llama.cpp (a model still loading)",
    ),
    ("notfounderror", FailureClass::ModelUnknown, "vLLM"),
];

/// Phrases (regular expressions, matched on the lowercased message) of the model servers people
/// run, each with the server whose wording it is. Read before the general word lists below.
const KNOWN_PHRASES: &[(&str, FailureClass, &str)] = &[
    (
        r"model '[^']*' not found",
        FailureClass::ModelUnknown,
        "llama.cpp",
    ),
    (
        r"exceeds the available context size",
        FailureClass::ContextTooLong,
        "llama.cpp",
    ),
    (
        r"failed to parse tool call arguments",
        FailureClass::InvalidRequest,
        "llama.cpp",
    ),
    (r"loading model", FailureClass::ServerError, "llama.cpp"),
    (
        r"context size has been exceeded",
        FailureClass::ContextTooLong,
        "llama.cpp (in a stream)",
    ),
    (
        r#"model "[^"]*" not found"#,
        FailureClass::ModelUnknown,
        "Ollama",
    ),
    (
        r"try pulling it first",
        FailureClass::ModelUnknown,
        "Ollama",
    ),
    (
        r"the model `[^`]*` does not exist",
        FailureClass::ModelUnknown,
        "vLLM",
    ),
    (
        r"maximum context length is \d+ tokens",
        FailureClass::ContextTooLong,
        "OpenAI, vLLM, OpenRouter",
    ),
    (
        r"reduce the length of the (messages|input|prompt)",
        FailureClass::ContextTooLong,
        "vLLM, OpenAI",
    ),
    (
        r"is not a valid model id",
        FailureClass::ModelUnknown,
        "OpenRouter",
    ),
    (
        r"no endpoints found",
        FailureClass::ModelUnknown,
        "OpenRouter",
    ),
    (
        r"no models? (is |are )?loaded",
        FailureClass::ModelUnknown,
        "LM Studio",
    ),
    (
        r"model .{0,200}(is )?not (loaded|found)",
        FailureClass::ModelUnknown,
        "LM Studio",
    ),
    (
        r"context the overflows|greater than the context length",
        FailureClass::ContextTooLong,
        "LM Studio",
    ),
];

static PHRASES: std::sync::LazyLock<Vec<(regex::Regex, FailureClass)>> =
    std::sync::LazyLock::new(|| {
        KNOWN_PHRASES
            .iter()
            .filter_map(|(pattern, class, _)| Some((regex::Regex::new(pattern).ok()?, *class)))
            .collect()
    });

/// An error as a model server reported it: the HTTP status (for an error inside a stream, the
/// numeric `code` it carried) and its structured fields, each possibly absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrorReport<'a> {
    pub status: Option<u16>,
    pub message: &'a str,
    pub kind: Option<&'a str>,
    pub code: Option<&'a str>,
    pub param: Option<&'a str>,
}

impl ErrorReport<'_> {
    /// Decides by the structured fields, then the known servers' phrases, then the general
    /// words, then the status (see [`classify`]).
    pub fn class(&self) -> FailureClass {
        let known = |field: Option<&str>| {
            let field = field?.to_lowercase();
            KNOWN_FIELDS
                .iter()
                .find(|(value, _, _)| *value == field)
                .map(|(_, class, _)| *class)
        };
        if let Some(class) = known(self.kind).or_else(|| known(self.code)) {
            return class;
        }
        let message = self.message.to_lowercase();
        if let Some((_, class)) = PHRASES.iter().find(|(re, _)| re.is_match(&message)) {
            return *class;
        }
        // A request refused over its `model` parameter (LM Studio, LocalAI) names the model.
        if self.param == Some("model") && self.status.is_some_and(|s| (400..500).contains(&s)) {
            return FailureClass::ModelUnknown;
        }
        classify(self.status, &message)
    }
}

fn mentions(message: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| message.contains(n))
}

fn mentions_missing_model_file(message: &str) -> bool {
    mentions(&message.to_lowercase(), MISSING_MODEL_FILE)
}

/// Classifies a failure: the message first, then the HTTP status, then "network" when neither
/// says anything (no response at all).
pub fn classify(status: Option<u16>, message: &str) -> FailureClass {
    let message = message.to_lowercase();
    let by_message = [
        (BALANCE, FailureClass::InsufficientBalance),
        (SAFETY, FailureClass::SafetyRefusal),
        (CONTEXT, FailureClass::ContextTooLong),
        (MODEL_UNKNOWN, FailureClass::ModelUnknown),
        (RATE, FailureClass::RateLimited),
        (TIMEOUT, FailureClass::Timeout),
        (SERVER, FailureClass::ServerError),
        (NETWORK, FailureClass::Network),
    ];
    if let Some((_, class)) = by_message.iter().find(|(n, _)| mentions(&message, n)) {
        return *class;
    }
    match status {
        Some(429) => FailureClass::RateLimited,
        Some(402) => FailureClass::InsufficientBalance,
        Some(401 | 403) => FailureClass::Unauthorized,
        Some(404) => FailureClass::ModelUnknown,
        Some(413) => FailureClass::ContextTooLong,
        Some(408 | 504) => FailureClass::Timeout,
        Some(s) if s >= 500 => FailureClass::ServerError,
        Some(_) => FailureClass::InvalidRequest,
        None => FailureClass::Network,
    }
}

impl FailureClass {
    /// A stable, safe code for the model, logs and stats.
    pub fn code(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::InsufficientBalance => "insufficient_balance",
            Self::Unauthorized => "unauthorized",
            Self::ModelUnknown => "model_unknown",
            Self::ContextTooLong => "context_too_long",
            Self::SafetyRefusal => "safety_refusal",
            Self::InvalidRequest => "invalid_request",
            Self::MissingModelFile => "missing_model_file",
            Self::Timeout => "timeout",
            Self::ServerError => "server_error",
            Self::Network => "network_error",
            Self::ReplyTooLong => "reply_too_long",
        }
    }

    /// The fixed English reason given to the model.
    pub fn model_reason(self) -> &'static str {
        match self {
            Self::RateLimited => "The provider is rate limiting requests right now.",
            Self::InsufficientBalance => "The provider account has run out of balance or quota.",
            Self::Unauthorized => "The provider refused the configured credentials.",
            Self::ModelUnknown => "The provider does not know the configured model.",
            Self::ContextTooLong => "The request was too long for the model's context.",
            Self::SafetyRefusal => "The provider refused the request under its safety policy.",
            Self::InvalidRequest => "The provider rejected the request as invalid.",
            Self::MissingModelFile => "The image backend is missing a model file.",
            Self::Timeout => "The provider did not answer in time.",
            Self::ServerError => "The provider had an internal error.",
            Self::Network => "The provider could not be reached.",
            Self::ReplyTooLong => {
                "The provider's answer went past the size or time bound of one reply."
            }
        }
    }

    /// Whether the key itself is the problem: it cools down (key rotation, SPEC C11).
    pub fn rotates_key(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::InsufficientBalance | Self::Unauthorized
        )
    }

    /// What the next attempt of a pass may be after this failure (SPEC C11).
    pub fn retry(self) -> Retry {
        match self {
            Self::RateLimited | Self::InsufficientBalance | Self::Unauthorized => Retry::NextKey,
            Self::Timeout | Self::ServerError | Self::Network => Retry::NextAttempt,
            // A model that runs away once is likely to again, whichever key asks.
            Self::ModelUnknown | Self::ContextTooLong | Self::ReplyTooLong => Retry::NextModel,
            Self::SafetyRefusal | Self::InvalidRequest | Self::MissingModelFile => Retry::No,
        }
    }

    fn tip_keys(self) -> &'static [&'static str] {
        match self {
            Self::RateLimited => &["tip-rate-limited-wait"],
            Self::InsufficientBalance => &["tip-balance-top-up", "tip-balance-other-key"],
            Self::Unauthorized => &["tip-unauthorized-check-key"],
            Self::ModelUnknown => &["tip-model-unknown-check-name"],
            Self::ContextTooLong => &["tip-context-shorter"],
            Self::SafetyRefusal => &["tip-safety-rephrase"],
            Self::InvalidRequest => &["tip-invalid-request-rephrase"],
            Self::MissingModelFile => &["tip-missing-model-install"],
            Self::Timeout => &["tip-timeout-retry-later"],
            Self::ServerError => &["tip-server-error-retry-later"],
            Self::Network => &["tip-network-check-endpoint"],
            Self::ReplyTooLong => &["tip-reply-too-long-shorter"],
        }
    }
}

/// Localized recovery tips for a failure class: the same list the error replies show users and
/// the `suggested_actions` a failed media tool gives the model.
pub fn recovery_tips(class: FailureClass, locale: Locale) -> Vec<String> {
    class
        .tip_keys()
        .iter()
        .map(|key| locale::text(locale, key))
        .collect()
}

/// The one localized error a user sees when nothing is left to try: what happened, then what
/// can be done about it.
pub fn user_message(class: FailureClass, locale: Locale) -> String {
    let what = locale::text(locale, &format!("error-{}", class.code().replace('_', "-")));
    let mut lines = vec![locale::text_with(
        locale,
        "turn-provider-error",
        &[("reason", what)],
    )];
    lines.extend(
        recovery_tips(class, locale)
            .into_iter()
            .map(|tip| format!("- {tip}")),
    );
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC T8: the message is read before the status: an exhausted balance answered with 429 is
    // a balance problem, not a rate limit.
    #[test]
    fn exhausted_balance_with_429_is_classified_as_balance() {
        let class = classify(
            Some(429),
            "You exceeded your current quota, please check your plan and billing details.",
        );
        assert_eq!(class, FailureClass::InsufficientBalance);
        assert_eq!(
            classify(Some(429), "Too Many Requests"),
            FailureClass::RateLimited
        );
        assert_eq!(classify(Some(429), ""), FailureClass::RateLimited);
    }

    // SPEC T8: safety refusals reported as invalid requests are safety refusals.
    #[test]
    fn safety_refusal_reported_as_400_is_a_safety_refusal() {
        let class = classify(
            Some(400),
            "Your request was rejected as a result of our safety system.",
        );
        assert_eq!(class, FailureClass::SafetyRefusal);
        assert_eq!(
            classify(Some(400), "bad size"),
            FailureClass::InvalidRequest
        );
    }

    // SPEC C11: a refused connection is a network failure (retried elsewhere), not a safety
    // refusal (never retried).
    #[test]
    fn a_refused_connection_is_a_network_failure() {
        assert_eq!(
            classify(
                None,
                "error sending request: Connection refused (os error 111)"
            ),
            FailureClass::Network
        );
    }

    // SPEC C11: every class can be told apart.
    #[test]
    fn statuses_classify_when_the_message_says_nothing() {
        assert_eq!(classify(Some(401), ""), FailureClass::Unauthorized);
        assert_eq!(classify(Some(402), ""), FailureClass::InsufficientBalance);
        assert_eq!(classify(Some(404), ""), FailureClass::ModelUnknown);
        assert_eq!(classify(Some(413), ""), FailureClass::ContextTooLong);
        assert_eq!(classify(Some(503), ""), FailureClass::ServerError);
        assert_eq!(classify(Some(504), ""), FailureClass::Timeout);
        assert_eq!(classify(None, ""), FailureClass::Network);
        assert_eq!(
            classify(
                Some(400),
                "This model's maximum context length is 8192 tokens"
            ),
            FailureClass::ContextTooLong
        );
        assert_eq!(
            classify(
                Some(400),
                "The model `gpt-9` does not exist (model_not_found)"
            ),
            FailureClass::ModelUnknown
        );
    }

    /// Real error bodies of the servers people run (status, message, `type`, `code`), from their
    /// documentation or source, with the class each must get: llama.cpp (an unknown model in
    /// router mode, a full context, a history its template cannot parse, a model loading, an
    /// error event in a stream), Ollama, vLLM, OpenAI, OpenRouter and LM Studio.
    #[allow(clippy::type_complexity)]
    const SERVER_BODIES: &[(Option<u16>, &str, Option<&str>, Option<&str>, FailureClass)] = &[
        (
            Some(400),
            "model 'no-such-model' not found",
            Some("invalid_request_error"),
            None,
            FailureClass::ModelUnknown,
        ),
        (
            Some(400),
            "request (4568 tokens) exceeds the available context size (4096 tokens), try increasing it",
            Some("exceed_context_size_error"),
            Some("400"),
            FailureClass::ContextTooLong,
        ),
        (
            Some(500),
            "Failed to parse tool call arguments as JSON",
            Some("server_error"),
            Some("500"),
            FailureClass::InvalidRequest,
        ),
        (
            Some(500),
            "Context size has been exceeded.",
            Some("server_error"),
            Some("500"),
            FailureClass::ContextTooLong,
        ),
        (
            Some(503),
            "Loading model",
            Some("unavailable_error"),
            Some("503"),
            FailureClass::ServerError,
        ),
        (
            Some(500),
            "Internal server error",
            Some("server_error"),
            Some("500"),
            FailureClass::ServerError,
        ),
        (
            Some(404),
            "model \"llama3.2\" not found, try pulling it first",
            Some("api_error"),
            None,
            FailureClass::ModelUnknown,
        ),
        (
            Some(404),
            "The model `gpt-x` does not exist.",
            Some("NotFoundError"),
            Some("404"),
            FailureClass::ModelUnknown,
        ),
        (
            Some(400),
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            Some("BadRequestError"),
            Some("400"),
            FailureClass::ContextTooLong,
        ),
        (
            Some(404),
            "The model `gpt-9` does not exist or you do not have access to it.",
            Some("invalid_request_error"),
            Some("model_not_found"),
            FailureClass::ModelUnknown,
        ),
        (
            Some(429),
            "You exceeded your current quota.",
            Some("insufficient_quota"),
            Some("insufficient_quota"),
            FailureClass::InsufficientBalance,
        ),
        (
            Some(400),
            "openai/gpt-9 is not a valid model ID",
            None,
            Some("400"),
            FailureClass::ModelUnknown,
        ),
        (
            Some(404),
            "No endpoints found that support tool use.",
            None,
            Some("404"),
            FailureClass::ModelUnknown,
        ),
        (
            Some(400),
            "No models loaded. Please load a model in the developer page or use the `lms load` command.",
            Some("invalid_request_error"),
            None,
            FailureClass::ModelUnknown,
        ),
        (
            Some(400),
            "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.",
            None,
            None,
            FailureClass::ContextTooLong,
        ),
    ];

    // Each server's real error body gets the class that sends the bot to the right next step.
    #[test]
    fn the_servers_people_run_are_understood() {
        for &(status, message, kind, code, class) in SERVER_BODIES {
            let report = ErrorReport {
                status,
                message,
                kind,
                code,
                param: None,
            };
            assert_eq!(report.class(), class, "{report:?}");
        }
        let model_param = ErrorReport {
            status: Some(400),
            message: "Invalid value",
            param: Some("model"),
            ..ErrorReport::default()
        };
        assert_eq!(model_param.class(), FailureClass::ModelUnknown);
        assert_eq!(PHRASES.len(), KNOWN_PHRASES.len(), "every phrase compiles");
    }

    // SPEC T8: a missing ComfyUI model names the workflow's file, never the endpoint's text.
    #[test]
    fn missing_comfyui_model_names_only_the_workflow_file() {
        let failure = ProviderFailure {
            status: Some(400),
            message: "Prompt outputs failed validation: CheckpointLoaderSimple: Value not in \
                      list: ckpt_name: 'private/secret_model.safetensors' not in ['x.ckpt']"
                .into(),
            workflow_model_file: Some("sd_xl_base_1.0.safetensors".into()),
        };
        assert_eq!(failure.class(), FailureClass::MissingModelFile);
        let reason = failure.model_reason();
        assert!(reason.contains("sd_xl_base_1.0.safetensors"), "{reason}");
        assert!(!reason.contains("secret_model"), "{reason}");
        assert!(!reason.contains("x.ckpt"), "{reason}");
    }

    // SPEC T8: without a workflow file the same text is an ordinary invalid request.
    #[test]
    fn missing_model_text_without_a_workflow_file_is_not_named() {
        let failure = ProviderFailure {
            status: Some(400),
            message: "Value not in list: ckpt_name: 'a.safetensors'".into(),
            workflow_model_file: None,
        };
        assert_eq!(failure.class(), FailureClass::InvalidRequest);
        assert_eq!(
            failure.model_reason(),
            FailureClass::InvalidRequest.model_reason()
        );
    }

    // SPEC T8: tips are localized, and the same list serves the error UI and the model.
    #[test]
    fn recovery_tips_are_localized() {
        let en = recovery_tips(FailureClass::InsufficientBalance, Locale::En);
        let ja = recovery_tips(FailureClass::InsufficientBalance, Locale::Ja);
        assert_eq!(en.len(), 2);
        assert_eq!(ja.len(), 2);
        assert_ne!(en, ja);
        assert!(en.iter().all(|t| !t.starts_with("tip-")), "{en:?}");
    }

    // SPEC C11: the user's message is localized for every class, with its tips.
    #[test]
    fn user_messages_are_localized_for_every_class() {
        let all = [
            FailureClass::RateLimited,
            FailureClass::InsufficientBalance,
            FailureClass::Unauthorized,
            FailureClass::ModelUnknown,
            FailureClass::ContextTooLong,
            FailureClass::SafetyRefusal,
            FailureClass::InvalidRequest,
            FailureClass::MissingModelFile,
            FailureClass::Timeout,
            FailureClass::ServerError,
            FailureClass::Network,
            FailureClass::ReplyTooLong,
        ];
        for class in all {
            for locale in Locale::ALL {
                let message = user_message(class, locale);
                assert!(!message.contains("error-"), "{message}");
                assert!(message.lines().count() >= 2, "{message}");
            }
        }
        assert_ne!(
            user_message(FailureClass::Timeout, Locale::En),
            user_message(FailureClass::Timeout, Locale::ZhTw)
        );
    }

    #[test]
    fn rotation_and_fallback_policy_follow_the_class() {
        assert!(FailureClass::InsufficientBalance.rotates_key());
        assert!(!FailureClass::ServerError.rotates_key());
        assert_eq!(FailureClass::InsufficientBalance.retry(), Retry::NextKey);
        assert_eq!(FailureClass::ServerError.retry(), Retry::NextAttempt);
        assert_eq!(FailureClass::ModelUnknown.retry(), Retry::NextModel);
        assert_eq!(FailureClass::SafetyRefusal.retry(), Retry::No);
    }
}
