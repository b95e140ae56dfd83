//! How many tokens a request costs, estimated without the model's tokenizer, so history can be
//! trimmed to fit a model's context window. The estimate errs high: 3 bytes of ASCII per token
//! (English prose runs about 4 on OpenAI's tokenizers, dense JSON 3.3), one token per other
//! character (CJK runs about one), a few tokens of framing per message, and a fixed cost per
//! picture. `tests/prompt_budget.rs` holds it against a real tokenizer.

use serde_json::Value;

use crate::domain::ports::ChatMessage;

/// Framing each message costs beside its text (role, separators).
const PER_MESSAGE: u32 = 4;
/// What one picture is counted as: a detailed picture costs several hundred tokens on OpenAI's
/// models and more on some local ones.
const PER_IMAGE: u32 = 800;

/// Estimated tokens of `text`.
pub fn text_tokens(text: &str) -> u32 {
    let (mut ascii, mut other) = (0u64, 0u64);
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    let tokens = ascii.div_ceil(3) + other;
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// Estimated tokens of one message.
pub fn message_tokens(message: &ChatMessage) -> u32 {
    let text = match message {
        ChatMessage::System { content } => text_tokens(content),
        ChatMessage::User {
            content, images, ..
        } => {
            let pictures = u32::try_from(images.len()).unwrap_or(u32::MAX);
            text_tokens(content).saturating_add(pictures.saturating_mul(PER_IMAGE))
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => tool_calls.iter().fold(
            text_tokens(content.as_deref().unwrap_or_default()),
            |sum, call| {
                sum.saturating_add(text_tokens(&call.name))
                    .saturating_add(text_tokens(&call.arguments))
                    .saturating_add(PER_MESSAGE)
            },
        ),
        ChatMessage::Tool { content, .. } => text_tokens(content),
    };
    text.saturating_add(PER_MESSAGE)
}

/// Estimated tokens of the tool schemas sent with a request.
pub fn tools_tokens(tools: &[Value]) -> u32 {
    tools.iter().fold(0, |sum, tool| {
        sum.saturating_add(text_tokens(&tool.to_string()))
    })
}

/// Estimated tokens of `messages` sent with `tools`.
pub fn request_tokens<'a>(
    messages: impl IntoIterator<Item = &'a ChatMessage>,
    tools: &[Value],
) -> u32 {
    messages.into_iter().fold(tools_tokens(tools), |sum, m| {
        sum.saturating_add(message_tokens(m))
    })
}

/// How many of `history` (oldest first) to leave out, from the oldest, so that `fixed` tokens
/// plus the rest fit in `budget`. All of it when even the newest does not fit: the parts that
/// are kept whole (system prompt, trigger, the open tool exchange) come first.
pub fn left_out(history: &[ChatMessage], fixed: u32, budget: u32) -> usize {
    let mut total = history
        .iter()
        .fold(fixed, |sum, m| sum.saturating_add(message_tokens(m)));
    let mut dropped = 0;
    for message in history {
        if total <= budget {
            break;
        }
        total = total.saturating_sub(message_tokens(message));
        dropped += 1;
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            name: None,
            content: text.into(),
            images: Vec::new(),
        }
    }

    #[test]
    fn text_is_counted_by_script() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcdefg"), 3);
        assert_eq!(text_tokens("こんにちは"), 5);
    }

    // History goes oldest first until the rest fits; none when it fits already; all when nothing
    // but the fixed parts would fit.
    #[test]
    fn history_is_left_out_oldest_first_until_it_fits() {
        let history: Vec<ChatMessage> = (0..10).map(|_| user(&"x".repeat(70))).collect();
        let each = message_tokens(&history[0]);
        assert_eq!(each, 28);
        assert_eq!(left_out(&history, 100, 100 + 10 * each), 0);
        assert_eq!(left_out(&history, 100, 100 + 4 * each), 6);
        assert_eq!(left_out(&history, 100, 50), 10);
    }

    proptest! {
        // Whatever the history and budget, the count ends, is at most the history's length, and
        // what is kept fits unless everything was left out.
        #[test]
        fn trimming_fits_or_drops_everything(
            lens in proptest::collection::vec(0usize..400, 0..40),
            fixed in 0u32..2000,
            budget in 0u32..5000,
        ) {
            let history: Vec<ChatMessage> = lens.iter().map(|n| user(&"y".repeat(*n))).collect();
            let dropped = left_out(&history, fixed, budget);
            prop_assert!(dropped <= history.len());
            let kept: u32 = history[dropped..].iter().map(message_tokens).sum::<u32>() + fixed;
            prop_assert!(kept <= budget || dropped == history.len());
        }
    }
}
