//! The runner's one view of the outside world: something that makes a delivery attempt. The
//! integrations implement it; tests can script it.

use std::future::Future;
use std::pin::Pin;

use crate::store::JobRow;

use super::Attempt;

/// An attempt in progress.
pub type Delivery<'a> = Pin<Box<dyn Future<Output = Attempt> + Send + 'a>>;

/// Makes delivery attempts.
pub trait Deliver: Send + Sync + 'static {
    /// Makes one attempt of `job` and classifies how it ended.
    fn deliver<'a>(&'a self, job: &'a JobRow) -> Delivery<'a>;
}
