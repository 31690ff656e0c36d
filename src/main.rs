//! `queen`: runs the broker with both front doors, manages its users,
//! rotates its payload key, or mirrors a Kafka cluster into its database.

mod mirror_command;
mod reseal_command;
mod user_command;

use std::io::IsTerminal;

use clap::Parser;
use queen::config::{Command, Config};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&config.log_level)?)
        .with_writer(std::io::stderr)
        // Colour codes belong on a terminal, not in a log file.
        .with_ansi(std::io::stderr().is_terminal());
    match config.log_format.as_str() {
        "json" => logs.json().init(),
        _ => logs.init(),
    }
    match &config.command {
        Some(Command::User(command)) => user_command::run(&config.database_url, command).await,
        Some(Command::Reseal) => reseal_command::run(&config).await,
        Some(Command::Mirror(args)) => mirror_command::run(&config, args).await,
        Some(Command::MirrorStatus) => mirror_command::status(&config).await,
        Some(Command::MirrorFence { topics }) => mirror_command::fence(&config, topics).await,
        None => queen::run(config, queen::shutdown_signal()).await,
    }
}
