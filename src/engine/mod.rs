//! The engine: what runs turns on top of the tool-call stage. The [`orchestrator`] takes
//! triggering messages, one turn at a time per channel; the pass loop ([`passes`]) calls the
//! model and the stage until the turn ends; [`stream`] and [`segment`] deliver the streamed text;
//! [`context`] builds what the model sees; [`resume`] is what a turn resumed after a restart
//! takes from its earlier run; [`reviewer`] runs the reviewer's own pass; due
//! [`reminders`] become turns; the [`image_worker`] makes planned images; [`seen_marks`] keeps
//! where the next catch-up starts.

pub mod attachments;
pub mod budget;
pub mod context;
pub mod image_worker;
pub mod orchestrator;
pub mod passes;
pub mod pictures;
pub mod reminders;
pub mod resume;
pub mod reviewer;
pub mod seen_marks;
pub mod segment;
pub mod stream;
