//! The command line and environment of the `queen` binary.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// A message broker with the Queen MQ HTTP API and the Kafka wire protocol
/// on one storage engine. Every flag can also be set from the environment.
#[derive(Debug, Clone, Parser)]
#[command(name = "queen", version, about)]
pub struct Config {
    /// Address of the HTTP API.
    #[arg(long, env = "QUEEN_HTTP_ADDR", default_value = "127.0.0.1:6632")]
    pub http_addr: SocketAddr,

    /// Address of the Kafka listener.
    #[arg(long, env = "QUEEN_KAFKA_ADDR", default_value = "127.0.0.1:9092")]
    pub kafka_addr: SocketAddr,

    /// Where everything is stored: `sqlite://path` (created if missing) or
    /// `postgres://…` for several brokers sharing one database.
    #[arg(
        long,
        env = "QUEEN_DATABASE_URL",
        default_value = "sqlite://./data/queen.db",
        global = true
    )]
    pub database_url: String,

    /// Log filter, as `info` or `queen=debug,storage=debug`.
    #[arg(long, env = "QUEEN_LOG", default_value = "info")]
    pub log_level: String,

    /// How log lines are written (to stderr): `text`, coloured only when
    /// stderr is a terminal, or `json`, one object per line.
    #[arg(long, env = "QUEEN_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,

    /// Largest HTTP request body accepted, in bytes.
    #[arg(long, env = "QUEEN_MAX_BODY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Where a named consumer group starts on a queue when its first pop
    /// names no subscription mode: `all` (the backlog) or `new` (only
    /// messages stored from then on).
    #[arg(
        long,
        env = "QUEEN_DEFAULT_SUBSCRIPTION_MODE",
        default_value = "all",
        value_parser = ["all", "new"]
    )]
    pub default_subscription_mode: String,

    /// Memory the native dedup indexes of all partitions share, in MiB:
    /// about 16 bits per id inside a window plus up to 0.7 MiB per busy
    /// partition. Past it, busy partitions' filters are folded (more page
    /// reads per push), never their answers changed.
    #[arg(long, env = "QUEEN_DEDUP_MEMORY_MB", default_value_t = 64)]
    pub dedup_memory_mb: usize,

    /// A file holding the 256-bit key that encrypts the payloads of queues
    /// with `encryptionEnabled` at rest: 64 hexadecimal digits (e.g. from
    /// `openssl rand -hex 32`) or the 32 raw bytes. Without it, such
    /// queues refuse pushes and reads.
    #[arg(long, env = "QUEEN_ENCRYPTION_KEY_FILE", global = true)]
    pub encryption_key_file: Option<std::path::PathBuf>,

    /// Key files of retired encryption keys, comma-separated: they only
    /// open the payloads they sealed, until `queen reseal` has sealed those
    /// again under the current key (`--encryption-key-file`).
    #[arg(
        long,
        env = "QUEEN_ENCRYPTION_RETIRED_KEY_FILES",
        value_delimiter = ',',
        global = true
    )]
    pub encryption_retired_key_files: Vec<std::path::PathBuf>,

    /// Largest Kafka request frame accepted, in bytes.
    #[arg(long, env = "QUEEN_MAX_KAFKA_REQUEST_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_kafka_request_bytes: usize,

    /// The Kafka address given to clients in Metadata, as `host:port`
    /// (default: the Kafka listener's address).
    #[arg(long, env = "QUEEN_ADVERTISED_KAFKA_ADDR")]
    pub advertised_kafka_addr: Option<String>,

    /// Whether Kafka Metadata and Produce create unknown topics.
    #[arg(long, env = "QUEEN_AUTO_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub auto_create_topics: bool,

    /// Partitions of a topic created automatically or without a count.
    #[arg(long, env = "QUEEN_DEFAULT_PARTITIONS", default_value_t = 1)]
    pub default_partitions: i32,

    /// Largest Kafka record batch accepted, in bytes.
    #[arg(long, env = "QUEEN_MAX_MESSAGE_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message_bytes: usize,

    /// Bytes of Kafka requests read and not yet answered, across connections.
    #[arg(long, env = "QUEEN_MAX_KAFKA_IN_FLIGHT_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_kafka_in_flight_bytes: usize,

    /// How long an idle Kafka producer's sequence state is kept, in ms
    /// (Kafka's `producer.id.expiration.ms`).
    #[arg(
        long,
        env = "QUEEN_PRODUCER_ID_EXPIRATION_MS",
        default_value_t = 86_400_000
    )]
    pub producer_id_expiration_ms: i64,

    /// The longest transaction timeout a Kafka transactional producer may
    /// ask for, in ms (Kafka's `transaction.max.timeout.ms`); InitProducerId
    /// asking for more answers INVALID_TRANSACTION_TIMEOUT.
    #[arg(
        long,
        env = "QUEEN_TRANSACTION_MAX_TIMEOUT_MS",
        default_value_t = 900_000
    )]
    pub transaction_max_timeout_ms: i32,

    /// How long the first rebalance of an empty Kafka consumer group waits
    /// for more members, in ms (Kafka's `group.initial.rebalance.delay.ms`).
    #[arg(
        long,
        env = "QUEEN_GROUP_INITIAL_REBALANCE_DELAY_MS",
        default_value_t = 3_000
    )]
    pub group_initial_rebalance_delay_ms: i32,

    /// Shortest session timeout a Kafka group member may ask for, in ms.
    #[arg(
        long,
        env = "QUEEN_GROUP_MIN_SESSION_TIMEOUT_MS",
        default_value_t = 6_000
    )]
    pub group_min_session_timeout_ms: i32,

    /// Longest session timeout a Kafka group member may ask for, in ms.
    #[arg(
        long,
        env = "QUEEN_GROUP_MAX_SESSION_TIMEOUT_MS",
        default_value_t = 1_800_000
    )]
    pub group_max_session_timeout_ms: i32,

    /// Session timeout of members of KIP-848 consumer groups, in ms (the
    /// broker sets it, as Kafka's `group.consumer.session.timeout.ms`).
    #[arg(
        long,
        env = "QUEEN_GROUP_CONSUMER_SESSION_TIMEOUT_MS",
        default_value_t = 45_000
    )]
    pub group_consumer_session_timeout_ms: i32,

    /// Heartbeat interval told to members of KIP-848 consumer groups, in ms
    /// (Kafka's `group.consumer.heartbeat.interval.ms`).
    #[arg(
        long,
        env = "QUEEN_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS",
        default_value_t = 5_000
    )]
    pub group_consumer_heartbeat_interval_ms: i32,

    /// Label the topic and lag metrics of `/metrics` per partition, not
    /// only per topic. Native queues may have very many partitions: each
    /// becomes a series, and each scrape reads every partition's newest
    /// segment.
    #[arg(long, env = "QUEEN_METRICS_PER_PARTITION", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub metrics_per_partition: bool,

    /// Most Kafka connections served at once.
    #[arg(long, env = "QUEEN_MAX_KAFKA_CONNECTIONS", default_value_t = 10_000)]
    pub max_kafka_connections: usize,

    /// Kafka listeners, `NAME://host:port` separated by commas, NAME one of
    /// PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (Kafka's `listeners`).
    /// Replaces --kafka-addr, which is one PLAINTEXT listener.
    #[arg(long, env = "QUEEN_KAFKA_LISTENERS", value_delimiter = ',')]
    pub kafka_listeners: Vec<String>,

    /// The address clients of each listener are told, `NAME://host:port`
    /// separated by commas (Kafka's `advertised.listeners`); a listener not
    /// named here advertises the address it is bound to.
    #[arg(long, env = "QUEEN_KAFKA_ADVERTISED_LISTENERS", value_delimiter = ',')]
    pub kafka_advertised_listeners: Vec<String>,

    /// The certificate chain (PEM) of SSL and SASL_SSL listeners.
    #[arg(long, env = "QUEEN_KAFKA_SSL_CERT")]
    pub kafka_ssl_cert: Option<PathBuf>,

    /// The private key (PEM) of SSL and SASL_SSL listeners.
    #[arg(long, env = "QUEEN_KAFKA_SSL_KEY")]
    pub kafka_ssl_key: Option<PathBuf>,

    /// The CA certificates (PEM) client certificates are verified against.
    #[arg(long, env = "QUEEN_KAFKA_SSL_CLIENT_CA")]
    pub kafka_ssl_client_ca: Option<PathBuf>,

    /// Whether TLS listeners ask for a client certificate (Kafka's
    /// `ssl.client.auth`): `none`, `requested` or `required`. On an SSL
    /// listener the certificate's subject is the principal.
    #[arg(
        long,
        env = "QUEEN_KAFKA_SSL_CLIENT_AUTH",
        default_value = "none",
        value_parser = ["none", "requested", "required"]
    )]
    pub kafka_ssl_client_auth: String,

    /// SASL mechanisms offered on SASL listeners, in order.
    #[arg(
        long,
        env = "QUEEN_KAFKA_SASL_MECHANISMS",
        value_delimiter = ',',
        default_value = "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN"
    )]
    pub kafka_sasl_mechanisms: Vec<String>,

    /// How long a SASL authentication lasts, in ms (Kafka's
    /// `connections.max.reauth.ms`): clients re-authenticate before it
    /// runs out (KIP-368). 0: for the connection's life.
    #[arg(
        long,
        env = "QUEEN_KAFKA_SASL_SESSION_LIFETIME_MS",
        default_value_t = 0
    )]
    pub kafka_sasl_session_lifetime_ms: i64,

    /// Refuse to start if a Kafka listener does not authenticate its
    /// clients, or the HTTP API has no --http-auth.
    #[arg(long, env = "QUEEN_REQUIRE_AUTH")]
    pub require_auth: bool,

    /// The certificate chain (PEM) of the HTTP API: with --http-tls-key it
    /// serves HTTPS only.
    #[arg(long, env = "QUEEN_HTTP_TLS_CERT", requires = "http_tls_key")]
    pub http_tls_cert: Option<PathBuf>,

    /// The private key (PEM) of the HTTP API's certificate.
    #[arg(long, env = "QUEEN_HTTP_TLS_KEY", requires = "http_tls_cert")]
    pub http_tls_key: Option<PathBuf>,

    /// CA certificates (PEM): when given, HTTPS clients must present a
    /// certificate signed by one of them (mutual TLS).
    #[arg(long, env = "QUEEN_HTTP_TLS_CLIENT_CA", requires = "http_tls_cert")]
    pub http_tls_client_ca: Option<PathBuf>,

    /// How HTTP clients authenticate, separated by commas: `jwt`
    /// (`Authorization: Bearer`), `basic` (the users of `queen user`).
    /// None (the default): every request is served, as on loopback.
    #[arg(long, env = "QUEEN_HTTP_AUTH", value_delimiter = ',', value_parser = ["jwt", "basic"])]
    pub http_auth: Vec<String>,

    /// The HS256 secret of bearer tokens (the file's bytes, trailing
    /// whitespace dropped; at least 32 bytes).
    #[arg(long, env = "QUEEN_HTTP_JWT_SECRET_FILE")]
    pub http_jwt_secret_file: Option<PathBuf>,

    /// A public key (PEM, RSA or EC P-256/P-384) bearer tokens are signed
    /// for: RS256/RS384/RS512 or ES256/ES384.
    #[arg(long, env = "QUEEN_HTTP_JWT_PUBLIC_KEY_FILE")]
    pub http_jwt_public_key_file: Option<PathBuf>,

    /// A JWKS file (`{"keys":[…]}`) of the keys bearer tokens are signed
    /// with, chosen by the token's `kid`.
    #[arg(long, env = "QUEEN_HTTP_JWT_JWKS_FILE")]
    pub http_jwt_jwks_file: Option<PathBuf>,

    /// The `iss` bearer tokens must carry (default: not checked).
    #[arg(long, env = "QUEEN_HTTP_JWT_ISSUER")]
    pub http_jwt_issuer: Option<String>,

    /// The `aud` bearer tokens must carry (default: not checked).
    #[arg(long, env = "QUEEN_HTTP_JWT_AUDIENCE")]
    pub http_jwt_audience: Option<String>,

    /// Clock skew allowed when checking `exp` and `nbf`, in seconds.
    #[arg(long, env = "QUEEN_HTTP_JWT_LEEWAY_SECS", default_value_t = 30)]
    pub http_jwt_leeway_secs: u64,

    /// How requests are authorized: `none` (everything is allowed, the
    /// default) or `acl` (Kafka ACLs, kept in the database: what no ACL
    /// allows is denied).
    #[arg(
        long,
        env = "QUEEN_AUTHORIZER",
        default_value = "none",
        value_parser = ["none", "acl"]
    )]
    pub authorizer: String,

    /// Principals allowed everything when ACLs are on, separated by `;` as
    /// Kafka's `super.users` (`User:admin;User:ops`).
    #[arg(long, env = "QUEEN_SUPER_USERS", value_delimiter = ';')]
    pub super_users: Vec<String>,

    /// With `--authorizer acl`, allow everything on a resource that no ACL
    /// names, of any principal or operation (Kafka's
    /// `allow.everyone.if.no.acl.found`).
    #[arg(long, env = "QUEEN_ALLOW_EVERYONE_IF_NO_ACL_FOUND", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub allow_everyone_if_no_acl_found: bool,

    /// A JSON file with the settings of `queen mirror` (`source`, `topics`,
    /// `topic_regex`, `groups`, `source_properties`, `refresh_ms`): the
    /// broker runs the mirror as a task, one broker of a shared database
    /// at a time (README, "Migrating from Kafka").
    #[arg(long, env = "QUEEN_MIRROR_CONFIG")]
    pub mirror_config: Option<PathBuf>,

    /// What to do instead of running the broker.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Tasks other than running the broker.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Manages the users of the Kafka door (SCRAM credentials, kept in the
    /// database and shared by every broker on it).
    #[command(subcommand)]
    User(UserCommand),
    /// Seals again under the current key (`--encryption-key-file`) every
    /// stored payload sealed under a retired key
    /// (`--encryption-retired-key-files`), while brokers keep serving.
    /// Once it reports none left, the retired keys can be dropped.
    Reseal,
    /// Copies topics and consumer-group offsets from a source Kafka cluster
    /// into this broker's database, at their source offsets, until SIGINT
    /// or SIGTERM (README, "Migrating from Kafka").
    Mirror(crate::mirror::MirrorArgs),
    /// Shows each mirrored topic's partitions: the source's high watermark,
    /// the mirrored offset and the lag, and the topic's error.
    MirrorStatus,
    /// Hands a mirrored topic to local producers once the mirror has caught
    /// up with the source; from then on the mirror no longer writes to it.
    MirrorFence {
        /// The topics to fence.
        #[arg(required = true)]
        topics: Vec<String>,
    },
}

/// `queen user …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum UserCommand {
    /// Creates a user or sets its password. The password is read from
    /// $QUEEN_USER_PASSWORD if set, else from the first line of stdin;
    /// never from the command line.
    #[command(alias = "set-password")]
    Add {
        /// The user name.
        name: String,
        /// The SCRAM mechanisms to keep a credential for (PLAIN accepts
        /// the password through either).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "SCRAM-SHA-256,SCRAM-SHA-512"
        )]
        mechanisms: Vec<String>,
        /// PBKDF2 iterations (4096 to 16384, as Kafka accepts).
        #[arg(long, default_value_t = facade::auth::credential::DEFAULT_ITERATIONS)]
        iterations: i32,
    },
    /// Deletes a user's credentials.
    Delete {
        /// The user name.
        name: String,
    },
    /// Lists the users and their mechanisms.
    List,
}
