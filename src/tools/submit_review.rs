//! `submit_review`: the reviewer's typed verdict, validated server-side (SPEC S1). It ends the
//! reviewer's session; the Response Drafting flow reads the verdict from the output.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::domain::role::{Role, RoleSet};

/// The reviewer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Pass,
    Reject,
}

/// A review verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmittedVerdict {
    /// Pass lets the request run (or the reply be posted); reject stops it.
    pub decision: Decision,
    /// Short findings: required when rejecting, empty when passing. At most 5.
    #[serde(default)]
    pub findings: Vec<String>,
    /// When rejecting: whether the author may correct the request once.
    #[serde(default)]
    pub correction_allowed: bool,
}

const MAX_FINDINGS: usize = 5;
const MAX_FINDING_CHARS: usize = 300;

pub struct SubmitReview;

#[async_trait]
impl Tool for SubmitReview {
    type Args = SubmittedVerdict;
    const NAME: &'static str = "submit_review";
    const ROLES: RoleSet = RoleSet::of(&[Role::Reviewer]);
    const DESCRIPTION: &'static str = "Submit your verdict on the request or reply under \
        review: pass, or reject with short findings and whether one correction is allowed.";
    const GATED: bool = false;
    const EXTERNAL_EFFECT: bool = false;

    fn validate(&self, verdict: &SubmittedVerdict) -> Result<(), ArgError> {
        match verdict.decision {
            Decision::Pass if !verdict.findings.is_empty() => {
                return Err(ArgError::at("$.findings", "must be empty when passing"));
            }
            Decision::Pass if verdict.correction_allowed => {
                return Err(ArgError::at(
                    "$.correction_allowed",
                    "only applies when rejecting",
                ));
            }
            Decision::Reject if verdict.findings.is_empty() => {
                return Err(ArgError::at("$.findings", "give at least one finding"));
            }
            _ => {}
        }
        if verdict.findings.len() > MAX_FINDINGS {
            return Err(ArgError::at(
                "$.findings",
                format!("at most {MAX_FINDINGS} findings"),
            ));
        }
        for (i, finding) in verdict.findings.iter().enumerate() {
            ArgError::check_len(&format!("$.findings[{i}]"), finding, 1, MAX_FINDING_CHARS)?;
        }
        Ok(())
    }

    async fn execute(
        &self,
        _ctx: &ToolContext<'_>,
        verdict: SubmittedVerdict,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let data = serde_json::to_value(&verdict).map_err(|e| ToolError::Failed {
            code: Some("internal_error".into()),
            message: e.to_string(),
        })?;
        Ok(ToolOutput {
            data: Some(data),
            end_turn: true,
            ..ToolOutput::default()
        })
    }
}
