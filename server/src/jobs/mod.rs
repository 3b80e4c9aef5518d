//! Durable delivery of messages to outside services. Jobs are rows written in the same
//! transaction as the message; the runner keeps the ready set in memory, runs deliveries in
//! lanes, and records outcomes. One module per destination builds the request from the stored
//! message, sends it and classifies the outcome.

mod destinations;
mod index;
mod outcome;
mod policy;
mod retry;
mod runner;
mod slack;

pub use destinations::Destinations;
pub use index::Lane;
pub use outcome::{Attempt, Outcome};
pub use retry::retry_jobs;
pub use runner::{JobQueue, Runner, RunnerConfig};
