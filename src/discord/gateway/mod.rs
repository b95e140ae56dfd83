//! What comes in over the gateway: its events ([`events`]), how a message reads for the core
//! ([`message`]), whether it starts a turn ([`admission`]), what a new session missed
//! ([`catch_up`]), and the recent messages the gateway delivered ([`recent`]).

pub mod admission;
pub mod catch_up;
pub mod events;
pub mod message;
pub mod recent;
