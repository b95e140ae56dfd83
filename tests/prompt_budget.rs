//! SPEC C12: the default persona's system prompt and tool schemas stay within a token budget,
//! counted with OpenAI's tokenizer; and the bot's own estimate (used to fit history into a
//! model's context window) never counts fewer tokens than the tokenizer does.

pub mod support {
    pub mod prompt;
}

use persona_bot::engine::budget;
use support::prompt::{default_request, token_counts};

/// The budget for the default persona's system prompt plus its tool schemas (kept small: a
/// 4,096-token local model once spent 1,480 of them before any history).
const PROMPT_BUDGET: usize = 700;

// SPEC C12 (lean prompts): system prompt plus tool schemas under the budget.
#[tokio::test]
async fn the_default_prompt_fits_the_budget() {
    let request = default_request().await;
    let (system, tools) = token_counts(&request);
    assert!(
        system + tools < PROMPT_BUDGET,
        "system prompt {system} + tool schemas {tools} tokens"
    );
    assert!(!request.tools.is_empty(), "the tools are still offered");
}

// The token estimate errs high against the real tokenizer, for the real prompt and schemas, English
// prose, CJK and JSON, and not by more than about two times.
#[tokio::test]
async fn the_estimate_never_counts_fewer_tokens_than_the_tokenizer() {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let request = default_request().await;
    let tools = serde_json::Value::Array(request.tools.clone()).to_string();
    let mut samples = vec![
        tools,
        "The quick brown fox jumps over the lazy dog, and then it naps in the sun.".repeat(20),
        "こんにちは、今日はいい天気ですね。明日の会議は十時からです。".repeat(10),
        "你好，今天天气很好。我们明天上午十点开会。".repeat(10),
        r#"{"fact":"Alice's cat is called Miso","about":"requester","id":12}"#.repeat(10),
    ];
    if let Some(persona_bot::domain::ports::ChatMessage::System { content }) =
        request.messages.first()
    {
        samples.push(content.clone());
    }
    for text in samples {
        let real = bpe.encode_with_special_tokens(&text).len() as u32;
        let estimate = budget::text_tokens(&text);
        assert!(
            estimate >= real && estimate <= real * 2 + 8,
            "estimate {estimate} for {real} real tokens: {:.60}",
            text
        );
    }
}
