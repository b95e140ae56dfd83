//! Response Drafting's review (SPEC C8, R1-R5): verdicts, the server's review policy, and the
//! per-turn ledger of tool-request reviews with its budgets (the reviewer port is
//! [`crate::tools::Reviewer`]). The ledger lives on the turn, so its limits survive passes, key
//! rotation and model fallback.

use std::collections::HashSet;

use serde_json::Value;

/// A reviewer's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewVerdict {
    Pass,
    Reject {
        findings: Vec<String>,
        correction_allowed: bool,
    },
}

/// What asking the reviewer gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewOutcome {
    Verdict(ReviewVerdict),
    /// The reviewer could not answer (provider failure, timeout, no verdict): review ends for
    /// the turn (SPEC R5).
    Unavailable(String),
}

/// What a server's reviewer checks while drafting is on, and with which prompt and model (the
/// configured ones when unset).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReviewPolicy {
    /// Tool calls are content to review.
    #[serde(default = "yes")]
    pub tool_calls: bool,
    /// Replies are content to review.
    #[serde(default = "yes")]
    pub replies: bool,
    /// The server's own reviewer instructions.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The server's own reviewer model (tried before the configured ones), one of the
    /// operator's ([`ReviewPolicy::configured_model`]).
    #[serde(default)]
    pub model: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for ReviewPolicy {
    fn default() -> Self {
        Self {
            tool_calls: true,
            replies: true,
            prompt: None,
            model: None,
        }
    }
}

impl ReviewPolicy {
    /// The server's own reviewer model while it is one of `configured`: a name stored before
    /// choices were checked, or since taken out of the configuration, is ignored, and the
    /// configured order applies (the operator's key asks only the operator's models).
    pub fn configured_model(&self, configured: &[String]) -> Option<&str> {
        self.model
            .as_deref()
            .filter(|model| configured.iter().any(|c| c == model))
    }
}

/// The models a server may give its reviewer (`/drafting model`): the operator's, the
/// reviewer's list first, then the persona's, each once. Both are asked on the operator's
/// endpoint and keys, and nothing outside them is.
pub fn reviewer_choices(review: &[String], persona: &[String]) -> Vec<String> {
    let mut choices: Vec<String> = Vec::new();
    for model in review.iter().chain(persona) {
        if !model.trim().is_empty() && !choices.contains(model) {
            choices.push(model.clone());
        }
    }
    choices
}

/// What `/drafting model:` asked for, read against the configured models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    /// `default` (or nothing but spaces): the configured order again.
    Configured,
    /// One of the configured models.
    Model(String),
    /// Anything else: refused, and nothing is stored.
    Unknown,
}

impl ModelChoice {
    pub fn read(asked: &str, configured: &[String]) -> Self {
        let asked = asked.trim();
        if asked.is_empty() || asked == "default" {
            return Self::Configured;
        }
        match configured.iter().find(|model| model.as_str() == asked) {
            Some(model) => Self::Model(model.clone()),
            None => Self::Unknown,
        }
    }
}

/// A call of the turn as the reviewer sees it: the request and its real outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedCall {
    pub tool: String,
    pub arguments: Value,
    pub outcome: Value,
}

/// One line of the turn summary's review section (SPEC C8, thought log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewNote {
    /// The tool's name, or `reply`.
    pub subject: String,
    pub verdict: NoteVerdict,
    pub findings: Vec<String>,
}

impl ReviewNote {
    pub fn new(subject: impl Into<String>, verdict: NoteVerdict, findings: &[String]) -> Self {
        Self {
            subject: subject.into(),
            verdict,
            findings: findings.to_vec(),
        }
    }
}

/// What a review note records, shown in the turn summary as its text (`pass`, `reject`,
/// `revise`, `unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteVerdict {
    /// The request may run, or the reply is posted.
    Pass,
    /// The tool request was rejected.
    Reject,
    /// The reply draft was sent back for a revision.
    Revise,
    /// The reviewer could not answer.
    Unavailable,
}

impl NoteVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Reject => "reject",
            Self::Revise => "revise",
            Self::Unavailable => "unavailable",
        }
    }
}

impl std::fmt::Display for NoteVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Most corrections a turn's author gets after rejections (SPEC R3).
pub const MAX_CORRECTIONS: u32 = 2;
/// Most detailed tool reviews in one turn (SPEC R3).
pub const MAX_DETAILED_REVIEWS: u32 = 8;

/// What to do with a prepared request before (or instead of) reviewing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Ask the reviewer (a detailed review is counted).
    Review,
    /// Run it as ordinary (reviewer unavailable, and the tool was never rejected).
    Proceed,
    /// Refuse again without asking: an exact rejected request, or a changed form of a tool the
    /// unavailable reviewer had rejected.
    RejectAgain { findings: Vec<String> },
    /// End the turn through the held-response path: blocked after the author was told no
    /// correction remains, or the review budget is spent.
    Hold,
}

/// A prepared request as review remembers it: its tool and its identity (name plus canonical
/// arguments, SPEC R3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestKey<'a> {
    pub name: &'a str,
    pub identity: &'a str,
}

/// The turn's tool-request review state.
#[derive(Debug, Default)]
pub struct ReviewLedger {
    /// Exact rejected requests (identities), with their findings.
    blocked: Vec<(String, Vec<String>)>,
    /// Tools the author was told have no correction left.
    no_correction: HashSet<String>,
    /// Tools ever rejected this turn.
    rejected: HashSet<String>,
    corrections_used: u32,
    detailed_reviews: u32,
    /// The reviewer could not answer; review has ended for the turn.
    pub unavailable: bool,
    /// Every call of the turn with its real outcome, for the reviewer's context.
    pub calls: Vec<ReviewedCall>,
    /// Verdicts, for the turn's summary.
    pub notes: Vec<ReviewNote>,
}

impl ReviewLedger {
    /// Decides what happens to `request` before any paid review (SPEC R3, R5).
    pub fn gate(&mut self, request: RequestKey<'_>) -> Gate {
        if let Some((_, findings)) = self.blocked.iter().find(|(id, _)| id == request.identity) {
            if self.no_correction.contains(request.name) {
                return Gate::Hold;
            }
            return Gate::RejectAgain {
                findings: findings.clone(),
            };
        }
        if self.no_correction.contains(request.name) {
            return Gate::Hold;
        }
        if self.unavailable {
            // Nothing can approve a changed form of a rejected tool; others run as usual.
            if self.rejected.contains(request.name) {
                return Gate::RejectAgain {
                    findings: vec![
                        "The reviewer is unavailable, and this tool was rejected earlier in this reply."
                            .to_owned(),
                    ],
                };
            }
            return Gate::Proceed;
        }
        if self.detailed_reviews >= MAX_DETAILED_REVIEWS {
            return Gate::Hold;
        }
        self.detailed_reviews += 1;
        Gate::Review
    }

    /// Records a rejection; returns whether the author may correct the request once.
    pub fn reject(&mut self, request: RequestKey<'_>, findings: &[String], allowed: bool) -> bool {
        self.blocked
            .push((request.identity.to_owned(), findings.to_vec()));
        self.rejected.insert(request.name.to_owned());
        // A correction is the author's next proposal of this tool, reviewed on its own.
        let correction = allowed && self.corrections_used < MAX_CORRECTIONS;
        if correction {
            self.corrections_used += 1;
        } else {
            self.no_correction.insert(request.name.to_owned());
        }
        correction
    }

    pub fn detailed_reviews(&self) -> u32 {
        self.detailed_reviews
    }

    pub fn corrections_used(&self) -> u32 {
        self.corrections_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC C8, A2: a server's reviewer model is one of the operator's; anything else is refused,
    // and a stored name no longer configured is ignored.
    #[test]
    fn a_server_reviewer_model_is_one_of_the_configured() {
        let configured = reviewer_choices(
            &["review-model".into(), "gpt".into()],
            &["gpt".into(), "test-model".into(), " ".into()],
        );
        assert_eq!(configured, ["review-model", "gpt", "test-model"]);
        assert_eq!(
            ModelChoice::read(" test-model ", &configured),
            ModelChoice::Model("test-model".into())
        );
        assert_eq!(
            ModelChoice::read("default", &configured),
            ModelChoice::Configured
        );
        assert_eq!(
            ModelChoice::read("  ", &configured),
            ModelChoice::Configured
        );
        assert_eq!(
            ModelChoice::read("rogue-model", &configured),
            ModelChoice::Unknown
        );
        assert_eq!(ModelChoice::read("GPT", &configured), ModelChoice::Unknown);
        let mut policy = ReviewPolicy {
            model: Some("rogue-model".into()),
            ..ReviewPolicy::default()
        };
        assert_eq!(policy.configured_model(&configured), None);
        policy.model = Some("gpt".into());
        assert_eq!(policy.configured_model(&configured), Some("gpt"));
    }

    struct Request {
        name: &'static str,
        identity: String,
    }

    impl Request {
        fn key(&self) -> RequestKey<'_> {
            RequestKey {
                name: self.name,
                identity: &self.identity,
            }
        }
    }

    fn request(name: &'static str, n: u32) -> Request {
        Request {
            name,
            identity: format!("{name}{{\"n\":{n}}}"),
        }
    }

    // SPEC R3: an exact rejected request stays blocked; a different one is reviewed on its own.
    #[test]
    fn exact_rejections_stay_blocked_and_new_forms_are_reviewed() {
        let mut ledger = ReviewLedger::default();
        let first = request("plan_image", 1);
        assert_eq!(ledger.gate(first.key()), Gate::Review);
        assert!(ledger.reject(first.key(), &["too graphic".into()], true));
        assert_eq!(
            ledger.gate(first.key()),
            Gate::RejectAgain {
                findings: vec!["too graphic".into()]
            }
        );
        assert_eq!(
            ledger.gate(request("plan_image", 2).key()),
            Gate::Review,
            "the correction"
        );
        assert_eq!(
            ledger.gate(request("plan_image", 3).key()),
            Gate::Review,
            "reviewed on its own"
        );
        assert_eq!(ledger.detailed_reviews(), 3);
    }

    // SPEC R3: two corrections per turn; after "no correction", a blocked request holds.
    #[test]
    fn corrections_are_limited_and_no_correction_ends_in_hold() {
        let mut ledger = ReviewLedger::default();
        for n in 0..2 {
            let r = request("remember_fact", n);
            assert_eq!(ledger.gate(r.key()), Gate::Review);
            assert!(ledger.reject(r.key(), &[], true), "correction {n}");
        }
        let third = request("remember_fact", 9);
        assert_eq!(ledger.gate(third.key()), Gate::Review);
        assert!(
            !ledger.reject(third.key(), &[], true),
            "the budget is spent"
        );
        assert_eq!(ledger.corrections_used(), 2);
        assert_eq!(
            ledger.gate(third.key()),
            Gate::Hold,
            "blocked after being told no correction"
        );
        assert_eq!(ledger.gate(request("remember_fact", 10).key()), Gate::Hold);
        assert_eq!(
            ledger.gate(request("plan_image", 1).key()),
            Gate::Review,
            "other tools go on"
        );
    }

    // SPEC R3: eight detailed reviews per turn.
    #[test]
    fn eight_detailed_reviews_per_turn() {
        let mut ledger = ReviewLedger::default();
        for n in 0..MAX_DETAILED_REVIEWS {
            assert_eq!(ledger.gate(request("probe", n).key()), Gate::Review);
        }
        assert_eq!(ledger.gate(request("probe", 99).key()), Gate::Hold);
    }

    // SPEC R5: with the reviewer unavailable, rejected tools stay blocked in any form; other
    // tools follow ordinary rules.
    #[test]
    fn unavailable_reviewer_keeps_rejections_and_lets_others_run() {
        let mut ledger = ReviewLedger::default();
        let rejected = request("plan_image", 1);
        ledger.gate(rejected.key());
        ledger.reject(rejected.key(), &["no".into()], true);
        ledger.unavailable = true;
        assert!(matches!(
            ledger.gate(rejected.key()),
            Gate::RejectAgain { .. }
        ));
        assert!(matches!(
            ledger.gate(request("plan_image", 2).key()),
            Gate::RejectAgain { .. }
        ));
        assert_eq!(ledger.gate(request("recall_facts", 1).key()), Gate::Proceed);
    }
}
