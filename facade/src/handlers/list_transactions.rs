//! ListTransactions: the transactional ids the principal may describe,
//! filtered by state, producer id, (v1+) how long they have been running
//! and (v2+, KIP-1152) a regular expression the whole id must match.

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::transactions::TxnState;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::storage_code;
use crate::groups::consumer::Subscription;

/// Every state ListTransactions may filter on.
const STATES: [TxnState; 4] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
];

/// Lists the transactions that pass every filter.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: ListTransactionsRequest,
    access: &Access,
) -> ListTransactionsResponse {
    // v2: an empty or null pattern lists every id.
    let pattern = match request.transactional_id_pattern.as_deref() {
        Some(p) if version >= 2 && !p.is_empty() => match Subscription::new(p) {
            Ok(pattern) => Some(pattern),
            Err(_) => {
                return ListTransactionsResponse::default()
                    .with_error_code(ResponseError::InvalidRegularExpression.code())
            }
        },
        _ => None,
    };
    let rows = match broker.engine.kafka_transactions().await {
        Ok(rows) => rows,
        Err(e) => return ListTransactionsResponse::default().with_error_code(storage_code(&e)),
    };
    // Kafka's other states (PrepareCommit, Dead, ...) are valid filters
    // that never match here; anything else is reported unknown.
    const KNOWN_ELSEWHERE: [&str; 4] =
        ["PrepareCommit", "PrepareAbort", "PrepareEpochFence", "Dead"];
    let unknown: Vec<StrBytes> = request
        .state_filters
        .iter()
        .filter(|f| {
            !STATES.iter().any(|s| s.as_str() == f.as_str())
                && !KNOWN_ELSEWHERE.contains(&f.as_str())
        })
        .cloned()
        .collect();
    let now = broker.engine.clock().now_ms();
    let states = rows
        .into_iter()
        .filter(|(tid, _)| {
            access.allows(AclOperation::Describe, ResourceType::TransactionalId, tid)
        })
        .filter(|(tid, _)| pattern.as_ref().is_none_or(|p| p.matches(tid)))
        .filter(|(_, row)| {
            request.state_filters.is_empty()
                || request
                    .state_filters
                    .iter()
                    .any(|f| f.as_str() == row.state.as_str())
        })
        .filter(|(_, row)| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .contains(&ProducerId(row.producer_id))
        })
        .filter(|(_, row)| {
            // v1+: only transactions running longer than the filter (ms).
            version < 1
                || request.duration_filter < 0
                || row
                    .started_at
                    .is_some_and(|start| now.saturating_sub(start) > request.duration_filter)
        })
        .map(|(tid, row)| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(tid)))
                .with_producer_id(ProducerId(row.producer_id))
                .with_transaction_state(StrBytes::from_static_str(row.state.as_str()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(states)
}
