//! `queen user add|delete|list`: the Kafka door's users, in the database.
//! Passwords come from `$QUEEN_USER_PASSWORD` or stdin, never from the
//! command line (where `ps` and shell history would show them).

use std::io::{BufRead, IsTerminal};

use anyhow::{bail, Context};
use queen::config::UserCommand;
use storage::{Engine, ScramMechanism};

/// The environment variable `queen user add` reads the password from.
const PASSWORD_ENV: &str = "QUEEN_USER_PASSWORD";

/// Runs one user command against the database at `database_url`.
pub(crate) async fn run(database_url: &str, command: &UserCommand) -> anyhow::Result<()> {
    let engine = Engine::connect(database_url)
        .await
        .context("opening the database")?;
    let result = match command {
        UserCommand::Add {
            name,
            mechanisms,
            iterations,
        } => add(&engine, name, mechanisms, *iterations).await,
        UserCommand::Delete { name } => {
            if engine.delete_user(name).await? {
                println!("deleted user {name}");
                Ok(())
            } else {
                Err(anyhow::anyhow!("no user {name:?}"))
            }
        }
        UserCommand::List => {
            for user in engine.users(None).await? {
                let mechanisms: Vec<String> = user
                    .mechanisms
                    .iter()
                    .map(|(m, iterations)| format!("{}(iterations={iterations})", m.name()))
                    .collect();
                println!("{} {}", user.name, mechanisms.join(" "));
            }
            Ok(())
        }
    };
    engine.close().await;
    result
}

async fn add(
    engine: &Engine,
    name: &str,
    mechanisms: &[String],
    iterations: i32,
) -> anyhow::Result<()> {
    let mut wanted = Vec::new();
    for m in mechanisms {
        let mechanism = ScramMechanism::from_name(m.trim())
            .with_context(|| format!("{m:?} is not SCRAM-SHA-256 or SCRAM-SHA-512"))?;
        wanted.push(mechanism);
    }
    if wanted.is_empty() {
        bail!("--mechanisms names no mechanism");
    }
    let password = password()?;
    for mechanism in wanted {
        let credential =
            facade::auth::credential::new_credential(mechanism, &password, iterations)?;
        engine
            .put_scram_credential(name, mechanism, &credential)
            .await?;
    }
    println!("user {name} set ({})", mechanisms.join(","));
    Ok(())
}

/// The password: `$QUEEN_USER_PASSWORD`, else stdin's first line.
fn password() -> anyhow::Result<String> {
    if let Ok(password) = std::env::var(PASSWORD_ENV) {
        if password.is_empty() {
            bail!("${PASSWORD_ENV} is empty");
        }
        return Ok(password);
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("password (echoed; set ${PASSWORD_ENV} or pipe it to avoid that): ");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("reading the password from stdin")?;
    let password = line.trim_end_matches(['\n', '\r']).to_owned();
    if password.is_empty() {
        bail!("no password: set ${PASSWORD_ENV} or give it on stdin");
    }
    Ok(password)
}
