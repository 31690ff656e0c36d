//! End-to-end tests with the official `queen-mq` Python client against the
//! running binary. The interpreter is `$QUEEN_TEST_PYTHON` (default
//! `python3`) with `tests/python/requirements.txt` installed; the test fails,
//! saying so, when the client is missing.

mod support;

use support::{Broker, TestDb};

fn run_script(script: &str, broker: &Broker) {
    support::python::run(script, broker, &[]);
}

/// Runs `script` against a broker on a fresh SQLite database.
fn on_sqlite(script: &str) {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    run_script(script, &broker);
}

/// Runs `script` against a broker on a fresh PostgreSQL database.
async fn on_postgres(script: &str) {
    let db = TestDb::postgres().await;
    let broker = Broker::start(&db.url, &[]);
    tokio::task::block_in_place(|| run_script(script, &broker));
    drop(broker);
}

/// One test per backend for each script.
macro_rules! scripts {
    ($($name:ident => $script:literal),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    crate::on_sqlite($script);
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    crate::on_postgres($script).await;
                }
            )*
        }
    };
}

scripts!(
    pushes_and_sees_duplicates => "push_dedup.py",
    consumes_in_order_and_long_polls => "consume_basic.py",
    retries_a_failing_handler_then_dead_letters => "consume_dlq.py",
    delivers_every_message_to_every_group => "consume_groups.py",
    ten_consumers_get_each_message_once_in_order => "consume_concurrent.py",
    redelivers_a_killed_consumers_batch_after_its_lease => "consume_redelivery.py",
    kafka_python_round_trips => "kafka_roundtrip.py",
    a_group_moves_between_kafka_and_http => "kafka_group_migration.py",
    kafka_group_resumes_at_its_commit_and_is_administered => "kafka_group_resume.py",
    kafka_group_survivors_take_over_a_killed_members_partitions => "kafka_group_rebalance.py",
    transactions_and_once_perform_each_effect_once => "txn_once.py",
    retention_deletes_old_messages_for_queen_mq => "native_retention.py",
    kafka_python_follows_delete_records => "kafka_delete_records.py",
    kafka_python_reads_a_compacted_topic => "kafka_compacted.py",
    binary_push_and_framed_pop_match_json => "binary_forms.py",
);
