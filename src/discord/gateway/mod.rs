//! What comes in over the gateway.

pub mod catch_up;
pub mod events;
pub mod recent;
