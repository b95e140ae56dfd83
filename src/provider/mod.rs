//! The OpenAI-compatible provider (OpenAI, OpenRouter, Ollama, llama.cpp, vLLM), on async-openai
//! with our own lenient wire types ([`wire`]), fragment assembly ([`assemble`]) and a no-retry
//! transport ([`transport`]): retries belong to the pass loop, which rotates keys and falls back
//! across models (SPEC C11). Keys cool down after a rate limit or a key failure.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_trait::async_trait;
use futures::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use tokio::time::Instant;

use crate::config::ProviderConfig;
use crate::domain::ports::{Attempt, ChatModel, ModelError, ModelRequest, ModelStream};
use crate::domain::provider_failure::FailureClass;
use transport::{CutReport, NoRetryTransport, StreamLimits};

pub mod assemble;
pub mod transport;
pub mod wire;

/// One API key and its endpoint settings.
struct Key {
    api: OpenAIConfig,
    /// Until when the key rests after a failure.
    cooldown_until: Mutex<Option<Instant>>,
}

/// The provider: models in fallback order, keys in rotation.
pub struct OpenAiProvider {
    /// Shared by every request (one connection pool); each request gets its own async-openai
    /// client around it, with its own transport and cut report.
    http: reqwest::Client,
    keys: Vec<Key>,
    config: ProviderConfig,
}

impl OpenAiProvider {
    /// A provider on `config.base_url` with `keys` (none: a keyless local server).
    pub fn new(config: ProviderConfig, keys: &[SecretString]) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()?;
        let secrets: Vec<&str> = if keys.is_empty() {
            vec![""]
        } else {
            keys.iter().map(|k| k.expose_secret()).collect()
        };
        let keys = secrets
            .into_iter()
            .map(|secret| {
                let api = OpenAIConfig::new()
                    .with_api_base(config.base_url.trim_end_matches('/'))
                    .with_api_key(secret);
                Key {
                    api,
                    cooldown_until: Mutex::new(None),
                }
            })
            .collect();
        Ok(Self { http, keys, config })
    }

    fn cooldown(&self, key: usize) -> Option<Instant> {
        let key = self.keys.get(key)?;
        *key.cooldown_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A client for one streamed request, its body under the configured bounds; the bounds say
    /// in `report` when they cut it.
    fn client(&self, key: &Key, report: &Arc<CutReport>) -> Client<OpenAIConfig> {
        let limits = StreamLimits {
            max_bytes: self.config.stream_max_bytes,
            max_duration: Duration::from_secs(self.config.stream_max_secs),
        };
        let transport = NoRetryTransport::new(self.http.clone(), limits, report.clone());
        Client::build(self.http.clone(), key.api.clone()).with_http_service(transport)
    }

    /// Key order for the next pass: ready keys in their configured order (a key is used until
    /// it fails), then resting keys, soonest back first.
    fn key_order(&self) -> Vec<usize> {
        let now = Instant::now();
        let (mut ready, mut resting): (Vec<usize>, Vec<usize>) =
            (0..self.keys.len()).partition(|&k| self.cooldown(k).is_none_or(|until| until <= now));
        resting.sort_by_key(|&k| self.cooldown(k));
        ready.append(&mut resting);
        ready
    }
}

#[async_trait]
impl ChatModel for OpenAiProvider {
    fn attempts(&self) -> Vec<Attempt> {
        let keys = self.key_order();
        self.config
            .models
            .iter()
            .enumerate()
            .flat_map(|(model_index, model)| {
                keys.iter().map(move |&key_index| Attempt {
                    model: model.clone(),
                    model_index,
                    key_index,
                    input_budget: self.config.input_budget(model),
                })
            })
            .collect()
    }

    async fn stream(
        &self,
        attempt: &Attempt,
        request: &ModelRequest,
    ) -> Result<ModelStream, ModelError> {
        let body = wire::request_body(
            &attempt.model,
            request,
            self.config.max_tokens,
            self.config.send_parallel_tool_calls,
            self.config.sees(&attempt.model),
        );
        let Some(key) = self.keys.get(attempt.key_index) else {
            return Err(ModelError::new(
                FailureClass::Unauthorized,
                None,
                format!("no provider key number {}", attempt.key_index),
            ));
        };
        let report = Arc::new(CutReport::default());
        let client = self.client(key, &report);
        let first_token = Duration::from_secs(self.config.first_token_timeout_secs);
        let idle = Duration::from_secs(self.config.idle_timeout_secs);
        // The first-token timeout covers the request and the first chunk.
        let opened = tokio::time::timeout(first_token, async {
            let mut chunks = client
                .chat()
                .create_stream_byot::<serde_json::Value, wire::Chunk>(body)
                .await
                .map_err(|e| assemble::stream_error(e, &report))?;
            let first = chunks.next().await;
            Ok::<_, ModelError>((chunks, first))
        })
        .await
        .map_err(|_| {
            ModelError::new(
                FailureClass::Timeout,
                None,
                format!("no first chunk within {first_token:?}"),
            )
        })??;
        let (chunks, first) = opened;
        // A failed first chunk fails the attempt (another key or model may do better); an
        // unreadable one is skipped like any other, inside the stream.
        let first = match first {
            Some(Err(error))
                if !matches!(error, async_openai::error::OpenAIError::JSONDeserialize(..)) =>
            {
                return Err(assemble::stream_error(error, &report));
            }
            first => first,
        };
        let prefix = format!("call_{}", uuid::Uuid::now_v7().simple());
        Ok(assemble::events(
            chunks.boxed(),
            first,
            idle,
            prefix,
            report,
        ))
    }

    fn report_failure(&self, attempt: &Attempt, class: FailureClass) {
        if !class.rotates_key() {
            return;
        }
        let base = Duration::from_secs(self.config.key_cooldown_secs);
        // A key out of balance or refused stays out longer than a rate-limited one.
        let rest = match class {
            FailureClass::RateLimited => base,
            _ => base.saturating_mul(10),
        };
        if let Some(key) = self.keys.get(attempt.key_index) {
            // A configured rest past a year is a year: the clock's arithmetic never overflows.
            let year = Duration::from_secs(86_400 * 365);
            let now = Instant::now();
            let until = now.checked_add(rest.min(year)).unwrap_or(now);
            *key.cooldown_until
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(until);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A configured cooldown too long for the clock neither panics nor frees the key.
    #[tokio::test]
    async fn a_huge_key_cooldown_saturates() {
        let mut config = crate::config::Config::shipped_defaults().provider;
        config.key_cooldown_secs = u64::MAX;
        let keys = [SecretString::from("a"), SecretString::from("b")];
        crate::http_body::install_crypto_provider();
        let provider = OpenAiProvider::new(config, &keys).expect("provider");
        let first = provider.attempts().remove(0);
        assert_eq!(first.key_index, 0);
        provider.report_failure(&first, FailureClass::InsufficientBalance);
        assert_eq!(provider.key_order(), vec![1, 0], "the failed key rests");
    }
}
