//! Server-rendered pages of Porch's admin UI, as Leptos components. This crate knows nothing of
//! the server: pages take plain view models and return HTML strings.

mod home;

pub use home::{HomeView, render_home};
