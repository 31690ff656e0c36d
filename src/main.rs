//! `queen`: runs the broker with both front doors.

use clap::Parser;
use queen::config::Config;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&config.log_level)?)
        .with_writer(std::io::stderr)
        .init();
    queen::run(config, queen::shutdown_signal()).await
}
