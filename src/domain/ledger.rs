//! Per-turn ledgers: image plans (SPEC S5) and completed tool outcomes (SPEC R4). Both live on
//! the turn, so they survive passes, restarts, key rotation and model fallback.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// A stored image plan's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PlanId(pub String);

/// One part of a promised set of images ("3 pictures"): the set's key, this part and the total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanPart {
    pub set: String,
    pub index: u8,
    pub total: u8,
}

/// The image plans a turn has recorded.
#[derive(Debug, Default)]
pub struct PlanLedger {
    /// Request identity (canonical arguments) to the plan recorded for it.
    by_identity: HashMap<String, PlanId>,
    /// Promised sets: key to (total, indices planned).
    parts: BTreeMap<String, (u8, BTreeSet<u8>)>,
}

/// Why a plan cannot be added to the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanRefusal {
    /// The turn already has `limit` distinct plans.
    LimitReached { limit: u32 },
    /// A part names a different total than earlier parts of the same set.
    PartConflict { set: String, total: u8 },
}

impl PlanLedger {
    /// The plan already recorded for this exact request, if any.
    pub fn existing(&self, identity: &str) -> Option<&PlanId> {
        self.by_identity.get(identity)
    }

    pub fn len(&self) -> usize {
        self.by_identity.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_identity.is_empty()
    }

    /// Checks that a new plan fits: under the limit, consistent with its set.
    pub fn admit(&self, part: Option<&PlanPart>, limit: u32) -> Result<(), PlanRefusal> {
        if self.by_identity.len() >= limit as usize {
            return Err(PlanRefusal::LimitReached { limit });
        }
        if let Some(part) = part
            && let Some((total, _)) = self.parts.get(&part.set)
            && *total != part.total
        {
            return Err(PlanRefusal::PartConflict {
                set: part.set.clone(),
                total: *total,
            });
        }
        Ok(())
    }

    /// Records a stored plan.
    pub fn record(&mut self, identity: String, id: PlanId, part: Option<&PlanPart>) {
        if let Some(part) = part {
            self.parts
                .entry(part.set.clone())
                .or_insert_with(|| (part.total, BTreeSet::new()))
                .1
                .insert(part.index);
        }
        self.by_identity.insert(identity, id);
    }

    /// Compares what the turn promised (every part of every set) with what it planned. Called
    /// before the turn is called delivered: an incomplete set fails loudly (SPEC S5).
    pub fn verify_complete(&self) -> Result<(), IncompletePlans> {
        let missing: Vec<MissingPart> = self
            .parts
            .iter()
            .flat_map(|(set, (total, seen))| {
                (1..=*total)
                    .filter(|i| !seen.contains(i))
                    .map(|index| MissingPart {
                        set: set.clone(),
                        index,
                        total: *total,
                    })
            })
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(IncompletePlans { missing })
        }
    }
}

/// One promised image that was never planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingPart {
    pub set: String,
    pub index: u8,
    pub total: u8,
}

/// The turn promised images it did not plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompletePlans {
    pub missing: Vec<MissingPart>,
}

impl fmt::Display for IncompletePlans {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("image plans incomplete: missing ")?;
        for (i, m) in self.missing.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}/{}", m.set, m.index, m.total)?;
        }
        Ok(())
    }
}

impl std::error::Error for IncompletePlans {}

/// A completed call's response, kept for reuse.
#[derive(Debug, Clone, PartialEq)]
struct RecordedOutcome {
    response: Value,
    /// The provider invocation (attempt) that completed it.
    invocation: u32,
}

/// Completed tool outcomes of the turn, keyed by request identity (name plus canonical
/// arguments), so a retried pass never dispatches the same side effect twice (SPEC R4).
#[derive(Debug, Default)]
pub struct OutcomeLedger {
    by_identity: HashMap<String, RecordedOutcome>,
}

impl OutcomeLedger {
    pub fn record(&mut self, identity: String, response: Value, invocation: u32) {
        self.by_identity.insert(
            identity,
            RecordedOutcome {
                response,
                invocation,
            },
        );
    }

    /// The response to reuse for this identity. With drafting On any successful identical
    /// request is reused; Off, only calls an earlier invocation (a fallback or a key rotation)
    /// completed, never repeats within one invocation.
    pub fn reusable(&self, identity: &str, invocation: u32, drafting: bool) -> Option<&Value> {
        self.by_identity
            .get(identity)
            .filter(|o| drafting || o.invocation < invocation)
            .map(|o| &o.response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn part(set: &str, index: u8, total: u8) -> PlanPart {
        PlanPart {
            set: set.into(),
            index,
            total,
        }
    }

    // SPEC S5: a promised set with a part missing fails loudly; a full one passes.
    #[test]
    fn incomplete_plan_set_fails_verification() {
        let mut ledger = PlanLedger::default();
        ledger.record("a".into(), PlanId("p1".into()), Some(&part("cats", 1, 3)));
        ledger.record("b".into(), PlanId("p2".into()), Some(&part("cats", 3, 3)));
        let err = ledger.verify_complete().unwrap_err();
        assert_eq!(
            err.missing,
            vec![MissingPart {
                set: "cats".into(),
                index: 2,
                total: 3
            }]
        );
        assert_eq!(err.to_string(), "image plans incomplete: missing cats 2/3");
        ledger.record("c".into(), PlanId("p3".into()), Some(&part("cats", 2, 3)));
        assert_eq!(ledger.verify_complete(), Ok(()));
    }

    // SPEC S5: plans are limited per turn and parts of a set must agree on its size.
    #[test]
    fn plan_limit_and_part_conflicts_are_refused() {
        let mut ledger = PlanLedger::default();
        assert_eq!(ledger.admit(None, 1), Ok(()));
        ledger.record("a".into(), PlanId("p1".into()), Some(&part("s", 1, 2)));
        assert_eq!(
            ledger.admit(None, 1),
            Err(PlanRefusal::LimitReached { limit: 1 })
        );
        assert_eq!(
            ledger.admit(Some(&part("s", 2, 3)), 5),
            Err(PlanRefusal::PartConflict {
                set: "s".into(),
                total: 2
            })
        );
        assert_eq!(ledger.existing("a"), Some(&PlanId("p1".into())));
    }

    // SPEC R4: Off reuses only what an earlier invocation completed; On reuses any success.
    #[test]
    fn outcomes_are_reused_across_invocations_only_when_drafting_is_off() {
        let mut ledger = OutcomeLedger::default();
        ledger.record("t{}".into(), json!({"result": 1}), 0);
        assert_eq!(ledger.reusable("t{}", 0, false), None);
        assert_eq!(
            ledger.reusable("t{}", 1, false),
            Some(&json!({"result": 1}))
        );
        assert_eq!(ledger.reusable("t{}", 0, true), Some(&json!({"result": 1})));
        assert_eq!(ledger.reusable("other", 5, true), None);
    }
}
