//! The default persona's prompt in OpenAI's tokens (o200k_base): its system prompt and its
//! tool schemas, as the bot sends them in a public server channel with nothing in memory or
//! history. Every token of them is paid on every pass on a metered endpoint, and read before
//! the first token on a local one. `cargo bench --bench prompt_tokens`.

#[path = "../tests/support"]
pub mod support {
    pub mod prompt;
}

use support::prompt::{default_request, token_counts};

#[tokio::main(flavor = "current_thread")]
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
}
