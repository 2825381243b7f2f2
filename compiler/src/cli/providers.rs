//! `knowledge providers list|check|models`: the model providers kc.toml configures, whether their keys are
//! set (without calling anyone), and the models one serves.

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::config::Project;
use knowledge::providers::{self, KeyStatus};

use super::Invocation;
use super::output::print;

#[derive(Subcommand)]
pub(crate) enum ProvidersCommand {
    /// Each provider: its kind, endpoint, default model, aliases and the variable its key comes from.
    List {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Whether each provider's key is set, without calling anyone; exits 1 when one is missing.
    Check {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The models a provider serves (the default provider unless named).
    Models {
        /// The provider's name in kc.toml.
        name: Option<String>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: ProvidersCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    match command {
        ProvidersCommand::List { json } => {
            let listed = providers::configured(&project);
            print(json, &listed, |out| {
                if listed.is_empty() {
                    writeln!(out, "no providers: add a [providers.NAME] table to kc.toml")?;
                }
                for provider in &listed {
                    let default = if provider.default { " (default)" } else { "" };
                    let key =
                        provider.api_key_env.as_deref().map_or("no key".to_string(), |v| format!("key from ${v}"));
                    writeln!(
                        out,
                        "{}{default}: {} at {}, model {}, {key}",
                        provider.name,
                        provider.kind.as_str(),
                        provider.base_url,
                        provider.model
                    )?;
                    for (alias, model) in &provider.aliases {
                        writeln!(out, "  {alias} = {model}")?;
                    }
                }
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        ProvidersCommand::Check { json } => {
            let listed = providers::configured(&project);
            let statuses: Vec<KeyStatus> = listed.iter().map(providers::Provider::key_status).collect();
            let checked: Vec<serde_json::Value> = listed
                .iter()
                .zip(&statuses)
                .map(|(p, key)| serde_json::json!({"name": p.name, "api_key_env": p.api_key_env, "key": key}))
                .collect();
            let missing = statuses.contains(&KeyStatus::Missing);
            print(json, &checked, |out| {
                for (provider, key) in listed.iter().zip(&statuses) {
                    let variable = provider.api_key_env.as_deref().unwrap_or_default();
                    match key {
                        KeyStatus::Present => writeln!(out, "{}: key set (${variable})", provider.name)?,
                        KeyStatus::Missing => writeln!(out, "{}: key missing: set ${variable}", provider.name)?,
                        KeyStatus::NotNeeded => writeln!(out, "{}: no key needed", provider.name)?,
                    }
                }
                Ok(())
            })?;
            Ok(if missing { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        ProvidersCommand::Models { name, json } => {
            let provider = providers::find(&project, name.as_deref()).map_err(anyhow::Error::msg)?;
            let models = provider.models().map_err(anyhow::Error::msg)?;
            print(json, &models, |out| {
                // The provider names its models: shown escaped, as every human output is.
                for model in &models {
                    writeln!(out, "{}", knowledge::escape(model))?;
                }
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
