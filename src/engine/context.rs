//! What the model sees: the persona's system prompt with its memories, older messages a tool
//! brought in, recent channel history, the trigger, and the turn's tool history. Loaded once per
//! turn; the request is rebuilt for every pass.

use crate::domain::history::ToolHistoryEntry;
use crate::domain::ports::{
    AssistantToolCall, Attachment, ChatMessage, Fact, HistoryMessage, Mention, ModelRequest,
    Persona, Ports,
};
use crate::domain::scope::{MessageId, UserId};
use crate::domain::turn::Turn;
use crate::engine::attachments::{self, AttachmentPolicy, ReadFiles};
use crate::engine::budget;
use crate::stage::Restart;

/// The message a turn answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub message: MessageId,
    pub author: UserId,
    pub author_name: String,
    pub content: String,
    /// Its files (read when the turn loads its context).
    pub attachments: Vec<Attachment>,
    /// The users it names: the reply may notify them, and its `@name` for them is a mention.
    pub mentions: Vec<Mention>,
    /// The turn did not start at once (it was queued): its reply replies to the trigger.
    pub reply: bool,
}

/// How much context a turn loads.
#[derive(Debug, Clone)]
pub struct ContextSettings {
    /// Recent channel messages given to the model.
    pub history_messages: u8,
    /// The zone the prompt tells the time in.
    pub zone: chrono_tz::Tz,
    /// Which files of the trigger and recent history are read.
    pub files: AttachmentPolicy,
    /// Shape requests for strict chat templates (`provider.strict_roles`).
    pub strict_roles: bool,
}

/// Most long-term facts put in the system prompt.
const FACTS_IN_PROMPT: usize = 20;
/// Facts read to choose from (the newest): a bucket holds at most a few hundred.
const FACT_CANDIDATES: u32 = 500;
/// How far back finished image plans are reported to the model.
const PLAN_RESULTS_WINDOW_MS: i64 = 30 * 60 * 1000;
/// Most finished image plans reported (the newest): a few turns' worth at four plans a turn,
/// so a busy channel's half hour cannot flood the system prompt.
const PLAN_RESULTS_IN_PROMPT: u32 = 12;

/// What stays the same for every pass of a turn.
#[derive(Debug, Clone)]
pub struct LoadedContext {
    system: String,
    recent: Vec<ChatMessage>,
    trigger: ChatMessage,
    /// Shape requests for strict chat templates ([`alternating`]).
    strict_roles: bool,
    /// Older messages a context-restart tool brought in, oldest first.
    older: Vec<HistoryMessage>,
    /// What the turn could look up beyond what the prompt shows.
    pub more: Beyond,
}

/// Whether there is anything beyond the prompt for the lookup tools to find: they are not
/// offered when there is not (SPEC C12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beyond {
    /// Recent history filled its limit: older messages may exist.
    pub older_messages: bool,
    /// Facts exist that the prompt does not show.
    pub facts_unshown: bool,
    /// The prompt shows facts (which may be forgotten).
    pub facts_shown: bool,
}

/// What the model reads for another person's message with no text the bot could read.
pub const UNREADABLE: &str = "(a message whose text the bot cannot read)";

/// A history message as the model sees it, with its files as `read` (or only named, for
/// older messages a tool brought in).
fn as_message(m: &HistoryMessage, read: Option<ReadFiles>) -> ChatMessage {
    let read = read.unwrap_or_else(|| ReadFiles {
        text: attachments::labels(&m.attachments),
        images: Vec::new(),
    });
    if m.from_bot {
        ChatMessage::Assistant {
            content: Some(format!("{}{}", m.content, read.text)),
            tool_calls: Vec::new(),
        }
    } else {
        // A message whose text the bot was not given (no Message Content intent, SPEC D14) is
        // said to be unreadable, never shown as someone saying nothing.
        let text = if m.content.trim().is_empty() && read.text.is_empty() && read.images.is_empty()
        {
            UNREADABLE
        } else {
            &m.content
        };
        ChatMessage::User {
            name: None,
            content: format!("[{}] {}{}", m.author, text, read.text),
            images: read.images,
        }
    }
}

/// Loads memories and recent history. A port that fails leaves its part out (logged): a turn
/// without memories is better than no turn.
pub async fn load(
    turn: &Turn,
    persona: &Persona,
    ports: &Ports,
    trigger: &Trigger,
    settings: &ContextSettings,
) -> LoadedContext {
    let scope = &turn.scope;
    let facts = ports
        .memory
        .facts(
            scope.server,
            &scope.persona,
            Some(scope.user),
            scope.channel,
            FACT_CANDIDATES,
        )
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(turn = %turn.id, %error, "memories unavailable for this turn");
            Vec::new()
        });
    let candidates = facts.len();
    let facts = most_relevant(facts, &trigger.content, FACTS_IN_PROMPT);
    let summary = ports
        .memory
        .summary(scope.channel, &scope.persona)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(turn = %turn.id, %error, "summary unavailable for this turn");
            None
        });
    let recent = ports
        .history
        .older(
            scope.channel,
            Some(trigger.message),
            settings.history_messages,
            &persona.display_name,
        )
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(turn = %turn.id, %error, "channel history unavailable for this turn");
            Vec::new()
        });
    let oldest = recent.last().map(|m| m.id);
    let more = Beyond {
        older_messages: recent.len() >= usize::from(settings.history_messages),
        facts_unshown: candidates > facts.len(),
        facts_shown: !facts.is_empty(),
    };
    let (trigger_files, recent) = with_files(ports, &settings.files, trigger, &recent).await;
    turn.set_context_oldest(oldest.unwrap_or(trigger.message));
    let place = Place {
        server_name: scope.server.and_then(|s| ports.stickers.server_name(s)),
        now_ms: ports.clock.now_ms(),
        zone: settings.zone,
    };
    let mut system = system_prompt(persona, scope.is_dm(), &facts, summary, trigger);
    system.push_str(&place.describe(&persona.display_name));
    plan_results(turn, ports, &mut system).await;
    LoadedContext {
        system,
        recent,
        trigger: ChatMessage::User {
            name: None,
            content: format!(
                "[{}] {}{}",
                trigger.author_name, trigger.content, trigger_files.text
            ),
            images: trigger_files.images,
        },
        strict_roles: settings.strict_roles,
        older: Vec::new(),
        more,
    }
}

/// The trigger's files, and recent history (newest first, as `older` gives it) with its files
/// as the model sees them, oldest first. The trigger's files get the budget first.
async fn with_files(
    ports: &Ports,
    policy: &AttachmentPolicy,
    trigger: &Trigger,
    recent: &[HistoryMessage],
) -> (ReadFiles, Vec<ChatMessage>) {
    let mut files: Vec<&[Attachment]> = vec![&trigger.attachments];
    files.extend(recent.iter().map(|m| m.attachments.as_slice()));
    let mut read = attachments::read(ports.attachments.as_ref(), policy, &files)
        .await
        .into_iter();
    let trigger_files = read.next().unwrap_or_default();
    let mut messages: Vec<ChatMessage> = recent
        .iter()
        .zip(read)
        .map(|(m, read)| as_message(m, Some(read)))
        .collect();
    messages.reverse();
    (trigger_files, messages)
}

/// The persona's prompt, where the conversation is, what it remembers and its summary.
fn system_prompt(
    persona: &Persona,
    is_dm: bool,
    facts: &[Fact],
    summary: Option<String>,
    trigger: &Trigger,
) -> String {
    let mut system = persona.system_prompt.trim().to_owned();
    system.push_str(if is_dm {
        "\n\nYou are in a Discord direct message."
    } else {
        "\n\nYou are in a Discord server channel."
    });
    system.push_str(" Each user message starts with its author's name in brackets.");
    if !facts.is_empty() {
        system.push_str("\n\nWhat you remember:");
        for fact in facts.iter().rev() {
            let about = if fact.about.is_some() {
                format!(" (about {})", trigger.author_name)
            } else {
                String::new()
            };
            system.push_str(&format!("\n- {}{about} (#{})", fact.text, fact.id));
        }
    }
    if let Some(summary) = summary {
        system.push_str("\n\nYour summary of this conversation so far:\n");
        system.push_str(&summary);
    }
    system
}

/// The `n` facts most relevant to `message`, newest first: those sharing the most words with
/// it (words of three letters or more, case folded; any run of characters in scripts written
/// without spaces), the newer first among equals. `facts` come newest first.
fn most_relevant(facts: Vec<Fact>, message: &str, n: usize) -> Vec<Fact> {
    if facts.len() <= n {
        return facts;
    }
    let asked = words(message);
    let mut scored: Vec<(usize, usize, Fact)> = facts
        .into_iter()
        .enumerate()
        .map(|(age, fact)| (words(&fact.text).intersection(&asked).count(), age, fact))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(n);
    scored.sort_by_key(|(_, age, _)| *age);
    scored.into_iter().map(|(_, _, fact)| fact).collect()
}

/// The words of `text` for [`most_relevant`], at most 200.
fn words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 || !w.is_ascii())
        .take(200)
        .map(str::to_lowercase)
        .collect()
}

/// Where and when the turn happens, for the system prompt: the model has no clock, and a
/// reminder's time must be an absolute date.
struct Place {
    server_name: Option<String>,
    now_ms: i64,
    zone: chrono_tz::Tz,
}

impl Place {
    /// `\n\nYou are Aria, in the Discord server "Test Guild". It is now Tuesday 1 December
    /// 2026, 18:05 (UTC).` A server name is cut to 100 characters and loses its quotes.
    fn describe(&self, persona_name: &str) -> String {
        use chrono::TimeZone as _;
        let mut text = format!("\n\nYou are {persona_name}");
        if let Some(name) = &self.server_name {
            let name: String = name.replace('"', "'").chars().take(100).collect();
            text.push_str(&format!(", in the Discord server \"{name}\""));
        }
        text.push('.');
        if let chrono::LocalResult::Single(now) = self.zone.timestamp_millis_opt(self.now_ms) {
            text.push_str(&format!(
                " It is now {} ({}).",
                now.format("%A %-d %B %Y, %H:%M"),
                self.zone.name()
            ));
        }
        text
    }
}

/// What became of images planned here lately: posted, or why not (SPEC S5, T8).
async fn plan_results(turn: &Turn, ports: &Ports, system: &mut String) {
    let scope = &turn.scope;
    let since = ports.clock.now_ms() - PLAN_RESULTS_WINDOW_MS;
    let results = ports
        .plans
        .results_since(scope.channel, since, PLAN_RESULTS_IN_PROMPT)
        .await;
    match results {
        Ok(results) if !results.is_empty() => {
            system.push_str("\n\nImages you planned here recently:");
            for r in results {
                let outcome = r.result.map_or_else(|| r.status.clone(), |v| v.to_string());
                system.push_str(&format!("\n- \"{}\": {outcome}", r.prompt));
            }
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(turn = %turn.id, %error, "image results unavailable"),
    }
}

impl LoadedContext {
    /// Older messages a context-restart tool fetched join the context (SPEC T6); older history
    /// now continues before the oldest of them.
    pub fn take_restart(&mut self, turn: &Turn, restart: Restart) {
        self.older.extend(restart.messages);
        self.older.sort_by_key(|m| m.id);
        self.older.dedup_by_key(|m| m.id);
        let oldest = turn
            .context_oldest()
            .map_or(restart.oldest, |o| o.min(restart.oldest));
        turn.set_context_oldest(oldest);
    }

    /// The request for the next pass. `continuation` is text a failed attempt already sent:
    /// the model is told to go on from there without repeating it. `tail` ends the conversation
    /// (a revision request, for one).
    pub fn request(
        &self,
        entries: &[ToolHistoryEntry],
        continuation: Option<&str>,
        tail: &[ChatMessage],
        tools: Vec<serde_json::Value>,
    ) -> ModelRequest {
        self.request_within(entries, continuation, tail, tools, None)
            .0
    }

    /// [`Self::request`] within `budget` tokens, when given: history is left out oldest first
    /// until the estimate fits (the system prompt, the trigger and the turn's tool exchange
    /// are kept whole). Also returns how many history messages were left out.
    pub fn request_within(
        &self,
        entries: &[ToolHistoryEntry],
        continuation: Option<&str>,
        tail: &[ChatMessage],
        tools: Vec<serde_json::Value>,
        budget: Option<u32>,
    ) -> (ModelRequest, usize) {
        let system = ChatMessage::System {
            content: self.system.clone(),
        };
        let mut history: Vec<ChatMessage> =
            self.older.iter().map(|m| as_message(m, None)).collect();
        history.extend(self.recent.iter().cloned());
        let after = self.after_history(entries, continuation, tail);
        let dropped = budget.map_or(0, |budget| {
            let fixed = budget::request_tokens(after.iter().chain([&system]), &tools);
            budget::left_out(&history, fixed, budget)
        });
        let mut messages = Vec::with_capacity(history.len() + after.len() + 1);
        messages.push(system);
        messages.extend(history.into_iter().skip(dropped));
        messages.extend(after);
        if self.strict_roles {
            messages = alternating(messages);
        }
        (ModelRequest { messages, tools }, dropped)
    }

    /// What follows the history: the trigger, the turn's tool exchange, the continuation note
    /// and the tail.
    fn after_history(
        &self,
        entries: &[ToolHistoryEntry],
        continuation: Option<&str>,
        tail: &[ChatMessage],
    ) -> Vec<ChatMessage> {
        let mut messages = Vec::with_capacity(entries.len() * 2 + 3 + tail.len());
        messages.push(self.trigger.clone());
        for entry in entries {
            let text = entry.pre_tool_text.concat();
            messages.push(ChatMessage::Assistant {
                content: (!text.trim().is_empty()).then_some(text),
                tool_calls: vec![AssistantToolCall {
                    id: entry.call_id.clone(),
                    name: entry.tool_name.clone(),
                    arguments: entry.arguments.clone(),
                }],
            });
            messages.push(ChatMessage::Tool {
                call_id: entry.call_id.clone(),
                content: entry.response.to_string(),
            });
        }
        if let Some(sent) = continuation.filter(|t| !t.trim().is_empty()) {
            messages.push(ChatMessage::Assistant {
                content: Some(sent.to_owned()),
                tool_calls: Vec::new(),
            });
            messages.push(ChatMessage::System {
                content: "Your reply above was interrupted after it was sent. Continue from \
                          where it stopped, without repeating it."
                    .to_owned(),
            });
        }
        messages.extend(tail.iter().cloned());
        messages
    }
}

/// The conversation in the shape strict chat templates demand (SPEC C12): one leading system
/// message (a later system note becomes a user-role note), and no two messages of one role in
/// a row: the pieces of one posted reply are one assistant message, and messages of several
/// people in a row are one user message (each keeps its author's name in brackets). An
/// assistant message that calls tools is never joined to what follows: its results must come
/// next.
fn alternating(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    for (i, message) in messages.into_iter().enumerate() {
        let message = match message {
            ChatMessage::System { content } if i > 0 => ChatMessage::User {
                name: None,
                content: format!("[note] {content}"),
                images: Vec::new(),
            },
            other => other,
        };
        match (out.last_mut(), message) {
            (
                Some(ChatMessage::User {
                    name,
                    content,
                    images,
                }),
                ChatMessage::User {
                    name: next_name,
                    content: next,
                    images: next_images,
                },
            ) => {
                content.push_str("\n\n");
                content.push_str(&next);
                images.extend(next_images);
                if *name != next_name {
                    *name = None;
                }
            }
            (
                Some(ChatMessage::Assistant {
                    content,
                    tool_calls,
                }),
                ChatMessage::Assistant {
                    content: next,
                    tool_calls: next_calls,
                },
            ) if tool_calls.is_empty() => {
                let joined = [content.take(), next]
                    .into_iter()
                    .flatten()
                    .filter(|t| !t.trim().is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                *content = (!joined.is_empty()).then_some(joined);
                *tool_calls = next_calls;
            }
            (_, message) => out.push(message),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Place, alternating, most_relevant};
    use crate::domain::ports::{AssistantToolCall, ChatMessage, Fact};

    fn fact(id: i64, text: &str) -> Fact {
        Fact {
            id,
            about: None,
            text: text.into(),
            at_ms: id,
        }
    }

    // The prompt takes the facts that share words with the message, not only the newest; among
    // equals the newer; newest first as before.
    #[test]
    fn the_most_relevant_facts_are_chosen() {
        let facts: Vec<Fact> = (0..30)
            .rev()
            .map(|i| fact(i, &format!("filler number {i}")))
            .chain([
                fact(-1, "Alice's cat is called Miso"),
                fact(-2, "the server meets on Fridays"),
            ])
            .collect();
        let chosen = most_relevant(facts, "what is my cat called?", 3);
        let texts: Vec<&str> = chosen.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "filler number 29",
                "filler number 28",
                "Alice's cat is called Miso"
            ]
        );
        let few = vec![fact(1, "one"), fact(0, "two")];
        assert_eq!(most_relevant(few.clone(), "anything", 5), few);
    }

    fn user(content: &str) -> ChatMessage {
        ChatMessage::User {
            name: None,
            content: content.into(),
            images: Vec::new(),
        }
    }

    fn said(content: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    // SPEC C12: one leading system message, a later one as a user-role note; runs of one role
    // joined; a tool-calling assistant message keeps its results right after it.
    #[test]
    fn requests_alternate_after_one_system_message() {
        let call = ChatMessage::Assistant {
            content: Some("let me look".into()),
            tool_calls: vec![AssistantToolCall {
                id: "c1".into(),
                name: "recall_facts".into(),
                arguments: "{}".into(),
            }],
        };
        let result = ChatMessage::Tool {
            call_id: "c1".into(),
            content: "{}".into(),
        };
        let system = |c: &str| ChatMessage::System { content: c.into() };
        let shaped = alternating(vec![
            system("persona"),
            user("[a] hi"),
            user("[b] hello"),
            said("one"),
            said("two"),
            call.clone(),
            result.clone(),
            said("sent so far"),
            system("continue"),
        ]);
        let expected_call = ChatMessage::Assistant {
            content: Some("one\n\ntwo\n\nlet me look".into()),
            tool_calls: match &call {
                ChatMessage::Assistant { tool_calls, .. } => tool_calls.clone(),
                _ => unreachable!(),
            },
        };
        assert_eq!(
            shaped,
            vec![
                system("persona"),
                user("[a] hi\n\n[b] hello"),
                expected_call,
                result,
                said("sent so far"),
                user("[note] continue"),
            ]
        );
    }

    /// 2026-12-01 18:05 UTC.
    const AT: i64 = 1_796_148_300_000;

    // The prompt says who the persona is, where, and what day and time it is in the configured
    // zone.
    #[test]
    fn the_prompt_says_who_where_and_when() {
        let place = Place {
            server_name: Some("Test \"Guild\"".into()),
            now_ms: AT,
            zone: chrono_tz::UTC,
        };
        assert_eq!(
            place.describe("Aria"),
            "\n\nYou are Aria, in the Discord server \"Test 'Guild'\". It is now Tuesday 1 \
             December 2026, 18:05 (UTC)."
        );
        let tokyo = Place {
            server_name: None,
            now_ms: AT,
            zone: chrono_tz::Asia::Tokyo,
        };
        assert_eq!(
            tokyo.describe("Aria"),
            "\n\nYou are Aria. It is now Wednesday 2 December 2026, 03:05 (Asia/Tokyo)."
        );
    }
}
