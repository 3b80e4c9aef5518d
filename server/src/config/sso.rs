//! The single sign-on settings (`PORCH_OIDC_*`): the domain list's parser and the rules the
//! issuer, client and provisioning settings must meet together.

use super::url_rules::{http_url, is_loopback_host};
use super::{Config, ConfigError, Warning};

/// A comma-separated list of email domains, lower-cased; empty means none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainList(pub Vec<String>);

impl std::ops::Deref for DomainList {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

pub(super) fn parse_domain_list(raw: &str) -> Result<DomainList, String> {
    raw.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let domain = part.trim_start_matches('@').to_ascii_lowercase();
            // The part after `@` of an address: labels of letters, digits and hyphens.
            let is_domain = domain.contains('.')
                && domain.split('.').all(|label| {
                    !label.is_empty()
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                });
            if is_domain {
                Ok(domain)
            } else {
                Err(format!("{part} is not an email domain such as example.com"))
            }
        })
        .collect::<Result<_, _>>()
        .map(DomainList)
}

impl Config {
    /// Single sign-on: the issuer, client id and secret come together or not at all. The issuer
    /// is the operator's own choice, so it gets no SSRF guard (unlike webhook URLs), but it must
    /// use https unless it is on this host, because the ID token's keys come from it.
    pub(super) fn validate_oidc(&self, warnings: &mut Vec<Warning>) -> Result<(), ConfigError> {
        let secret_variable = if self.oidc_client_secret_file.is_some() {
            "PORCH_OIDC_CLIENT_SECRET_FILE"
        } else {
            "PORCH_OIDC_CLIENT_SECRET"
        };
        let set = [
            ("PORCH_OIDC_ISSUER", self.oidc_issuer.is_some()),
            ("PORCH_OIDC_CLIENT_ID", self.oidc_client_id.is_some()),
            (secret_variable, self.oidc_client_secret.is_some()),
        ];
        if let Some((missing, _)) = set.iter().find(|(_, is_set)| !is_set)
            && set.iter().any(|(_, is_set)| *is_set)
        {
            return Err(ConfigError::new(
                missing,
                "must be set when any of PORCH_OIDC_ISSUER, PORCH_OIDC_CLIENT_ID and \
                 PORCH_OIDC_CLIENT_SECRET is (single sign-on needs all three)",
            ));
        }
        let label = self.oidc_label.trim();
        if label.is_empty() || label.chars().count() > 60 {
            return Err(ConfigError::new(
                "PORCH_OIDC_LABEL",
                "must have 1 to 60 characters",
            ));
        }
        let Some(issuer) = &self.oidc_issuer else {
            if !self.oidc_auto_provision_domains.is_empty() {
                return Err(ConfigError::new(
                    "PORCH_OIDC_AUTO_PROVISION_DOMAINS",
                    "needs single sign-on (PORCH_OIDC_ISSUER and the client settings)",
                ));
            }
            return Ok(());
        };
        let url = http_url("PORCH_OIDC_ISSUER", issuer)?;
        if url.scheme() != "https" && !is_loopback_host(&url) {
            return Err(ConfigError::new(
                "PORCH_OIDC_ISSUER",
                format!(
                    "must be an https:// URL unless the provider runs on this host (got `{issuer}`)"
                ),
            ));
        }
        if self
            .oidc_client_id
            .as_deref()
            .is_some_and(|id| id.trim().is_empty())
        {
            return Err(ConfigError::new(
                "PORCH_OIDC_CLIENT_ID",
                "must not be empty",
            ));
        }
        if self
            .oidc_client_secret
            .as_ref()
            .is_some_and(|s| s.expose().is_empty())
        {
            return Err(ConfigError::new(secret_variable, "must not be empty"));
        }
        if self.public_url.is_none() {
            warnings.push(Warning(
                "PORCH_OIDC_ISSUER without PORCH_PUBLIC_URL: the redirect URI registered at the \
                 provider must be http://<listen address>/login/sso/callback; set \
                 PORCH_PUBLIC_URL to the URL browsers use"
                    .to_owned(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provisioning_domains_are_lower_case_domains() {
        assert_eq!(parse_domain_list(""), Ok(DomainList::default()));
        assert_eq!(
            parse_domain_list(" Example.COM, @staff.example.org "),
            Ok(DomainList(vec![
                "example.com".to_owned(),
                "staff.example.org".to_owned()
            ]))
        );
        for bad in [
            "localhost",
            "ana@example.com",
            "exa mple.com",
            "example..com",
            "*.example.com",
        ] {
            assert!(parse_domain_list(bad).is_err(), "{bad} accepted");
        }
    }

    fn oidc_config(issuer: Option<&str>, id: Option<&str>, secret: Option<&str>) -> Config {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            config: Config,
        }
        let mut config = Cli::parse_from(["porch"]).config;
        config.public_url = Some("https://chat.example.com".to_owned());
        config.oidc_issuer = issuer.map(str::to_owned);
        config.oidc_client_id = id.map(str::to_owned);
        config.oidc_client_secret = secret.map(|s| s.parse().unwrap_or_else(|e| match e {}));
        config
    }

    #[test]
    fn single_sign_on_takes_issuer_id_and_secret_together() {
        let none = oidc_config(None, None, None);
        assert!(none.validate().is_ok());
        let all = oidc_config(
            Some("https://id.example.com/realms/staff"),
            Some("porch"),
            Some("s3cret"),
        );
        assert!(all.validate().is_ok());
        let err = oidc_config(Some("https://id.example.com"), Some("porch"), None)
            .validate()
            .unwrap_err();
        assert_eq!(err.variable, "PORCH_OIDC_CLIENT_SECRET");
        let err = oidc_config(None, Some("porch"), Some("s3cret"))
            .validate()
            .unwrap_err();
        assert_eq!(err.variable, "PORCH_OIDC_ISSUER");
    }

    #[test]
    fn an_issuer_uses_https_unless_it_is_on_this_host() {
        for good in [
            "http://127.0.0.1:9000",
            "http://localhost:9000/oidc",
            "http://[::1]:9000",
        ] {
            let config = oidc_config(Some(good), Some("porch"), Some("s3cret"));
            assert!(config.validate().is_ok(), "{good} refused");
        }
        for bad in [
            "http://id.example.com",
            "id.example.com",
            "https://id.example.com/?x=1",
        ] {
            let err = oidc_config(Some(bad), Some("porch"), Some("s3cret"))
                .validate()
                .unwrap_err();
            assert_eq!(err.variable, "PORCH_OIDC_ISSUER", "{bad}");
        }
    }

    #[test]
    fn provisioning_domains_need_single_sign_on() {
        let mut config = oidc_config(None, None, None);
        config.oidc_auto_provision_domains = crate::config::DomainList(vec!["example.com".into()]);
        let err = config.validate().unwrap_err();
        assert_eq!(err.variable, "PORCH_OIDC_AUTO_PROVISION_DOMAINS");
    }
}
