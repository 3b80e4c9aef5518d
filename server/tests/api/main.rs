//! Integration tests: the real server on 127.0.0.1:0 with a temporary SQLite file, driven over
//! real HTTP and websockets. One test binary, so it builds once.

mod brakes;
mod config_doc;
mod connections;
mod helpers;
mod inbox;
mod snippet;
mod widget_errors;
mod widget_messages;
mod writer;
