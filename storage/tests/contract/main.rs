//! The storage contract: every scenario runs on SQLite and on PostgreSQL,
//! each on a fresh database.

mod acl_lookups;
mod acls;
mod consume;
mod dedup;
mod kafka_txn;
mod kv;
mod log;
mod mirror;
mod offsets;
mod postgres_only;
mod producers;
mod push;
mod queues;
mod retention;
mod sealing;
mod stats;
mod strings;
mod support;
mod txn;
mod txn_native;
mod txn_upkeep;
mod users;

/// Instantiates each scenario `module::name(&Db)` once per backend.
macro_rules! contract {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = crate::support::Db::sqlite();
                    crate::$module::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = crate::support::Db::postgres().await;
                    crate::$module::$name(&db).await;
                }
            )*
        }
    };
}

contract!(
    mirror::mirrored_records_keep_source_offsets_gaps_and_are_written_once,
    mirror::a_mirror_starting_past_the_source_log_start_moves_the_local_one,
    mirror::partitions_of_one_batch_are_written_together_or_not_at_all,
    mirror::local_producers_wait_for_the_fence_and_the_mirror_stops_at_it,
    mirror::errors_are_shown_per_topic_and_cleared,
    mirror::two_mirrors_of_one_partition_write_each_offset_once,
    mirror::the_refusal_follows_the_topic_through_deletion_and_the_fence,
    mirror::one_broker_at_a_time_holds_the_mirror_duty,
    kafka_txn::markers_end_transactions_and_move_the_stable_offset,
    kafka_txn::a_new_producer_aborts_and_fences_the_old_one,
    kafka_txn::refused_requests_change_nothing,
    kafka_txn::offsets_become_visible_on_commit_only,
    kafka_txn::a_transaction_past_its_timeout_is_aborted_and_fenced,
    txn_native::pops_see_committed_records_only,
    txn_native::a_group_shared_with_kafka_continues_past_aborted_records,
    txn_upkeep::compaction_removes_aborted_records_and_keeps_markers_apart,
    txn_upkeep::retention_forgets_aborted_ranges_below_the_log_start,
    txn_upkeep::deleting_a_queue_forgets_its_transactions,
    sealing::encrypted_payloads_are_sealed_at_rest_and_read_in_clear,
    sealing::compaction_keeps_sealed_segments_sealed,
    sealing::a_broker_without_the_key_refuses_encrypted_queues,
    sealing::a_rotated_key_reads_old_payloads_and_reseals_them,
    sealing::a_refused_pop_fails_alone_among_concurrent_consumers,
    stats::topic_stats_sum_partitions_and_estimate_sizes,
    stats::group_lag_counts_kafka_and_native_groups,
    stats::pools_and_database_size_are_reported,
    users::credentials_are_shared_replaced_and_deleted,
    users::malformed_users_and_credentials_are_refused,
    users::listeners_are_advertised_per_name,
    acls::acls_are_shared_described_and_deleted_by_filter,
    acls::malformed_acls_are_refused_and_change_nothing,
    acls::the_authorizer_sees_changes_of_every_broker,
    acls::everyone_is_allowed_where_no_acl_is_found_if_configured,
    acl_lookups::partition_and_lease_ids_name_their_queues_and_groups,
    acl_lookups::a_pop_by_namespace_considers_only_readable_queues,
    retention::age_deletes_old_segments_and_readers_continue,
    retention::size_keeps_the_newest_bytes,
    retention::completed_retention_waits_for_every_group,
    retention::eviction_needs_no_retention_switch,
    retention::delete_records_moves_the_log_start,
    retention::a_group_below_the_log_start_continues_from_it,
    retention::one_broker_at_a_time_does_the_work,
    retention::the_sidecar_keeps_ids_for_completed_retention,
    retention::compaction_keeps_the_latest_record_per_key,
    retention::compaction_waits_for_the_lag,
    retention::compaction_honours_the_dirty_ratio,
    retention::rules_given_later_are_followed,
    dedup::duplicates_are_found_at_every_window_population,
    dedup::runs_past_the_window_expire_and_their_ids_are_new,
    dedup::a_sealed_id_is_found_by_message_lookup,
    dedup::deleting_a_queue_deletes_its_runs,
    dedup::a_starved_memory_budget_changes_no_answer,
    dedup::top_level_runs_are_not_merged_further,
    dedup::concurrent_pushes_beside_merges_stay_exact,
    offsets::kafka_commits_and_native_acks_move_one_position,
    offsets::groups_are_listed_and_their_offsets_deleted_per_partition,
    offsets::commit_metadata_round_trips_byte_for_byte,
    strings::strings_with_nul_round_trip,
    producers::sequences_dedup_retries_and_refuse_gaps,
    producers::sequences_wrap_at_two_to_the_31,
    producers::producer_ids_are_unique_and_epochs_fence,
    producers::idle_producer_state_expires,
    log::topics_are_created_once_with_numbered_partitions,
    log::appends_and_reads_by_offset_and_bytes,
    log::reads_resume_inside_a_segment,
    log::reads_in_pieces_over_many_partitions_match_whole_reads,
    log::offsets_are_found_by_timestamp,
    log::brokers_register_and_expire,
    log::large_appends_are_split_into_bounded_segments,
    queues::configure_is_a_full_replace,
    queues::partitions_get_kafka_indexes_in_creation_order,
    queues::delete_removes_everything,
    queues::invalid_names_are_refused,
    queues::topic_configs_and_native_options_are_one_set,
    queues::a_queue_deleted_by_another_engine_is_recreated,
    queues::kafka_indexes_resolve_and_follow_a_recreated_topic,
    push::offsets_are_gapless_per_partition,
    push::content_round_trips,
    push::duplicate_in_window_answers_the_original,
    push::repeat_inside_a_request_is_stored_once,
    push::other_partition_or_queue_is_a_new_message,
    push::window_zero_stores_every_push,
    push::duplicate_after_the_window_is_new,
    push::missing_transaction_id_is_the_message_id,
    push::oversized_transaction_id_writes_nothing,
    push::unreadable_original_answers_the_nil_id,
    push::concurrent_pushes_of_one_id_store_it_once,
    push::two_engines_store_one_id_once,
    push::concurrent_offsets_stay_gapless,
    push::a_warm_cache_sees_what_another_engine_stored,
    push::widening_the_window_finds_older_ids,
    push::a_retried_batch_is_all_duplicates,
    consume::pop_and_ack_in_order,
    consume::a_partition_is_leased_to_one_consumer_at_a_time,
    consume::an_expired_lease_is_redelivered_with_the_next_attempt,
    consume::a_partial_ack_keeps_the_lease,
    consume::failed_acks_retry_then_dead_letter,
    consume::retry_does_not_charge_the_budget,
    consume::dlq_status_dead_letters_at_once,
    consume::unresolvable_acks_change_nothing,
    consume::every_group_sees_every_message,
    consume::subscription_modes_choose_where_a_group_starts,
    consume::seek_moves_a_group,
    consume::auto_ack_commits_at_delivery,
    consume::delayed_processing_and_window_buffer_hold_messages,
    consume::lease_extension_never_shortens_or_resurrects,
    consume::two_engines_never_hold_the_same_lease,
    consume::a_pop_over_several_partitions_leaves_the_ones_it_did_not_fill_free,
    consume::pops_follow_queue_changes_here_at_once_and_elsewhere_within_a_second,
    consume::pops_and_acks_in_pieces_of_segments_keep_every_message_in_order,
    consume::depth_counts_from_positions_and_leases,
    consume::summaries_of_every_queue_match_each_depth,
    kv::kv_writes_draw_versions_never_issued_again,
    kv::kv_preconditions_answer_the_current_row,
    kv::kv_required_failure_applies_nothing,
    kv::kv_reads_many_and_by_prefix,
    kv::kv_expired_rows_vanish_at_once_and_are_swept,
    kv::kv_invalid_calls_are_refused,
    kv::kv_concurrent_put_if_absent_applies_once,
    txn::txn_commits_acks_pushes_and_kv_together,
    txn::txn_duplicate_push_rolls_back_acks_and_kv,
    txn::txn_repeated_id_inside_is_stored_once_and_commits,
    txn::txn_ack_on_an_expired_lease_rolls_back_its_pushes,
    txn::txn_lease_less_ack_borrows_the_single_lease,
    txn::txn_kv_precondition_rolls_back_everything,
    txn::txn_invalid_bundles_are_refused,
    txn::txn_twenty_concurrent_once_gates_commit_once,
    txn::txn_twenty_concurrent_same_push_id_commit_once,
    txn::txn_push_wakes_a_waiting_pop,
    kv::kv_sweeps_of_two_engines_keep_live_rows,
);
