//! The pre-chat form (docs/widget.md#pre-chat-form): the admin's settings parsed into a
//! [`PrechatForm`], saved or removed (audited as `site.updated`, dropping the widget's cached copy
//! of the site) and read back for the widget.

use std::sync::Arc;

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, Readers, SiteId, SitePrechatRow, Writer, field_mode};
use crate::values::{FieldMode, Invalid, PrechatForm};

use super::Error;
use super::site::SiteDirectory;

/// The pre-chat form as submitted (every field a string, as in a form).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct SitePrechatInput {
    /// `off`, `optional` or `required`, as each of the three modes.
    #[serde(default)]
    pub name_field: String,
    #[serde(default)]
    pub email_field: String,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub question_field: String,
}

impl SitePrechatInput {
    /// What the page offers before a site has a form: a required name and email, no question
    /// (nothing is asked until it is saved).
    pub fn suggested() -> Self {
        Self {
            name_field: "required".to_owned(),
            email_field: "required".to_owned(),
            question: String::new(),
            question_field: "off".to_owned(),
        }
    }

    /// Parses the form: three known modes, and a label for a question that is asked.
    pub fn parse(&self) -> Result<PrechatForm, Invalid> {
        PrechatForm::new(
            FieldMode::parse(&self.name_field)?,
            FieldMode::parse(&self.email_field)?,
            &self.question,
            FieldMode::parse(&self.question_field)?,
        )
    }
}

impl From<&PrechatForm> for SitePrechatInput {
    /// The input that would submit this form unchanged.
    fn from(form: &PrechatForm) -> Self {
        Self {
            name_field: form.name.as_str().to_owned(),
            email_field: form.email.as_str().to_owned(),
            question: form.question.clone(),
            question_field: form.question_mode.as_str().to_owned(),
        }
    }
}

/// Parses a stored row; a form with every field off is no form.
pub fn parse_stored_prechat(row: &SitePrechatRow) -> Option<PrechatForm> {
    PrechatForm::new(
        field_mode(&row.name_field),
        field_mode(&row.email_field),
        &row.question,
        field_mode(&row.question_field),
    )
    .ok()
    .filter(PrechatForm::is_on)
}

/// The site's pre-chat form, if it has one (for its page).
pub async fn find_site_prechat(
    readers: &Arc<Readers>,
    site: SiteId,
) -> Result<Option<PrechatForm>, Error> {
    let row = readers
        .read(move |c| store::find_site_prechat(c, site))
        .await?;
    Ok(row.as_ref().and_then(parse_stored_prechat))
}

/// Saves the site's pre-chat form (a form with every field off removes it), records
/// `site.updated` (detail `{"prechat": "saved"}` or `"removed"`) and drops the cached site.
pub async fn save_site_prechat(
    (writer, directory): (&Arc<Writer>, &SiteDirectory),
    actor: &Actor,
    site: (SiteId, &str, &str),
    form: PrechatForm,
) -> Result<(), Error> {
    let (id, site_key, name) = site;
    let target = Target::site(site_key, name);
    let actor = actor.clone();
    writer
        .write(move |c| {
            let detail = if form.is_on() {
                store::upsert_site_prechat(c, id, &form, now_ms())?;
                json!({ "prechat": "saved", "name": form.name.as_str(),
                        "email": form.email.as_str(), "question": form.question_mode.as_str() })
            } else if store::delete_site_prechat(c, id)? {
                json!({ "prechat": "removed" })
            } else {
                return Ok(());
            };
            audit::record(c, &actor, AuditAction::SiteUpdated, &target, &detail)
        })
        .await?;
    directory.reload(site_key).await;
    Ok(())
}
