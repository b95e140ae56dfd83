//! Tool-calling roles. A role decides which tools a caller sees and may run (SPEC S1, S2).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who is calling tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The author of a chat turn.
    Persona,
    /// The private reviewer of Response Drafting: read-only lookups and its verdict.
    Reviewer,
    /// The hidden image agent: planning tools only.
    ImagePlanner,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Persona, Role::Reviewer, Role::ImagePlanner];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Persona => "persona",
            Role::Reviewer => "reviewer",
            Role::ImagePlanner => "image_planner",
        }
    }

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of roles, as a bit set: cheap to copy and to test on every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoleSet(u8);

impl RoleSet {
    pub const fn of(roles: &[Role]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < roles.len() {
            #[allow(
                clippy::indexing_slicing,
                reason = "i < roles.len(): the loop's condition"
            )]
            let role = roles[i];
            bits |= role.bit();
            i += 1;
        }
        RoleSet(bits)
    }

    pub const fn contains(self, role: Role) -> bool {
        self.0 & role.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Role> {
        Role::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_set_holds_exactly_its_roles() {
        let set = RoleSet::of(&[Role::Persona, Role::ImagePlanner]);
        assert!(set.contains(Role::Persona));
        assert!(!set.contains(Role::Reviewer));
        assert!(set.contains(Role::ImagePlanner));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![Role::Persona, Role::ImagePlanner]
        );
        assert!(!RoleSet::default().contains(Role::Persona));
    }
}
