//! `plan_image`: records an image plan and returns `executed: false` with the plan's id. A worker
//! generates the image later and posts it; a plan is a request accepted, not an image made
//! (SPEC S5). Identical plans in one turn are recorded once; distinct plans are capped per turn;
//! a promised set ("three pictures") is checked for completeness before the turn is delivered
//! ([`crate::domain::ledger::PlanLedger::verify_complete`]).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::registry::canonical_json;
use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::ImageConfig;
use crate::domain::ledger::PlanRefusal;
use crate::domain::ports::{NewImagePlan, PlanId, PlanPart};
use crate::domain::role::{Role, RoleSet};

/// The image's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    #[default]
    Square,
    Portrait,
    Landscape,
}

impl Aspect {
    pub fn as_str(self) -> &'static str {
        match self {
            Aspect::Square => "square",
            Aspect::Portrait => "portrait",
            Aspect::Landscape => "landscape",
        }
    }
}

/// One image of a promised set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// A label shared by the set.
    pub set: String,
    /// From 1.
    pub index: u8,
    /// At most 8.
    pub total: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// For the image model.
    pub prompt: String,
    // A caption posted with the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    // The image's shape.
    #[serde(default)]
    pub aspect: Aspect,
    /// Which image of a promised set this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
}

/// Most images in one promised set.
const MAX_SET: u8 = 8;
/// Longest caption, in characters.
const MAX_CAPTION: usize = 300;

pub struct PlanImage {
    max_plans: u32,
    max_prompt: usize,
}

impl PlanImage {
    pub fn new(config: &ImageConfig) -> Self {
        Self {
            max_plans: config.max_plans_per_turn,
            max_prompt: config.prompt_max_chars,
        }
    }
}

#[async_trait]
impl Tool for PlanImage {
    type Args = Args;
    const NAME: &'static str = "plan_image";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona, Role::ImagePlanner]);
    const DESCRIPTION: &'static str = "Plan an image for a worker to draw and post here later \
        (never say it is done). Plan each image of a set with `part`.";
    const PROGRESS_KEY: Option<&'static str> = Some("progress-plan-image");

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.prompt", &args.prompt, 1, self.max_prompt)?;
        if let Some(caption) = &args.caption {
            ArgError::check_len("$.caption", caption, 0, MAX_CAPTION)?;
        }
        if let Some(part) = &args.part {
            ArgError::check_len("$.part.set", &part.set, 1, 40)?;
            ArgError::check_range("$.part.total", part.total, 1, MAX_SET)?;
            ArgError::check_range("$.part.index", part.index, 1, part.total)?;
        }
        Ok(())
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let identity = canonical_json(&serde_json::to_value(&args).unwrap_or_default());
        let part = args.part.as_ref().map(|p| PlanPart {
            set: p.set.trim().to_owned(),
            index: p.index,
            total: p.total,
        });
        let admitted = ctx.turn.plans(|plans| match plans.existing(&identity) {
            Some(existing) => Err(existing.clone()),
            None => Ok(plans.admit(part.as_ref(), self.max_plans)),
        });
        match admitted {
            Err(existing) => return Ok(planned(&existing, true)),
            Ok(admission) => match admission {
                Ok(()) => {}
                Err(PlanRefusal::LimitReached { limit }) => {
                    return Err(ToolError::business(
                        "plan_limit_reached",
                        format!(
                            "This reply already has {limit} image plans; no more can be added."
                        ),
                    ));
                }
                Err(PlanRefusal::PartConflict { set, total }) => {
                    return Err(ToolError::business(
                        "plan_part_conflict",
                        format!(
                            "The set `{set}` was planned with {total} images; use the same total."
                        ),
                    ));
                }
            },
        }
        // Calls in a turn run one at a time (one call per pass), so nothing can slip between the
        // check above and the record below.
        let scope = ctx.scope();
        let id = PlanId(Uuid::now_v7().to_string());
        let plan = NewImagePlan {
            id: id.clone(),
            turn: ctx.turn.id,
            server: scope.server,
            channel: scope.channel,
            user: scope.user,
            persona: scope.persona.clone(),
            prompt: args.prompt.trim().to_owned(),
            caption: args.caption.clone(),
            aspect: args.aspect.as_str().to_owned(),
            part: part.clone(),
            at_ms: ctx.now_ms(),
            visibility: scope.visibility,
            locale: ctx.turn.locale,
        };
        ctx.ports().plans.record_plan(plan).await?;
        ctx.turn
            .plans(|plans| plans.record(identity, id.clone(), part.as_ref()));
        Ok(planned(&id, false))
    }
}

fn planned(id: &PlanId, deduplicated: bool) -> ToolOutput {
    ToolOutput::data(json!({
        "executed": false,
        "status": "planned",
        "plan_id": id.0,
        "deduplicated": deduplicated,
    }))
    .with_message("The image is planned, not made yet: a worker will post it to the channel.")
}
