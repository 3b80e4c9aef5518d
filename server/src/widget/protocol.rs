//! Frames of widget protocol v1 (docs/widget-protocol.md) as Rust types. Parsing and
//! serialisation only; no decisions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::bad_frame::BadFrame;

use crate::store::{AttachmentMeta, ConversationId, MessageId, MessageRow};
use crate::values::Author;

use super::identity::{IdentityClaim, deserialize_claim};

/// The protocol version this server speaks.
pub const VERSION: u32 = 1;

/// Whether `hello.v` names [`VERSION`]: any JSON number equal to it, `1.0` too (some encoders
/// write every number so); `1.5`, `-1` or `2` do not.
#[allow(clippy::float_cmp)] // exact on purpose: small whole numbers are exact in f64
pub fn speaks_version(v: &serde_json::Number) -> bool {
    v.as_f64() == Some(f64::from(VERSION))
}

/// `hello.last_id`: any whole JSON number. One beyond what an id can be is clamped rather than
/// refused, as the protocol promises for any id too high (the newest stored is used) or
/// negative (0).
fn deserialize_last_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(id) = n.as_i64() {
        return Ok(Some(id));
    }
    if n.as_u64().is_some() {
        return Ok(Some(i64::MAX));
    }
    match n.as_f64() {
        // Beyond i64 (serde_json reads those as floats): the cast saturates.
        #[allow(clippy::cast_possible_truncation)]
        Some(f) if f.fract() == 0.0 => Ok(Some(f as i64)),
        _ => Err(serde::de::Error::custom("last_id must be a whole number")),
    }
}

fn null_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Option::<Vec<String>>::deserialize(d).map(Option::unwrap_or_default)
}

/// A frame from the client.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    Hello {
        /// Any JSON number: one that is not [`VERSION`] is `unsupported_version`, not a bad frame.
        v: serde_json::Number,
        #[serde(default)]
        token: Option<String>,
        #[serde(default, deserialize_with = "deserialize_last_id")]
        last_id: Option<i64>,
        #[serde(default)]
        page: Option<String>,
        #[serde(default)]
        referrer: Option<String>,
        #[serde(default)]
        language: Option<String>,
        #[serde(default)]
        time_zone: Option<String>,
        /// Who the host page says the visitor is (docs/widget.md#known-visitors).
        #[serde(default, deserialize_with = "deserialize_claim")]
        identity: Option<IdentityClaim>,
    },
    Message {
        client_id: String,
        /// May be empty when the message carries attachments.
        #[serde(default)]
        body: String,
        /// Ids of the visitor's uploads (`POST /widget/attachments`) this message takes; `null`
        /// is none, as `null` is "left out" for every other optional field.
        #[serde(default, deserialize_with = "null_as_none")]
        attachments: Vec<String>,
        /// The pre-chat form's answers, with the first message after the form was shown.
        #[serde(default)]
        prechat: Option<PrechatFrame>,
    },
    /// The visitor's address for replies while away (offline capture).
    Email { email: String },
    /// The visitor started (`true`) or stopped typing; shown to agents, never stored.
    Typing { active: bool },
    /// "Are you there?": answered with `pong`, so a client finds out that its connection died
    /// without a word even while it sends nothing else.
    Ping {},
}

/// The visitor's answers to the pre-chat form (docs/widget-protocol.md#message-client--server).
#[derive(Debug, Default, Deserialize)]
pub struct PrechatFrame {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// The answer to the site's own question.
    #[serde(default)]
    pub answer: Option<String>,
}

impl ClientFrame {
    /// Parses a text frame; a shape error says what did not fit (answered with `bad_frame`).
    ///
    /// # Errors
    /// The frame is not JSON, not an object, or not one of the client frames.
    pub fn parse(text: &str) -> Result<Self, BadFrame> {
        serde_json::from_str(text).map_err(|err| {
            // serde reads `[1]` as a tag, and says so ("expected variant identifier").
            if text.trim_start().starts_with('{') || err.is_syntax() {
                BadFrame::new(&in_plain_words(&err))
            } else {
                BadFrame::new("not a JSON object")
            }
        })
    }
}

/// serde's words for what did not fit, except where they mislead: `serde_json` says "unexpected end
/// of hex escape" or "lone leading surrogate" of an escape that is whole but half of a pair.
fn in_plain_words(err: &serde_json::Error) -> String {
    let said = err.to_string();
    if said.starts_with("unexpected end of hex escape")
        || said.starts_with("lone leading surrogate in hex escape")
    {
        return format!(
            "a lone surrogate escape (\\uD800 to \\uDFFF without its pair), which is not a \
             character, at line {} column {}",
            err.line(),
            err.column()
        );
    }
    said
}

/// The site details the widget shows.
#[derive(Debug, Serialize)]
#[allow(clippy::struct_excessive_bools)] // the wire's yes/no fields, each named by the protocol
pub struct SiteInfo<'a> {
    pub name: &'a str,
    pub greeting: &'a str,
    /// Greetings in other languages by code; the panel shows the one in its language instead.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub greetings: &'a BTreeMap<String, String>,
    pub color: &'a str,
    pub position: &'a str,
    /// Whether an agent has the inbox open right now; the widget offers email capture when not.
    pub agents_online: bool,
    /// Whether an address the visitor leaves gets replies by email: SMTP is configured and an
    /// email integration of the site is on. When false the widget never asks for one, nor
    /// promises a reply by email.
    pub mails_replies: bool,
    /// False when the site takes no attachments: the panel offers none.
    pub files: bool,
    /// False while the site is out of its business hours; always true for a site without hours.
    pub open: bool,
    /// When a closed site opens next, in Unix milliseconds; left out while open (or if it never
    /// opens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<i64>,
    /// The admin's away message; only while closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub away_message: Option<&'a str>,
    /// The away message in other languages by code (the panel shows the one in its language
    /// instead); only while closed, and only when the site wrote some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub away_messages: Option<&'a BTreeMap<String, String>>,
    /// `email` (ask for the address) or `accept` (take chats, replies by email); only while
    /// closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_hours: Option<&'static str>,
    /// The pre-chat form to show before the first message; left out when the site has none or
    /// this visitor answered it already.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prechat: Option<PrechatInfo<'a>>,
}

/// The pre-chat form as `welcome.site.prechat` describes it: each field's mode.
#[derive(Debug, Serialize)]
pub struct PrechatInfo<'a> {
    pub name: &'static str,
    pub email: &'static str,
    /// Left out when the site asks no question of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<PrechatQuestion<'a>>,
}

/// The site's own question: its label and mode (`optional` or `required`).
#[derive(Debug, Serialize)]
pub struct PrechatQuestion<'a> {
    pub label: &'a str,
    pub mode: &'static str,
}

/// A message as the widget shows it.
#[derive(Debug, Serialize)]
pub struct MessageFrame<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub author: &'a str,
    pub agent_name: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub body: &'a str,
    pub at: i64,
    /// Left out when empty, so a plain message's frame is what it always was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentFrame<'a>>,
}

/// An attachment as a `message` frame carries it; the bytes are at `url` (behind the token).
#[derive(Debug, Serialize)]
pub struct AttachmentFrame<'a> {
    pub id: &'a str,
    pub name: &'a str,
    #[serde(rename = "type")]
    pub content_type: &'a str,
    pub size: i64,
    /// Relative to the server: `/widget/attachments/{id}`.
    pub url: String,
}

impl<'a> From<&'a AttachmentMeta> for AttachmentFrame<'a> {
    fn from(meta: &'a AttachmentMeta) -> Self {
        Self {
            id: &meta.id,
            name: &meta.name,
            content_type: &meta.content_type,
            size: meta.size,
            url: format!("/widget/attachments/{}", meta.id),
        }
    }
}

impl<'a> From<&'a MessageRow> for MessageFrame<'a> {
    fn from(row: &'a MessageRow) -> Self {
        let is_agent = row.author == Author::Agent;
        Self {
            kind: "message",
            id: row.id,
            conversation_id: row.conversation_id,
            author: row.author.as_str(),
            agent_name: if is_agent {
                row.author_name.as_deref()
            } else {
                None
            },
            client_id: if is_agent {
                None
            } else {
                row.client_id.as_deref()
            },
            body: &row.body,
            at: row.created_at,
            attachments: row.attachments.iter().map(AttachmentFrame::from).collect(),
        }
    }
}

/// Stable error codes; see the table in docs/widget-protocol.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadFrame,
    HelloRequired,
    HelloTimeout,
    UnsupportedVersion,
    SiteNotFound,
    OriginNotAllowed,
    InvalidMessage,
    RateLimited,
    TooManyConversations,
    SiteBusy,
    Busy,
    Unavailable,
    UnknownAttachment,
    InvalidPrechat,
}

impl ErrorCode {
    /// Every code, in declaration order (so `code as usize` is its place here).
    pub const ALL: [Self; 14] = [
        Self::BadFrame,
        Self::HelloRequired,
        Self::HelloTimeout,
        Self::UnsupportedVersion,
        Self::SiteNotFound,
        Self::OriginNotAllowed,
        Self::InvalidMessage,
        Self::RateLimited,
        Self::TooManyConversations,
        Self::SiteBusy,
        Self::Busy,
        Self::Unavailable,
        Self::UnknownAttachment,
        Self::InvalidPrechat,
    ];

    /// The code as the wire spells it (a metric's label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadFrame => "bad_frame",
            Self::HelloRequired => "hello_required",
            Self::HelloTimeout => "hello_timeout",
            Self::UnsupportedVersion => "unsupported_version",
            Self::SiteNotFound => "site_not_found",
            Self::OriginNotAllowed => "origin_not_allowed",
            Self::InvalidMessage => "invalid_message",
            Self::RateLimited => "rate_limited",
            Self::TooManyConversations => "too_many_conversations",
            Self::SiteBusy => "site_busy",
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
            Self::UnknownAttachment => "unknown_attachment",
            Self::InvalidPrechat => "invalid_prechat",
        }
    }

    /// The default English text for people.
    pub fn message(self) -> &'static str {
        match self {
            Self::BadFrame => {
                "That frame does not fit the protocol: not a JSON object, an unknown type, a \
                 field of the wrong type, or a second hello."
            }
            Self::HelloRequired => "Send hello first.",
            Self::HelloTimeout => "No hello arrived in time.",
            Self::UnsupportedVersion => "This server speaks widget protocol version 1.",
            Self::SiteNotFound => "This chat is not set up on the server.",
            Self::OriginNotAllowed => "This chat is not enabled for this website.",
            Self::InvalidMessage => "That message cannot be sent.",
            Self::RateLimited => "You are sending messages too fast.",
            Self::TooManyConversations => "Too many conversations were started from your network.",
            Self::SiteBusy => "This chat is very busy right now.",
            Self::Busy => "The server is busy.",
            Self::Unavailable => "The message could not be stored right now.",
            Self::UnknownAttachment => {
                "An attachment of this message is unknown, not yours, or already sent."
            }
            Self::InvalidPrechat => "Please check the form.",
        }
    }
}

/// A frame to the client.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame<'a> {
    Welcome {
        v: u32,
        token: &'a str,
        site: SiteInfo<'a>,
        messages: Vec<MessageFrame<'a>>,
        /// More of the history follows as `message` frames, oldest first, before any live frame.
        more: bool,
    },
    Ack {
        client_id: &'a str,
        id: MessageId,
        at: i64,
    },
    Typing {
        agent_name: &'a str,
        active: bool,
    },
    /// The address from an `email` frame is stored.
    EmailSaved {
        email: &'a str,
    },
    /// The visitor's data was erased (by them or an admin); the connection closes next.
    Erased,
    /// The answer to a `ping`.
    Pong,
    /// An agent has seen the visitor's messages up to `up_to` (a read receipt: "Seen").
    Read {
        up_to: MessageId,
    },
    /// An agent closed conversation `conversation_id`; `id` is its last message (the status
    /// line), where the widget places the notice.
    Closed {
        conversation_id: ConversationId,
        id: MessageId,
    },
    /// An agent reopened conversation `conversation_id`; `id` is the status line saying so,
    /// where the widget places the notice. The visitor's next message joins it again.
    Reopened {
        conversation_id: ConversationId,
        id: MessageId,
    },
    Error {
        code: ErrorCode,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        client_id: Option<&'a str>,
    },
}

impl ServerFrame<'_> {
    /// The frame as JSON text.
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail (no maps with non-string keys).
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl MessageFrame<'_> {
    /// The pushed `message` frame as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` holds each code at its own place, and `as_str` spells it as the frames do. The
    /// match has no catch-all: a new code does not compile here until it is given its place,
    /// and `ALL` must then hold it there (the metrics count by that place).
    #[test]
    fn every_code_is_listed_in_order_and_named_as_on_the_wire() {
        let place = |code: ErrorCode| match code {
            ErrorCode::BadFrame => 0,
            ErrorCode::HelloRequired => 1,
            ErrorCode::HelloTimeout => 2,
            ErrorCode::UnsupportedVersion => 3,
            ErrorCode::SiteNotFound => 4,
            ErrorCode::OriginNotAllowed => 5,
            ErrorCode::InvalidMessage => 6,
            ErrorCode::RateLimited => 7,
            ErrorCode::TooManyConversations => 8,
            ErrorCode::SiteBusy => 9,
            ErrorCode::Busy => 10,
            ErrorCode::Unavailable => 11,
            ErrorCode::UnknownAttachment => 12,
            ErrorCode::InvalidPrechat => 13,
        };
        for (at, code) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!((code as usize, place(code)), (at, at), "{code:?}");
            assert_eq!(serde_json::to_value(code).ok(), Some(code.as_str().into()));
        }
    }

    #[test]
    fn the_version_is_any_number_equal_to_one() {
        for (v, speaks) in [
            ("1", true),
            ("1.0", true),
            ("1.5", false),
            ("2", false),
            ("-1", false),
        ] {
            let n: serde_json::Number = serde_json::from_str(v).expect("a number");
            assert_eq!(speaks_version(&n), speaks, "{v}");
        }
    }

    #[test]
    fn hello_parses_with_optional_fields_missing() {
        let frame = ClientFrame::parse(r#"{"type":"hello","v":1}"#);
        assert!(matches!(
            frame,
            Ok(ClientFrame::Hello {
                ref v,
                token: None,
                last_id: None,
                ..
            }) if speaks_version(v)
        ));
    }

    #[test]
    fn last_id_is_any_whole_number_clamped_to_what_an_id_can_be() {
        let last_id = |raw: &str| match ClientFrame::parse(&format!(
            r#"{{"type":"hello","v":1,"last_id":{raw}}}"#
        )) {
            Ok(ClientFrame::Hello { last_id, .. }) => Some(last_id),
            _ => None,
        };
        assert_eq!(last_id("1042"), Some(Some(1042)));
        assert_eq!(last_id("null"), Some(None));
        assert_eq!(last_id("-5"), Some(Some(-5)), "made 0 by the connection");
        for huge in ["9223372036854775808", "1180591620717411303424", "1e30"] {
            assert_eq!(last_id(huge), Some(Some(i64::MAX)), "{huge}");
        }
        assert_eq!(last_id("-1180591620717411303424"), Some(Some(i64::MIN)));
        for bad in ["1.5", r#""12""#, "true"] {
            assert_eq!(last_id(bad), None, "{bad}: bad_frame");
        }
    }

    #[test]
    fn an_identity_of_the_wrong_shape_is_ignored_not_refused() {
        for identity in [r#"{"name":"no id"}"#, r#"{"id":[1]}"#, r#""text""#, "null"] {
            let text = format!(r#"{{"type":"hello","v":1,"identity":{identity}}}"#);
            assert!(
                matches!(
                    ClientFrame::parse(&text),
                    Ok(ClientFrame::Hello { identity: None, .. })
                ),
                "{text}"
            );
        }
        let text = r#"{"type":"hello","v":1,"identity":{"id":42,"user_hash":"ab"}}"#;
        assert!(matches!(
            ClientFrame::parse(text),
            Ok(ClientFrame::Hello {
                identity: Some(_),
                ..
            })
        ));
    }

    /// `attachments: null` is none, as `null` is for every other optional field; a list of
    /// something else than ids is still a bad frame.
    #[test]
    fn null_attachments_are_none() {
        let text = r#"{"type":"message","client_id":"a","body":"x","attachments":null}"#;
        assert!(
            matches!(
                ClientFrame::parse(text),
                Ok(ClientFrame::Message { ref attachments, .. }) if attachments.is_empty()
            ),
            "{text}"
        );
        let text = r#"{"type":"message","client_id":"a","body":"x","attachments":[1]}"#;
        assert!(ClientFrame::parse(text).is_err(), "{text}");
    }

    #[test]
    fn typing_parses_and_needs_a_boolean() {
        assert!(matches!(
            ClientFrame::parse(r#"{"type":"typing","active":true}"#),
            Ok(ClientFrame::Typing { active: true })
        ));
        assert!(ClientFrame::parse(r#"{"type":"typing","active":"yes"}"#).is_err());
        assert!(matches!(
            ClientFrame::parse(r#"{"type":"ping"}"#),
            Ok(ClientFrame::Ping {})
        ));
        assert_eq!(ServerFrame::Pong.to_json(), r#"{"type":"pong"}"#);
        assert!(ClientFrame::parse(r#"{"type":"typing"}"#).is_err());
    }

    #[test]
    fn wrong_shapes_are_refused() {
        for text in [
            "",
            "[]",
            "{}",
            r#"{"type":"nope"}"#,
            r#"{"type":"message","client_id":1,"body":"x"}"#,
        ] {
            assert!(ClientFrame::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn errors_serialise_with_stable_codes() {
        let frame = ServerFrame::Error {
            code: ErrorCode::RateLimited,
            message: "slow down",
            retry_after_ms: Some(1500),
            client_id: Some("c1"),
        };
        assert_eq!(
            frame.to_json(),
            r#"{"type":"error","code":"rate_limited","message":"slow down","retry_after_ms":1500,"client_id":"c1"}"#
        );
    }
}
