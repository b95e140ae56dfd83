# Thought-log notices (moderators)
notice-tool-failed-title = Tool call failed
notice-tool-stopped-title = Tool stopped by /kill
notice-deliberate-title = Tool admitted by a trigger
notice-progress-title = Quiet turn progress
notice-caught-up-title = Caught up on messages sent while the bot was away
notice-field-tool = Tool
notice-field-kind = Kind
notice-field-code = Code
notice-field-reason = Reason
notice-field-arguments = Arguments (redacted)
notice-field-effect = Effect
notice-field-trigger = Trigger
notice-field-channel = Channel
notice-field-progress = Progress
notice-ending-done = Done: the tool finished its work before it stopped.
notice-ending-cancelled = Cancelled: the tool stopped without finishing its work.
notice-ending-may-still-finish = May still finish: the tool did not stop when told to, so its work may still happen. Nothing was rolled back.
notice-kind-unknown-tool = Unknown tool
notice-kind-invalid-arguments = Invalid arguments
notice-kind-denied = Permission denied
notice-kind-truncated = Truncated arguments (not run)
notice-kind-blocked = Blocked before running
notice-kind-execution = Execution failed
notice-kind-business = Refused by the tool
notice-kind-timed-out = Timed out

# Progress lines shown in the conversation while a tool works
progress-generic = Working on { $tool }…
progress-plan-image = 🎨 Planning an image…
progress-fetch-older-messages = 📜 Reading older messages…

# Recovery tips, shared by error replies and failed tools
tip-rate-limited-wait = The provider is busy. Wait a minute and try again.
tip-balance-top-up = The provider account is out of credit: a bot admin needs to top it up.
tip-balance-other-key = A bot admin can add another API key or switch providers.
tip-unauthorized-check-key = A bot admin should check the provider API key.
tip-model-unknown-check-name = A bot admin should check the configured model name.
tip-context-shorter = Try a shorter message or start a fresh conversation.
tip-safety-rephrase = The request was refused by the provider's safety policy. Try rephrasing it.
tip-invalid-request-rephrase = Try rephrasing the request.
tip-missing-model-install = A bot admin needs to install the model file the image workflow uses.
tip-timeout-retry-later = The provider did not answer in time. Try again later.
tip-server-error-retry-later = The provider had an internal error. Try again later.
tip-network-check-endpoint = The provider could not be reached. A bot admin should check the endpoint.
tip-reply-too-long-shorter = Try again, or ask for a shorter answer.

# Turn notices in the conversation
turn-pass-limit = I had to stop here: this reply took too many steps.
turn-failure-limit = I had to stop: my tools failed several times in a row.
turn-provider-error = I couldn't reply just now. { $reason }
turn-empty-response = I couldn't come up with a reply. Please try again.
settings-unavailable = I cannot reach my settings right now, so I cannot answer yet. Please ask again in a minute.
turn-crashed = Something went wrong on my side, so I stopped this reply. Please try again.
turn-queue-dropped = Too many messages are waiting here, so I skipped this one. Please send it again in a moment.
turn-plans-incomplete = Some of the images I promised were not planned: { $missing }.

# Why the provider failed, for users
error-rate-limited = The AI service is busy right now.
error-insufficient-balance = The AI service account has run out of credit.
error-unauthorized = The AI service refused the bot's credentials.
error-model-unknown = The configured AI model is not available.
error-context-too-long = The conversation is too long for the AI model.
error-safety-refusal = The AI service declined this request under its safety policy.
error-invalid-request = The AI service rejected the request.
error-missing-model-file = The image service is missing a model file.
error-timeout = The AI service did not answer in time.
error-server-error = The AI service had an internal error.
error-network-error = The AI service could not be reached.
error-reply-too-long = The AI service's answer ran far too long, so I stopped it.

# Slash commands: names are lowercase without spaces
cmd-kill-name = kill
cmd-kill-description = Stop the bot's reply in this channel
cmd-drafting-name = drafting
cmd-drafting-description = Turn Response Drafting on or off for this server
cmd-drafting-state-name = state
cmd-drafting-state-description = on or off
cmd-thoughtlog-name = thoughtlog
cmd-thoughtlog-description = Choose the hidden channel where moderators see what the bot did
cmd-thoughtlog-set-name = set
cmd-thoughtlog-set-description = Use a channel as the thought log
cmd-thoughtlog-set-channel-name = channel
cmd-thoughtlog-set-channel-description = A channel that @everyone cannot view
cmd-thoughtlog-off-name = off
cmd-thoughtlog-off-description = Stop posting to the thought log
cmd-thoughtlog-summaries-name = summaries
cmd-thoughtlog-summaries-description = Which finished turns post a summary to the thought log
cmd-thoughtlog-summaries-mode-name = mode
cmd-thoughtlog-summaries-mode-description = off, problems (turns that did not end cleanly; the default) or all

# Command replies
kill-stopped = Stopped the reply in progress.
kill-stopped-own = Stopped your reply in progress.
kill-tool-done = The tool `{ $tool }` had already finished, so its work is done.
kill-tool-cancelled = The tool `{ $tool }` was cancelled before it finished.
kill-tool-may-still-finish = The tool `{ $tool }` did not stop when asked and may still finish its work.
kill-dropped-own = Your waiting messages dropped: { $count }.
kill-dropped-all = Waiting messages dropped for everyone: { $count }.
kill-nothing = Nothing was running here.
kill-denied = Only the person who asked, or someone who can manage messages, can stop this.
drafting-on = Response Drafting is on: replies and tool requests are reviewed before they are posted.
drafting-off = Response Drafting is off: replies stream as they are written.
thoughtlog-set = The thought log is now { $channel }.
thoughtlog-public = { $channel } is visible to everyone, so it cannot be the thought log. Choose a channel that @everyone cannot view.
thoughtlog-off = The thought log is off.
thoughtlog-summaries = Turn summaries on the thought log: { $mode }.
summaries-off = none
summaries-problems = only turns that did not end cleanly (errors, limits, stops)
summaries-all = every turn
command-needs-manage-server = You need the Manage Server permission for this.
command-server-only = This command works in servers only.
command-failed = Something went wrong with this command. Please try again.

# Thought log: the summary of each turn
notice-turn-title = Turn summary
notice-field-status = Status
notice-field-passes = Passes
notice-field-tool-calls = Tool calls
notice-field-duration = Duration
notice-field-tokens = Tokens (prompt / reply)
notice-field-reviews = Reviews
image-failed = I couldn't make the image I planned. { $reason }
reminder-trigger = [Reminder due] Deliver this reminder to { $whom }, in your own words: { $text }
reminder-everyone = everyone here
reminder-not-delivered = Your reminder in { $channel } was not delivered: I may no longer speak in that channel. Ask a moderator, or set it again where I can speak.
cmd-reminders-name = reminders
cmd-reminders-description = List or cancel your reminders
cmd-reminders-list-name = list
cmd-reminders-list-description = Show the reminders you set or that are for you
cmd-reminders-cancel-name = cancel
cmd-reminders-cancel-description = Cancel one of your reminders
cmd-reminders-cancel-id-name = id
cmd-reminders-cancel-id-description = The reminder's number, from /reminders list
reminders-none = You have no reminders.
reminders-title = Your reminders:
reminders-cancelled = Reminder #{ $id } is cancelled.
reminders-not-yours = There is no reminder #{ $id } that you set or that is for you.
# One line of /reminders list: its number, when it is next due (local time), the time zone,
# how often, and its text.
reminders-line = `#{ $id }` { $when } ({ $zone }, { $repeat ->
        [daily] daily
        [weekly] weekly
       *[once] once
    }) — { $text }

# /random: random quiet turns for a server.
cmd-random-name = random
cmd-random-description = Turn random quiet turns on or off for this server
cmd-random-state-name = state
cmd-random-state-description = on or off
cmd-random-percent-name = percent
cmd-random-percent-description = Chance per message, in percent (1-100)
cmd-random-per_hour-name = per_hour
cmd-random-per_hour-description = Most random turns per hour (1-60)
random-on = Random turns are on: a { $percent }% chance per message in allowed channels, at most { $per_hour } an hour.
random-off = Random turns are off.
notice-field-channels-read = Channels read
notice-field-missed = Unanswered messages addressed to the bot
notice-field-answered = Queued to be answered
rate-limited = You're sending messages faster than I can answer, so I'm skipping some for a minute. Try again shortly.
notice-quiet-skipped-title = A reminder was not delivered
notice-quiet-skipped-reason = The channel's access rules do not let the bot speak there.
reply-cut-note = *(This reply reached its length limit and stops here.)*
notice-reply-cut-title = A reply was cut at its length limit
notice-reply-cut-reason = The model stopped at provider.max_tokens, and the reply says so. Raise provider.max_tokens for longer replies.
notice-context-trimmed-title = Older messages were left out to fit the model's context
notice-field-left-out = Messages left out
cmd-memory-name = memory
cmd-memory-description = What I remember about you or this server, and forgetting it
cmd-memory-show-name = show
cmd-memory-show-description = What I remember about you
cmd-memory-server-name = server
cmd-memory-server-description = What I remember about this server (Manage Server)
cmd-memory-forget-name = forget
cmd-memory-forget-description = Forget a fact by its number, or all of yours
cmd-memory-forget-target-name = target
cmd-memory-forget-target-description = A fact's number from /memory show, or "all"
cmd-forget-me-name = forget-me
cmd-forget-me-description = Forget everything I remember about you, everywhere
memory-none = I remember nothing here.
memory-title = What I remember:
memory-line = #{ $id } { $text }
memory-forget-what = Give a fact's number from /memory show, or "all".
memory-forgotten = Forgotten: { $count } fact(s).
memory-forgot-nothing = Nothing to forget: no such fact of yours here.
forget-me-done = Done: I forgot { $count } fact(s) about you, in every server and DM.
cmd-channels-name = channels
cmd-channels-description = Where I answer: allow, block or always answer a channel, or clear its rule
cmd-channels-rule-name = rule
cmd-channels-rule-description = allow (then only allowed channels), block, always (every message), or clear
cmd-channels-channel-name = channel
cmd-channels-channel-description = The channel
cmd-roles-name = roles
cmd-roles-description = Whom I answer: allow or block a role, or clear its rule
cmd-roles-rule-name = rule
cmd-roles-rule-description = allow (then only members with an allowed role), block, or clear
cmd-roles-role-name = role
cmd-roles-role-description = The role
cmd-access-name = access
cmd-access-description = This server's access rules (block beats allow)
access-set = Done: { $rule } for { $target }.
access-full = That list is full (200 entries); clear some first. Nothing changed for { $target }.
access-show = Access rules (a block beats an allow):
    - Allowed channels: { $allowed_channels }
    - Blocked channels: { $blocked_channels }
    - Always answered: { $always_channels }
    - Allowed roles: { $allowed_roles }
    - Blocked roles: { $blocked_roles }
notice-settings-title = A setting was changed
notice-field-by = By
notice-field-change = Change
cmd-status-name = status
cmd-status-description = How I am set up here: persona, model, drafting, queue, reminders
cmd-help-name = help
cmd-help-description = What I do, how to talk to me, and the commands you may use
status-yes = yes
status-no = no
status-text = **Status**
    - Persona: { $persona }
    - Model: { $model }
    - Response Drafting: { $drafting }
    - Thought log: { $thought_log }
    - Turn summaries: { $summaries }
    - Replies: { $replies }
    - Status reactions: { $reactions }
    - Buttons on replies: { $buttons }
    - Answering now here: { $running }; waiting here: { $waiting }
    - I may post here: { $can_post }
    - Your reminders: { $reminders }
status-no-content = Discord does not give me the text of messages that are not for me (no Message Content intent): I answer mentions, replies to me, DMs and commands; trigger words, always-reply channels, follow-ups without a mention and random replies are off.
help-text = I am { $persona }. Mention me, reply to one of my messages, or write to me in a DM, and I answer; while I answer you, anything more you write here is part of the same conversation. I can remember things, set reminders and plan images.
    - /kill stops what I am doing here.
    - /reminders list|cancel: your reminders.
    - /memory show|forget: what I remember about you; /forget-me forgets all of it, everywhere.
    - /status: how I am set up here.
help-managers = With Manage Server: /channels, /roles and /access (where and whom I answer), /persona (who I am here), /tools, /drafting, /thoughtlog, /random, /replies, /memory server.
cmd-tools-name = tools
cmd-tools-description = Deliberate tool mode: tools offered only when a message asks for them
cmd-tools-deliberate-name = deliberate
cmd-tools-deliberate-description = Turn deliberate tool mode on or off for this server
cmd-tools-deliberate-state-name = state
cmd-tools-deliberate-state-description = on or off
cmd-tools-phrases-name = phrases
cmd-tools-phrases-description = Add or remove a phrase that offers a tool in deliberate mode
cmd-tools-phrases-action-name = action
cmd-tools-phrases-action-description = add or remove
cmd-tools-phrases-tool-name = tool
cmd-tools-phrases-tool-description = The tool the phrase offers
cmd-tools-phrases-phrase-name = phrase
cmd-tools-phrases-phrase-description = Words that, in a message, offer the tool (case does not matter)
cmd-tools-show-name = show
cmd-tools-show-description = Deliberate tool mode and this server's own phrases
tools-deliberate-on = Deliberate tool mode is on: a tool is offered only when a message asks for it.
tools-deliberate-off = Deliberate tool mode is off: every tool is offered.
tools-phrase-added = Added: "{ $phrase }" offers { $tool }.
tools-phrase-refused = Not added: { $tool } has 20 phrases already, or the phrase is empty.
tools-phrase-removed = Removed: "{ $phrase }" no longer offers { $tool }.
tools-show = Deliberate tool mode on: { $state }. This server's own phrases (the built-in ones apply too):
cmd-drafting-check-name = check
cmd-drafting-check-description = What is reviewed: tools (tool requests), replies, or both
cmd-drafting-model-name = model
cmd-drafting-model-description = The reviewer's model for this server: one of the configured ones, or "default"
drafting-model-refused = `{ $model }` is not one of this bot's models, so nothing was changed. Choose one of: { $allowed } (or "default").
drafting-details = Reviewed: { $check }; this server's reviewer model: { $model }; reviewer prompt: { $prompt }.
cmd-drafting-prompt-name = prompt
cmd-drafting-prompt-description = edit: change the reviewer's instructions in a form; default: the configured ones
drafting-prompt-title = Reviewer instructions
drafting-prompt-label = Instructions (empty: the default ones)
drafting-prompt-own = this server's own
drafting-prompt-default = the default one
cmd-persona-name = persona
cmd-persona-description = This server's persona: choose one, see it, edit it
cmd-persona-list-name = list
cmd-persona-list-description = The personas this server may speak as
cmd-persona-use-name = use
cmd-persona-use-description = Speak as one of these personas here (a fresh copy of it)
cmd-persona-use-name-name = name
cmd-persona-use-name-description = The persona's id or name, as /persona list shows it
cmd-persona-show-name = show
cmd-persona-show-description = The persona this server speaks as, and how it posts here
cmd-persona-edit-name = edit
cmd-persona-edit-description = Edit this server's persona in a form: name, prompt, trigger words, avatar
persona-list-title = Personas this server may speak as (/persona use <id>):
persona-list-line = - { $id }: { $name }
persona-list-line-here = - { $id }: { $name } (in use here)
persona-unknown = There is no persona "{ $name }". Personas: { $ids }.
persona-used = This server now speaks as { $name }: its own copy of { $id }, which /persona edit changes for this server only.
persona-show = Persona: { $name } ({ $origin }, from { $id })
    Trigger words: { $words }
    Avatar: { $avatar }
    In this channel it posts { $voice }.
    System prompt:
persona-origin-own = this server's own copy
persona-origin-default = the default
persona-voice-webhook = under its own name and avatar, through a webhook
persona-voice-bot = as the bot user (with Manage Webhooks here, it would post under its own name and avatar)
persona-edit-title = Edit this server's persona
persona-field-name = Name
persona-field-prompt = System prompt
persona-field-words = Trigger words, separated by commas
persona-field-avatar = Avatar address (https://…)
persona-saved = Saved: this server now speaks as { $name }. Other servers keep theirs.
persona-problem-no-name = Nothing was changed: a persona needs a name.
persona-problem-reserved-name = Nothing was changed: Discord does not allow a name containing "discord" or "clyde", or the names "everyone" and "here".
persona-problem-avatar = Nothing was changed: the avatar must be an https:// address.
cmd-memory-show-member-name = member
cmd-memory-show-member-description = With Manage Server: what I remember about this member
persona-problem-no-prompt = Nothing was changed: a persona needs a system prompt.
cmd-replies-name = replies
cmd-replies-description = How my replies are cut into messages on this server
cmd-replies-style-name = style
cmd-replies-style-description = Choose how replies are cut: paragraphs, compact, or the default
cmd-replies-style-style-name = style
cmd-replies-style-style-description = paragraphs (a few messages, as a person texts), compact (as few as the length needs) or default
replies-style-set = Replies here: { $style }.
reply-style-paragraphs = paragraphs (a few messages, short paragraphs together)
reply-style-compact = compact (as few messages as the length needs)
reply-style-default = { $style }, the default
cmd-replies-reactions-name = reactions
cmd-replies-reactions-description = Status reactions on the message I answer: 👀 while I work, ⚙️ while a tool runs, ❌ if I fail
cmd-replies-reactions-state-name = state
cmd-replies-reactions-state-description = on or off
replies-reactions-on = Status reactions are on here: 👀 while I work on a message, ⚙️ while a tool runs, removed when my reply is up; ❌ stays if I fail.
replies-reactions-off = Status reactions are off here.
cmd-replies-buttons-name = buttons
cmd-replies-buttons-description = Buttons on my replies: Stop while I write, then Again, 👍 and 👎
cmd-replies-buttons-state-name = state
cmd-replies-buttons-state-description = on or off
replies-buttons-on = Buttons are on here: Stop while I write a reply, then Again (for whoever asked) and 👍/👎 (for anyone), for 15 minutes.
replies-buttons-off = Buttons are off here: my replies carry none.
status-feedback = Feedback on my replies here: 👍 { $up } · 👎 { $down }
button-stop = Stop
button-again = Again
button-expired = These buttons have expired (they last 15 minutes).
button-not-yours-stop = Only the person I am answering, or a moderator, can stop this reply.
button-not-yours-again = Only the person who asked can ask for another answer.
button-no-more-again = This question has had its { $max } new answers already.
button-stop-nothing = That reply is no longer being written.
button-again-busy = I am busy in this channel; press Again when I have finished.
button-again-gone = The question is gone, so I cannot answer it again.
button-again-unavailable = I cannot answer again just now; try again in a moment.
feedback-noted-up = Thanks: noted 👍.
feedback-noted-down = Thanks: noted 👎.
feedback-unavailable = I could not save that just now; try again in a moment.
notice-feedback-title = A member rated a reply
notice-field-verdict = Rating
notice-field-feedback = This reply's ratings
cmd-tools-approvals-name = approvals
cmd-tools-approvals-description = Who approves a tool call that needs approval here
cmd-tools-approvals-by-name = by
cmd-tools-approvals-by-description = requester (the member asking, or a moderator) or moderators
tools-approvals-requester = Approvals here are decided by the member I am answering, or by a moderator.
tools-approvals-moderators = Approvals here are decided by moderators only.
cmd-tools-mcp-name = mcp
cmd-tools-mcp-description = List the MCP servers, or turn one's tools on or off here
cmd-tools-mcp-action-name = action
cmd-tools-mcp-action-description = list, enable or disable
cmd-tools-mcp-server-name = server
cmd-tools-mcp-server-description = The server's name, as /tools mcp list shows it
tools-mcp-none = This bot has no MCP servers configured.
tools-mcp-line = MCP { $server }: on here: { $here } · connected: { $connected } · tools: { $tools } · last error: { $error }
tools-mcp-unknown = There is no MCP server named “{ $server }”. Servers: { $servers }
tools-mcp-enabled = The tools of { $server } are offered here now. Calls that change something still wait for approval.
tools-mcp-disabled = The tools of { $server } are no longer offered here.
approval-card = **Approval needed** (`{ $tool }`)
    { $what }
    { $who } may press Approve or Deny within { $minutes } min; no answer is a denial.
approval-who-requester = <@{ $requester }> or a moderator
approval-who-moderators = A moderator
approval-approve = Approve
approval-deny = Deny
approval-approved = ✅ Approved by <@{ $by }>.
approval-denied = ❌ Denied by <@{ $by }>.
approval-timed-out = ⌛ Nobody answered in time: not done.
approval-withdrawn = The request was withdrawn (/kill).
approval-not-yours = You may not decide this request.
approval-decided = This request was decided already.
approval-what-channel-reminder = Set a reminder for everyone in this channel, { $when }: “{ $text }”
approval-what-forget-server-fact = Forget what I remember for the whole server (fact #{ $id }): “{ $text }”
approval-when-in = in { $minutes } min
approval-outside = Call the outside tool { $tool } with { $arguments }
approval-when-at = at { $at } ({ $zone })
approval-when-repeat = , repeating { $repeat }
notice-approval-title = A tool call asked for approval
notice-field-what = What
notice-field-outcome = Outcome

# /ask (SPEC A5)
cmd-ask-name = ask
cmd-ask-description = Ask me something; I answer here
cmd-ask-text-name = text
cmd-ask-text-description = What you want to ask
cmd-ask-private-name = private
cmd-ask-private-description = Only you see the answer
ask-refused = I don't answer here: this server's moderators closed this channel, or your role, to me.
ask-stopping = I'm restarting right now. Please ask again in a minute.
ask-stopped = Stopped.
ask-no-answer = I have no answer to that.
ask-cut = I had to stop here: Discord lets me write an answer to a command for 15 minutes only.

# Message menus (SPEC A5)
menu-ask-name = Ask about this
menu-remember-name = Remember this
menu-forget-name = Forget this
menu-ask-title = Ask about this message
menu-ask-question = Your question
menu-remember-nothing = There is nothing in that message I could remember about a person.
menu-remembered = I'll remember that.
menu-remember-full = I can't remember more about this person; ask a moderator to clear some with /memory.
menu-remember-consent = { $author }, { $asker } would like me to remember this from your message: "{ $fact }". May I?
menu-consent-allow = Allow
menu-consent-decline = Decline
menu-consent-not-yours = Only the person the message is from can answer this.
menu-consent-expired = This request has expired; nothing was remembered.
menu-consent-allowed = Allowed: I'll remember that.
menu-consent-declined = Declined: nothing was remembered.
menu-forgot = Forgotten from that message: { $count } fact(s).
