//! Where the key that seals integration secrets comes from: `PORCH_SECRET_KEY`,
//! `PORCH_SECRET_KEY_FILE`, or else `secret.key` in the data directory, generated at the first
//! start. Loading names its source, so a key that does not fit the database is reported with the
//! variable (or file) to fix.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{ConfigError, Secret};
use crate::secrets::{KEY_FILE, SecretKey};

/// The sealing key's settings; shared by `porch serve` and `porch secrets rotate`.
#[derive(Debug, Clone, Default, Args)]
pub struct SecretKeyConfig {
    /// The key that seals integration secrets (Slack, Discord and webhook credentials) in the
    /// database: 32 bytes as base64 or 64 hex digits (`openssl rand -base64 32`). Unset (and no
    /// file), Porch uses `secret.key` in the data directory (`serve` generates it at the first
    /// start; `secrets rotate` never does).
    #[arg(long, env = "PORCH_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<Secret>,

    /// A file holding the sealing key (for Docker secrets); read at start-up.
    #[arg(long, env = "PORCH_SECRET_KEY_FILE", conflicts_with = "secret_key")]
    pub secret_key_file: Option<PathBuf>,
}

/// Where the key in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `PORCH_SECRET_KEY`.
    Variable,
    /// `PORCH_SECRET_KEY_FILE`, with its path.
    File(PathBuf),
    /// `secret.key` in the data directory; `created` when this start generated it.
    DataDir { path: PathBuf, created: bool },
}

impl KeySource {
    /// What an operator changes to give Porch another key: the variable, or the file.
    pub fn describe(&self) -> String {
        match self {
            Self::Variable => "PORCH_SECRET_KEY".to_owned(),
            Self::File(path) => format!("PORCH_SECRET_KEY_FILE ({})", path.display()),
            Self::DataDir { path, .. } => format!(
                "the key file {} (PORCH_SECRET_KEY and PORCH_SECRET_KEY_FILE are unset)",
                path.display()
            ),
        }
    }
}

/// The key with its source.
#[derive(Debug, Clone)]
pub struct LoadedKey {
    pub key: SecretKey,
    pub source: KeySource,
}

impl SecretKeyConfig {
    /// Checks a configured key's form without touching the data directory (so a malformed key
    /// stops `porch serve` before anything is opened).
    ///
    /// # Errors
    /// Names `PORCH_SECRET_KEY` or `PORCH_SECRET_KEY_FILE` if it holds no valid key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.configured().map(|_| ())
    }

    fn configured(&self) -> Result<Option<LoadedKey>, ConfigError> {
        if let Some(path) = &self.secret_key_file {
            let key = SecretKey::read_file(path)
                .map_err(|err| ConfigError::new("PORCH_SECRET_KEY_FILE", err.to_string()))?;
            return Ok(Some(LoadedKey {
                key,
                source: KeySource::File(path.clone()),
            }));
        }
        match &self.secret_key {
            Some(text) => SecretKey::parse(text.expose())
                .map(|key| {
                    Some(LoadedKey {
                        key,
                        source: KeySource::Variable,
                    })
                })
                .map_err(|err| ConfigError::new("PORCH_SECRET_KEY", err.to_string())),
            None => Ok(None),
        }
    }

    /// The configured key, or else the data directory's `secret.key`, generated (mode 0600) if
    /// there is none yet.
    ///
    /// # Errors
    /// Names the variable whose key is malformed, or the key file that cannot be read or made.
    pub fn load(&self, data_dir: &Path) -> Result<LoadedKey, ConfigError> {
        if let Some(loaded) = self.find(data_dir)? {
            return Ok(loaded);
        }
        let path = data_dir.join(KEY_FILE);
        let key = SecretKey::generate();
        key.write_new_file(&path)
            .map_err(|err| unusable_key_file(&path, &err))?;
        Ok(LoadedKey {
            key,
            source: KeySource::DataDir {
                path,
                created: true,
            },
        })
    }

    /// The configured key, or else the data directory's `secret.key` if there is one: for
    /// commands that need the key a database is sealed with, where a new one would not do.
    ///
    /// # Errors
    /// Names the variable whose key is malformed, or the key file that cannot be read.
    pub fn find(&self, data_dir: &Path) -> Result<Option<LoadedKey>, ConfigError> {
        if let Some(loaded) = self.configured()? {
            return Ok(Some(loaded));
        }
        let path = data_dir.join(KEY_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let key = SecretKey::read_file(&path).map_err(|err| unusable_key_file(&path, &err))?;
        Ok(Some(LoadedKey {
            key,
            source: KeySource::DataDir {
                path,
                created: false,
            },
        }))
    }
}

fn unusable_key_file(path: &Path, err: &crate::secrets::KeyError) -> ConfigError {
    ConfigError::new(
        "PORCH_SECRET_KEY",
        format!(
            "is unset and the key file {} is unusable: {err}",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_configured_key_one_is_generated_once_into_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let config = SecretKeyConfig::default();
        let first = config.load(dir.path()).unwrap();
        assert!(matches!(
            first.source,
            KeySource::DataDir { created: true, .. }
        ));
        let second = config.load(dir.path()).unwrap();
        assert!(matches!(
            second.source,
            KeySource::DataDir { created: false, .. }
        ));
        assert_eq!(first.key.id(), second.key.id());
    }

    #[test]
    fn a_malformed_key_names_its_variable() {
        let config = SecretKeyConfig {
            secret_key: Some("too-short".parse().unwrap_or_else(|e| match e {})),
            secret_key_file: None,
        };
        let err = config.validate().unwrap_err();
        assert_eq!(err.variable, "PORCH_SECRET_KEY");
    }
}
