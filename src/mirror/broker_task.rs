//! The mirror as a task of the broker (`--mirror-config`): the engine of
//! `queen mirror`, run by one broker at a time. On a database shared by
//! several brokers the `mirror` duty's lease (as retention's) decides which
//! one: the others wait and take over once its holder stops renewing it.
//! Two mirrors at once would do no harm (each offset is written once), only
//! twice the reads at the source.

use std::time::Duration;

use storage::Engine;
use tokio_util::sync::CancellationToken;

use super::MirrorArgs;

/// How often a broker that does not mirror asks for the duty, and one that
/// does renews it (a write only once half of the lease has run out).
const DUTY_CHECK: Duration = Duration::from_secs(1);

/// How long after a failed run the mirror starts again.
const RESTART_DELAY: Duration = Duration::from_secs(5);

/// Mirrors with `args` whenever this broker holds the duty, until `stop`;
/// then gives the duty up.
pub async fn serve(engine: Engine, args: MirrorArgs, stop: CancellationToken) {
    loop {
        if !wait_for_duty(&engine, &stop).await {
            return;
        }
        tracing::info!(source = args.source, "mirror: this broker mirrors");
        let holds = async {
            tokio::select! {
                () = stop.cancelled() => {}
                () = lose_duty(&engine) => {
                    tracing::warn!("mirror: the duty went to another broker");
                }
            }
        };
        let result = super::run(engine.clone(), args.clone(), holds).await;
        if let Err(e) = result {
            tracing::error!(error = %format!("{e:#}"), "mirror stopped; starting again");
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(RESTART_DELAY) => {}
            }
        }
        if stop.is_cancelled() {
            break;
        }
    }
    if let Err(e) = engine.release_mirror_duty().await {
        tracing::warn!(error = %e, "mirror: cannot give up the duty");
    }
}

/// Waits until this broker holds the mirror duty (true) or `stop` (false).
async fn wait_for_duty(engine: &Engine, stop: &CancellationToken) -> bool {
    loop {
        match engine.hold_mirror_duty().await {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "mirror: cannot ask for the duty"),
        }
        tokio::select! {
            () = stop.cancelled() => return false,
            () = tokio::time::sleep(DUTY_CHECK) => {}
        }
    }
}

/// Renews the duty; returns once it is lost (or cannot be renewed).
async fn lose_duty(engine: &Engine) {
    loop {
        tokio::time::sleep(DUTY_CHECK).await;
        match engine.hold_mirror_duty().await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "mirror: cannot renew the duty");
                return;
            }
        }
    }
}
