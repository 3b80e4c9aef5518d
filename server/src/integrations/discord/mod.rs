//! Discord: a site's messages posted to a channel webhook (one thread per conversation in a
//! forum channel), escaped and split within Discord's limits, paced by its rate-limit headers.

mod deliver;
mod setup;
mod test_post;
mod text;

pub use deliver::{DiscordConfig, DiscordSecrets, deliver_post};
pub use setup::{DiscordSetup, check_discord};
pub use test_post::deliver_test;
pub use text::{CONTENT_LIMIT, escape, split};
