//! The pre-chat form's answers on a `message` frame (docs/widget.md#pre-chat-form): checked
//! against the site's form while this visitor has not answered it, then carried with the
//! visitor's context into the message's write, which stores them once. A child of `connection`,
//! so it works on the connection's own state.

use crate::store::VisitorRow;
use crate::values::{FieldMode, PrechatAnswers};

use super::super::protocol::PrechatFrame;
use super::{Closed, Connection, ErrorCode, ServerFrame, send_text};

impl Connection {
    /// Whether `welcome` should show this visitor the site's form: the site has one and the
    /// visitor (if they wrote before) has not answered it.
    pub(super) fn prechat_pending_for(&self, visitor: Option<&VisitorRow>) -> bool {
        self.site.prechat.is_some() && !visitor.is_some_and(|v| v.has_prechat)
    }

    /// Checks a message's answers; `Ok(false)` when the message is refused (an `invalid_prechat`
    /// error with its `client_id` was sent: a required field missing or an answer not valid).
    /// Answers are ignored once the visitor has answered, so a resend cannot change them.
    pub(super) async fn take_prechat(
        &mut self,
        client_id: &str,
        frame: Option<PrechatFrame>,
    ) -> Result<bool, Closed> {
        let Some(form) = self.site.prechat.as_ref().filter(|_| self.asks_prechat) else {
            return Ok(true);
        };
        let required = [form.name, form.email, form.question_mode].contains(&FieldMode::Required);
        let parsed = match frame {
            // Without answers, a form of optional fields only may be skipped.
            None if !required => Ok(None),
            // Else no answers are checked as empty ones, so the refusal names the first
            // required field.
            frame => {
                let f = frame.unwrap_or_default();
                let (name, email, answer) = (f.name, f.email, f.answer);
                PrechatAnswers::parse(form, name.as_deref(), email.as_deref(), answer.as_deref())
                    .map(Some)
            }
        };
        match parsed {
            Ok(answers) => {
                if answers.is_some() {
                    self.context.prechat = answers;
                    // The answers travel as part of the context, with this message's write.
                    self.context_stored = false;
                    self.asks_prechat = false;
                }
                Ok(true)
            }
            Err(invalid) => {
                let frame = ServerFrame::Error {
                    code: ErrorCode::InvalidPrechat,
                    message: &invalid.0,
                    retry_after_ms: None,
                    client_id: Some(client_id),
                };
                send_text(&mut self.sink, frame.to_json()).await?;
                Ok(false)
            }
        }
    }
}
