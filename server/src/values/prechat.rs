//! The pre-chat form (docs/widget.md#pre-chat-form): which fields a site asks before the first
//! message (name, email, one question of its own; each off, optional or required) and the
//! visitor's answers, parsed against it: required fields present, the email's syntax, lengths.

use super::Invalid;

/// Longest name kept, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest answer to the site's question, and longest question, in characters.
pub const MAX_ANSWER_CHARS: usize = 1000;
/// Longest email address (RFC 5321's path limit, as the offline email form takes).
const MAX_EMAIL_CHARS: usize = 254;

/// Whether the form asks for a field, and whether the visitor must answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldMode {
    Off,
    Optional,
    Required,
}

impl FieldMode {
    /// The code stored and sent in `welcome.site.prechat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }

    /// The mode from its code.
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        match raw.trim() {
            "off" => Ok(Self::Off),
            "optional" => Ok(Self::Optional),
            "required" => Ok(Self::Required),
            _ => Err(Invalid::from(
                "Choose off, optional or required for each field.",
            )),
        }
    }
}

/// A site's pre-chat form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrechatForm {
    pub name: FieldMode,
    pub email: FieldMode,
    /// The site's own question (its label); asked unless `question_mode` is off.
    pub question: String,
    pub question_mode: FieldMode,
}

impl PrechatForm {
    /// Builds a form; a question asked must have a label of at most 1,000 characters.
    pub fn new(
        name: FieldMode,
        email: FieldMode,
        question: &str,
        question_mode: FieldMode,
    ) -> Result<Self, Invalid> {
        let question = question.trim();
        if question_mode != FieldMode::Off && question.is_empty() {
            return Err(Invalid::from("Write the question, or turn it off."));
        }
        if question.chars().count() > MAX_ANSWER_CHARS {
            return Err(Invalid::from(
                "The question can have at most 1,000 characters.",
            ));
        }
        Ok(Self {
            name,
            email,
            question: question.to_owned(),
            question_mode,
        })
    }

    /// True if the form asks anything at all (a form with every field off is no form).
    pub fn is_on(&self) -> bool {
        [self.name, self.email, self.question_mode]
            .iter()
            .any(|m| *m != FieldMode::Off)
    }
}

/// The visitor's answers, as the form took them (fields the form does not ask are `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrechatAnswers {
    pub name: Option<String>,
    pub email: Option<String>,
    /// The question as it was asked, kept beside the answer (a later edit of the form does not
    /// change what this visitor was asked).
    pub question: Option<String>,
    pub answer: Option<String>,
}

/// A field's answer: trimmed, empty as none, refused when required and missing or too long.
fn field(
    mode: FieldMode,
    raw: Option<&str>,
    max: usize,
    missing: &'static str,
    too_long: &'static str,
) -> Result<Option<String>, Invalid> {
    let value = raw.map(str::trim).filter(|v| !v.is_empty());
    match (mode, value) {
        (FieldMode::Off, _) | (FieldMode::Optional, None) => Ok(None),
        (FieldMode::Required, None) => Err(Invalid::from(missing)),
        (_, Some(v)) if v.chars().count() > max => Err(Invalid::from(too_long)),
        (_, Some(v)) => Ok(Some(v.to_owned())),
    }
}

impl PrechatAnswers {
    /// Parses the answers to `form`: required fields present, an email address of valid syntax,
    /// a name of at most 100 and an answer of at most 1,000 characters. Answers to fields the
    /// form does not ask are dropped.
    pub fn parse(
        form: &PrechatForm,
        name: Option<&str>,
        email: Option<&str>,
        answer: Option<&str>,
    ) -> Result<Self, Invalid> {
        // A name shows on one line (the inbox, mail headers' neighbours, digests).
        let name = name.map(super::one_line);
        let name = field(
            form.name,
            name.as_deref(),
            MAX_NAME_CHARS,
            "Please enter your name.",
            "Your name can have at most 100 characters.",
        )?;
        let email = field(
            form.email,
            email,
            MAX_EMAIL_CHARS,
            "Please enter your email address.",
            "Please check the email address.",
        )?;
        if email
            .as_deref()
            .is_some_and(|e| !super::is_visitor_email(e))
        {
            return Err(Invalid::from("Please check the email address."));
        }
        let answer = field(
            form.question_mode,
            answer,
            MAX_ANSWER_CHARS,
            "Please answer the question.",
            "Your answer can have at most 1,000 characters.",
        )?;
        Ok(Self {
            name,
            email,
            question: answer.as_ref().map(|_| form.question.clone()),
            answer,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(name: FieldMode, email: FieldMode, question: FieldMode) -> PrechatForm {
        PrechatForm::new(name, email, "Order number?", question).expect("valid")
    }

    #[test]
    fn required_fields_must_be_answered() {
        use FieldMode::{Off, Optional, Required};
        let f = form(Required, Optional, Required);
        let err = PrechatAnswers::parse(&f, Some("  "), None, Some("42")).unwrap_err();
        assert_eq!(err.0, "Please enter your name.");
        let err = PrechatAnswers::parse(&f, Some("Ada"), None, None).unwrap_err();
        assert_eq!(err.0, "Please answer the question.");
        let ok = PrechatAnswers::parse(&f, Some(" Ada "), Some(""), Some("42")).expect("valid");
        assert_eq!(ok.name.as_deref(), Some("Ada"));
        let folded =
            PrechatAnswers::parse(&f, Some("Mal\r\nBcc: x"), None, Some("a\nb")).expect("valid");
        assert_eq!(
            folded.name.as_deref(),
            Some("Mal Bcc: x"),
            "a name is one line"
        );
        assert_eq!(
            folded.answer.as_deref(),
            Some("a\nb"),
            "an answer keeps its lines"
        );
        assert_eq!(ok.email, None);
        assert_eq!(ok.question.as_deref(), Some("Order number?"));
        assert_eq!(ok.answer.as_deref(), Some("42"));
        let off = form(Off, Off, Off);
        assert!(!off.is_on());
        let dropped = PrechatAnswers::parse(&off, Some("Ada"), None, Some("x")).expect("valid");
        assert_eq!(dropped, PrechatAnswers::default());
    }

    #[test]
    fn email_syntax_and_lengths_are_checked() {
        use FieldMode::{Off, Optional};
        let f = form(Optional, Optional, Optional);
        assert!(PrechatAnswers::parse(&f, None, Some("not-an-address"), None).is_err());
        assert!(PrechatAnswers::parse(&f, None, Some("ada@example.org"), None).is_ok());
        let spoofed = Some("ceo\u{202E}moc.knab@x.test");
        assert!(PrechatAnswers::parse(&f, None, spoofed, None).is_err());
        let long = "a".repeat(101);
        assert!(PrechatAnswers::parse(&f, Some(&long), None, None).is_err());
        let long = "a".repeat(1001);
        assert!(PrechatAnswers::parse(&f, None, None, Some(&long)).is_err());
        assert!(PrechatForm::new(Off, Off, " ", Optional).is_err());
    }
}
