//! One form for mentions in everything the model reads: `<@id>` and `<@!id>` become `@name` for
//! the bot (as the persona's name) and for each user the message says it mentions, in the
//! trigger and in history alike. An id the message does not name stays as written.

/// Most mentioned users rewritten in one message (Discord notifies at most 100).
const NAMES_MAX: usize = 100;

/// `content` with the mentions of `names` (`(user id, name)`, the bot first) as `@name`.
pub fn readable<'a>(content: &str, names: impl IntoIterator<Item = (u64, &'a str)>) -> String {
    let mut text = content.to_owned();
    if !text.contains("<@") {
        return text;
    }
    for (id, name) in names.into_iter().take(NAMES_MAX) {
        let at_name = format!("@{name}");
        text = text
            .replace(&format!("<@{id}>"), &at_name)
            .replace(&format!("<@!{id}>"), &at_name);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::readable;
    use proptest::prelude::*;

    // One mention form: the bot's and each named user's mention read as @name, the bot's as the
    // persona's name; ids nobody named stay.
    #[test]
    fn mentions_read_as_names() {
        let text = readable(
            "<@900> ask <@!301> and <@301>, not <@555> or <@&7>",
            [(900, "Aria"), (301, "bob"), (900, "aria-bot")],
        );
        assert_eq!(text, "@Aria ask @bob and @bob, not <@555> or <@&7>");
        assert_eq!(readable("no mentions", [(1, "x")]), "no mentions");
    }

    proptest! {
        // Whatever the text and names, rewriting ends and keeps text without mentions whole.
        #[test]
        fn any_text_is_safe(text in ".{0,200}", id in any::<u64>(), name in "[a-z]{0,10}") {
            let out = readable(&text, [(id, name.as_str())]);
            if !text.contains("<@") {
                prop_assert_eq!(out, text);
            }
        }
    }
}
