//! The `queen` broker: configuration, the HTTP API, and the wiring of both
//! front doors onto one storage engine.
//!
//! - [`config`]: flags and environment.
//! - [`dashboard`]: the web page at `/` and the read-only routes it adds.
//! - [`http`]: the native HTTP API (one file per resource).
//! - [`metrics`]: `GET /metrics` (Prometheus), HTTP request metrics and the
//!   families read at scrape time.
//! - [`run`]: opens the engine, binds both listeners, serves until shutdown.

pub mod config;
pub mod dashboard;
pub mod http;
pub mod http_security;
pub mod kafka_listeners;
pub mod metrics;
pub mod mirror;

use std::future::Future;

use anyhow::Context;
use std::sync::Arc;

use storage::sealing::{Keyring, PayloadKey};
use storage::{Engine, SystemClock};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// Runs the broker until `shutdown` resolves, then drains and closes.
pub async fn run(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let mirror = config
        .mirror_config
        .as_deref()
        .map(mirror::MirrorArgs::from_file)
        .transpose()?;
    let engine = open_engine(&config).await?;
    engine.set_dedup_memory(config.dedup_memory_mb.saturating_mul(1 << 20));
    let http = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("binding the HTTP address {}", config.http_addr))?;
    let sasl = kafka_listeners::sasl(&config)?;
    let http_auth = http_security::auth(&config, &engine, &sasl)?;
    let http_tls = http_security::tls(&config)?;
    let kafka = kafka_listeners::bind(&config).await?;
    http_security::check_exposure(&config, http.local_addr()?, http_auth.is_some())?;
    let facade_config = facade::FacadeConfig {
        max_request_bytes: config.max_kafka_request_bytes,
        max_message_bytes: config.max_message_bytes,
        max_decompressed_bytes: config.max_kafka_request_bytes,
        listeners: kafka.iter().map(|(_, l)| l.clone()).collect(),
        sasl,
        auto_create_topics: config.auto_create_topics,
        default_partitions: config.default_partitions.max(1),
        max_connections: config.max_kafka_connections,
        max_in_flight_bytes: config.max_kafka_in_flight_bytes,
        group_limits: facade::GroupLimits {
            min_session_ms: config.group_min_session_timeout_ms,
            max_session_ms: config.group_max_session_timeout_ms,
            initial_delay_ms: config.group_initial_rebalance_delay_ms,
            consumer_session_ms: config.group_consumer_session_timeout_ms,
            consumer_heartbeat_ms: config.group_consumer_heartbeat_interval_ms,
        },
        authorization: kafka_listeners::authorization(&config)?,
        transaction_max_timeout_ms: config.transaction_max_timeout_ms,
    };
    let broker = facade::Broker::register(engine.clone(), facade_config)
        .await
        .context("registering the broker for the Kafka facade")?;
    let http_addr = http.local_addr()?;
    let mut kafka_addrs = Vec::new();
    for (socket, listener) in &kafka {
        kafka_addrs.push((listener.name.clone(), socket.local_addr()?));
    }
    // A stable line on stdout that scripts and tests wait for (`kafka=` is
    // the first listener, `kafka.NAME=` each one); the log says it too,
    // for whoever reads only the log.
    let first = kafka_addrs
        .first()
        .map(|(_, a)| a.to_string())
        .unwrap_or_default();
    let each: String = kafka_addrs
        .iter()
        .map(|(name, addr)| format!(" kafka.{name}={addr}"))
        .collect();
    println!(
        "queen listening http={http_addr} kafka={first}{each} database={}",
        engine.backend()
    );
    tracing::info!(http = %http_addr, kafka = %first, listeners = %each.trim(), database = engine.backend(), "listening");

    let stop = CancellationToken::new();
    let state = http::AppState {
        engine: engine.clone(),
        max_body_bytes: config.max_body_bytes,
        default_subscription: storage::SubscriptionMode::from_name(
            &config.default_subscription_mode,
        ),
        authorizer: broker.authorizer.clone(),
    };
    let broker = Arc::new(broker);
    let metrics =
        metrics::Metrics::new(engine.clone(), broker.clone(), config.metrics_per_partition);
    let history = Arc::new(dashboard::History::default());
    let sampler = tokio::spawn({
        let (history, stop) = (history.clone(), stop.clone());
        async move { history.sample_until(stop).await }
    });
    // The dashboard's data and the metrics name everything: DESCRIBE on
    // the cluster, when ACLs are on.
    let outside_api = metrics::router(metrics)
        .merge(dashboard::router(dashboard::DashboardState {
            broker: broker.clone(),
            history,
        }))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::authorize::describe_cluster,
        ));
    let app = http::auth::protect(http::router(state).merge(outside_api), http_auth);
    let http_task = tokio::spawn(http::serve(
        http,
        http_tls,
        app,
        stop.clone().cancelled_owned(),
    ));
    let kafka_task = tokio::spawn(facade::serve(kafka, broker, stop.clone().cancelled_owned()));

    let upkeeps = [
        upkeep(
            &engine,
            "KV sweep",
            KV_SWEEP_INTERVAL,
            &stop,
            |engine| async move { Ok(engine.sweep_kv(KV_SWEEP_STEP).await? >= KV_SWEEP_STEP as u64) },
        ),
        upkeep(
            &engine,
            "dedup upkeep",
            DEDUP_UPKEEP_INTERVAL,
            &stop,
            |engine| async move { engine.maintain_dedup().await },
        ),
        upkeep(
            &engine,
            "retention",
            RETENTION_INTERVAL,
            &stop,
            |engine| async move { engine.enforce_retention().await },
        ),
        upkeep(
            &engine,
            "compaction",
            COMPACTION_INTERVAL,
            &stop,
            |engine| async move { engine.enforce_compaction().await },
        ),
        // Aborts Kafka transactions that outlived their timeout and fences
        // their producers, as Kafka's
        // `transaction.abort.timed.out.transaction.cleanup.interval.ms`. Safe
        // with several brokers: each abort re-checks the state under its row lock.
        upkeep(
            &engine,
            "aborting expired transactions",
            TXN_TIMEOUT_INTERVAL,
            &stop,
            |engine| async move {
                Ok(engine.abort_expired_transactions(TXN_TIMEOUT_STEP).await?
                    >= TXN_TIMEOUT_STEP as u64)
            },
        ),
        // Forgets idle Kafka producers' sequence state (one bounded delete a
        // step, safe with several brokers).
        {
            let idle_ms = config.producer_id_expiration_ms;
            upkeep(
                &engine,
                "expiring producer state",
                PRODUCER_EXPIRY_INTERVAL,
                &stop,
                move |engine| async move {
                    Ok(engine
                        .expire_producers(idle_ms, PRODUCER_EXPIRY_STEP)
                        .await?
                        >= PRODUCER_EXPIRY_STEP as u64)
                },
            )
        },
    ];
    let mirror = mirror.map(|args| tokio::spawn(mirror::serve(engine.clone(), args, stop.clone())));

    shutdown.await;
    tracing::info!("shutting down");
    stop.cancel();
    http_task.await??;
    kafka_task.await?;
    for task in upkeeps {
        task.await?;
    }
    if let Some(mirror) = mirror {
        mirror.await?;
    }
    sampler.await?;
    if tokio::time::timeout(CLOSE_GRACE, engine.close())
        .await
        .is_err()
    {
        // A connection still checked out would hold the close forever, and
        // a broker that does not exit on SIGTERM is killed anyway; SQLite
        // and PostgreSQL both roll back what an abandoned connection held.
        tracing::warn!("shutting down: database connections still in use after {CLOSE_GRACE:?}; exiting without them");
    }
    Ok(())
}

/// Opens the database of `config` with its payload keys.
pub async fn open_engine(config: &Config) -> anyhow::Result<Engine> {
    let keys = keyring(config)?;
    Engine::open(&config.database_url, Arc::new(SystemClock), &keys)
        .await
        .with_context(|| format!("opening the database {}", redact(&config.database_url)))
}

/// The payload keys of `config`: the current one seals, retired ones only
/// open.
fn keyring(config: &Config) -> anyhow::Result<Keyring> {
    let current = config
        .encryption_key_file
        .as_deref()
        .map(PayloadKey::from_file)
        .transpose()?;
    let retired = config
        .encryption_retired_key_files
        .iter()
        .map(|path| PayloadKey::from_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    match &current {
        Some(key) => {
            let retired: Vec<String> = retired.iter().map(PayloadKey::id).collect();
            tracing::info!(
                key_id = %key.id(),
                retired = %retired.join(","),
                "payloads of encrypted queues are sealed at rest"
            );
        }
        None if !retired.is_empty() => anyhow::bail!(
            "--encryption-retired-key-files needs --encryption-key-file: the key that seals from now on"
        ),
        None => {}
    }
    Ok(Keyring::new(current, retired))
}

/// The most expired KV rows one sweep step deletes: each step is one short
/// transaction, so a large backlog never holds the writer for long.
const KV_SWEEP_STEP: usize = 1_000;

/// How often transactions past their timeout are looked for, and the most
/// one step aborts.
const TXN_TIMEOUT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
const TXN_TIMEOUT_STEP: i64 = 100;

/// How often idle producers' sequence state is expired, and the most rows
/// one step deletes.
const PRODUCER_EXPIRY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);
const PRODUCER_EXPIRY_STEP: i64 = 10_000;

/// The longest a shutdown waits for the database connections to close.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The pause between sweeps once the backlog is cleared. Expired rows are
/// invisible at once anyway; the sweep only reclaims their space.
const KV_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// The pause between dedup upkeep steps once nothing is waiting: merges
/// can wait a little, and runs past their window are never read anyway.
const DEDUP_UPKEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The pause between retention checks once nothing is waiting: how late,
/// at most, a message past its retention is deleted (Kafka checks every
/// five minutes by default).
const RETENTION_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// The pause between compaction checks once nothing is waiting. Shorter
/// than retention's: a compacted partition stores every write until the
/// next cleaning, so this bounds how far its stored records rise above its
/// live keys. A check reads a few sums per compacted partition.
const COMPACTION_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// Spawns the bounded background `step` on `engine` until `stop`: again
/// after a short breath (that lets other writers in) while it reports more
/// work waiting, else after `idle`. Several brokers on one PostgreSQL
/// database run their steps side by side. A step is never cut off: `stop`
/// is only heeded between steps.
fn upkeep<F, Fut>(
    engine: &Engine,
    what: &'static str,
    idle: std::time::Duration,
    stop: &CancellationToken,
    step: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Engine) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = storage::Result<bool>> + Send + 'static,
{
    let (engine, stop) = (engine.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            let pause = match step(engine.clone()).await {
                Ok(true) => std::time::Duration::from_millis(10),
                Ok(false) => idle,
                Err(e) => {
                    tracing::warn!(error = %e, "{what} failed; trying again later");
                    idle
                }
            };
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    })
}

/// The Kafka address to advertise: the configured one, or the listener's.
pub(crate) fn advertised(
    config: &Config,
    bound: std::net::SocketAddr,
) -> anyhow::Result<(String, i32)> {
    match &config.advertised_kafka_addr {
        Some(addr) => {
            let (host, port) = addr
                .rsplit_once(':')
                .with_context(|| format!("--advertised-kafka-addr {addr:?} is not host:port"))?;
            let port = port
                .parse()
                .with_context(|| format!("--advertised-kafka-addr {addr:?} has no valid port"))?;
            Ok((host.trim_matches(['[', ']']).to_owned(), port))
        }
        None => Ok((bound.ip().to_string(), i32::from(bound.port()))),
    }
}

/// The database URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://…@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed by this
/// call, not when the future is first polled: `run` polls it only after
/// printing the listening line, and a SIGTERM sent on seeing that line
/// must not find the default action (death) still in place.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = signal(SignalKind::interrupt()).and_then(|interrupt| {
            signal(SignalKind::terminate()).map(|terminate| (interrupt, terminate))
        });
        async move {
            match handlers {
                Ok((mut interrupt, mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGINT and SIGTERM");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
