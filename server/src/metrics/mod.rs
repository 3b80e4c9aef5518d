//! Capacity figures: the counters hot paths bump ([`Meters`], lock-free), the event-loop
//! heartbeat, the per-second sampler with its hour in memory and 30 days of minute rollups in
//! SQLite, the headroom estimate, and the Prometheus exposition served at `/metrics`.

mod deliveries;
mod exposition;
mod headroom;
mod heartbeat;
pub mod loadtest_report;
mod meters;
mod process;
pub mod replication;
mod sampler;

// The histogram lives in a leaf module (so `store` can use it); the counters other layers keep
// (`jobs` times its lag with it) still find it here beside `Meters`.
pub use crate::histogram::LogHistogram;
pub use deliveries::DeliveryGauges;
pub use exposition::{CONTENT_TYPE, render};
pub use headroom::{
    BUSY_RATE, MIN_BUSY_SECONDS, MIN_MESSAGES, Shortfall, TrafficCost, messages_per_core,
    traffic_cost,
};
pub use heartbeat::spawn_heartbeat;
pub use meters::{Meters, OpenConnection};
pub use replication::{Replication, spawn_replication_scraper};
pub use sampler::{Capacity, RETENTION, SamplerTiming, Sources, spawn_sampler};
