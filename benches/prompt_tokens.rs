//! The default persona's prompt in OpenAI's tokens (o200k_base): its system prompt and its
//! tool schemas, as the bot sends them in a public server channel with nothing in memory or
//! history. Every token of them is paid on every pass on a metered endpoint, and read before
//! the first token on a local one. `cargo bench --bench prompt_tokens`.

#[path = "../tests/support"]
pub mod support {
    pub mod bot;
    pub mod fake_openai;
    pub mod harness;
    pub mod prompt;
}

use std::time::{Duration, Instant};

use persona_bot::config::Config;
use persona_bot::domain::ports::HistoryMessage;
use persona_bot::domain::scope::MessageId;
use persona_bot::provider::OpenAiProvider;
use persona_bot::testkit::Fakes;
use secrecy::SecretString;
use support::bot::{ALICE, Bot, message};
use support::fake_openai::{FakeOpenAi, Profile, Reply};
use support::harness::{Behaviour, Harness};
use support::prompt::{default_request, token_counts};

/// Turns measured per case.
const RUNS: usize = 20;

/// One turn in a channel with 30 long history messages against a llama.cpp-shaped fake that
/// answers "context full" first when `full` is set: the model requests it took and the time
/// from the message to the first posted text.
async fn context_full_turn(full: bool) -> (usize, Duration) {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::LlamaCpp);
    if full {
        fake.push(Reply::context_full(Profile::LlamaCpp, 4568, 1024, 4096).expect("llama.cpp"));
    }
    fake.push(Reply::text(&["An answer."]));
    let mut config = Config::shipped_defaults().provider;
    config.base_url = fake.base_url.clone();
    config.models = vec!["smollm2".into()];
    persona_bot::app::install_crypto_provider();
    let provider =
        OpenAiProvider::new(config, &[SecretString::from("k".to_owned())]).expect("provider");
    let history: Vec<HistoryMessage> = (1..=30u64)
        .rev()
        .map(|n| HistoryMessage {
            id: MessageId(n),
            author: "bob".into(),
            from_bot: false,
            content: format!("message {n} {}", "words ".repeat(64)),
            at_ms: 0,
            attachments: Vec::new(),
        })
        .collect();
    let h = Harness::build(
        Fakes::default().with_history(history),
        Behaviour::succeed(),
        |r| r,
    );
    let mut bot = Bot::with_queue(h, provider, Default::default());
    let started = Instant::now();
    bot.say(message(99, ALICE, "and now?")).await;
    while bot.h.fakes.sink.texts().is_empty() {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let first_text = started.elapsed();
    bot.next().await;
    (fake.requests().len(), first_text)
}

async fn report_context_full() {
    for full in [false, true] {
        let mut times = Vec::with_capacity(RUNS);
        let mut requests = 0;
        for _ in 0..RUNS {
            let (n, time) = context_full_turn(full).await;
            requests = n;
            times.push(time);
        }
        times.sort();
        let case = if full {
            "context full once"
        } else {
            "fits at once"
        };
        println!(
            "{case:<18} model requests {requests}, first text p50 {:.2} ms, p95 {:.2} ms",
            times[RUNS / 2].as_secs_f64() * 1e3,
            times[RUNS * 95 / 100].as_secs_f64() * 1e3
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("prompt_tokens: run with `cargo bench --bench prompt_tokens`");
        return;
    }
    let request = default_request().await;
    let (system, tools) = token_counts(&request);
    println!("tools offered: {}", request.tools.len());
    for tool in &request.tools {
        let one = serde_json::Value::Array(vec![tool.clone()]);
        let tokens = tiktoken_rs::o200k_base()
            .expect("o200k_base")
            .encode_with_special_tokens(&one.to_string())
            .len();
        println!(
            "  {:<30} {tokens:>4} tokens",
            tool["function"]["name"].as_str().unwrap_or("?")
        );
    }
    println!("system prompt: {system} tokens");
    println!("tool schemas:  {tools} tokens");
    println!("total:         {} tokens", system + tools);
    // Every persona tool offered (a server with stickers, an image backend, facts and a long
    // history): the schemas' own size.
    let config = persona_bot::config::Config::shipped_defaults();
    let registry = persona_bot::tools::Registry::builtin(&config);
    let all: Vec<serde_json::Value> = registry
        .for_role(persona_bot::domain::role::Role::Persona)
        .map(|t| t.spec.clone())
        .collect();
    let every = tiktoken_rs::o200k_base()
        .expect("o200k_base")
        .encode_with_special_tokens(&serde_json::Value::Array(all.clone()).to_string())
        .len();
    println!("all {} persona tool schemas: {every} tokens", all.len());
    report_context_full().await;
}
