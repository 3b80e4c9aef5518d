//! A checkbox of an admin form, read strictly. A browser sends `name=on` for a ticked box and
//! nothing for an unticked one; a script that posts `required=false` means "off", and reading any
//! value as "ticked" would do the opposite (for the team's two-factor requirement: sign everyone
//! out). So `on` is ticked, an absent field is not, and anything else refuses the form.

use serde::{Deserialize, Deserializer, de};

/// Whether the box was ticked; `#[serde(default)]` on the field makes an absent one unticked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Checkbox(pub bool);

impl Checkbox {
    /// A ticked box from the value of its field; the caller treats an absent field as unticked.
    pub fn ticked(value: &str) -> Result<Self, String> {
        if value == "on" {
            Ok(Self(true))
        } else {
            Err(format!(
                "`{value}` is not a checkbox value: send `on`, or leave the field out for an \
                 unticked box"
            ))
        }
    }
}

impl<'de> Deserialize<'de> for Checkbox {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::ticked(&String::deserialize(deserializer)?).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Form {
        #[serde(default)]
        required: Checkbox,
    }

    fn parse(body: &str) -> Option<bool> {
        serde_urlencoded::from_str::<Form>(body)
            .ok()
            .map(|f| f.required.0)
    }

    #[test]
    fn only_on_ticks_the_box_and_other_values_are_refused() {
        assert_eq!(parse("required=on"), Some(true));
        assert_eq!(parse(""), Some(false));
        for refused in [
            "required=false",
            "required=off",
            "required=0",
            "required=",
            "required=ON",
        ] {
            assert_eq!(parse(refused), None, "{refused}");
        }
    }
}
