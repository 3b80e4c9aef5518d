//! Brakes: in-memory, O(1) decisions on whether a visitor message may go to the database. Per
//! visitor a token bucket, per IP a bucket on new conversations and budgets for uploads, per site
//! the flood brake, and per address and site its share of that site's minute.

mod bucket;
mod flood;
mod keyed;
mod share;
mod sliding_minute;
mod uploads;

pub use bucket::TokenBucket;
pub use flood::FloodBrake;
pub use keyed::{Admitted, Brakes, IpLimits, Refusal, ip_key};
pub use uploads::UploadBrake;
