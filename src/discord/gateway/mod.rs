//! What comes in over the gateway: its events ([`events`]), how a message reads for the core
//! ([`message`]), whether it starts a turn ([`admission`]), what a new session missed
//! ([`catch_up`]), a press of a reply's button ([`presses`]) or of a request for consent ([`consent`]). The recent messages it delivered
//! are kept in [`super::recent`], which the REST side reads history from too.

pub mod admission;
pub mod catch_up;
pub mod consent;
pub mod events;
pub mod message;
pub mod presses;
