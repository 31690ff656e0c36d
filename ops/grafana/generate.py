#!/usr/bin/env python3
"""Writes ops/grafana/queen.json, the Grafana dashboard of the broker's
Prometheus families (README: Metrics): python3 ops/grafana/generate.py > ops/grafana/queen.json

Standard library only. Every query sums per broker first (`sum by (instance, …)`)
and then takes the max across brokers for the figures every broker reads from
the shared database (topics, lag), so that several brokers on one PostgreSQL
database are not counted twice, with or without --metrics-per-partition.
"""
import json
panels = []
pid = [0]
y = [0]
def row(title):
    pid[0] += 1
    panels.append({"type": "row", "title": title, "id": pid[0], "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y[0]}, "panels": []})
    y[0] += 1
x = [0]
def panel(title, targets, unit="short", w=8, kind="timeseries", desc=""):
    pid[0] += 1
    if x[0] + w > 24:
        x[0] = 0; y[0] += 8
    p = {"type": kind, "title": title, "id": pid[0], "description": desc,
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "gridPos": {"h": 8, "w": w, "x": x[0], "y": y[0]},
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
         "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                     "tooltip": {"mode": "multi", "sort": "desc"}},
         "targets": [{"refId": chr(65 + i), "expr": e, "legendFormat": l,
                      "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                     for i, (e, l) in enumerate(targets)]}
    panels.append(p)
    x[0] += w
def endrow():
    x[0] = 0; y[0] += 8

I = 'instance=~"$instance"'
def q(expr): return expr.replace("SEL", I)

row("Traffic")
panel("Records in / out per second", [
    (q('sum by (door) (rate(queen_records_in_total{SEL}[$__rate_interval]))'), "in {{door}}"),
    (q('sum by (door) (rate(queen_records_out_total{SEL}[$__rate_interval]))'), "out {{door}}")], "ops")
panel("Bytes in / out per second", [
    (q('sum by (door) (rate(queen_bytes_in_total{SEL}[$__rate_interval]))'), "in {{door}}"),
    (q('sum by (door) (rate(queen_bytes_out_total{SEL}[$__rate_interval]))'), "out {{door}}")], "Bps")
panel("Open connections", [
    (q('sum by (door) (queen_connections_open{SEL})'), "{{door}}"),
    (q('sum(rate(queen_kafka_connections_refused_total{SEL}[$__rate_interval]))'), "Kafka refused/s")])
panel("Produce batch size (records, p50 / p99)", [
    (q('histogram_quantile(0.5, sum by (door, le) (rate(queen_produce_batch_records_bucket{SEL}[$__rate_interval])))'), "p50 {{door}}"),
    (q('histogram_quantile(0.99, sum by (door, le) (rate(queen_produce_batch_records_bucket{SEL}[$__rate_interval])))'), "p99 {{door}}")])
panel("Produce batch size (bytes, p50 / p99)", [
    (q('histogram_quantile(0.5, sum by (door, le) (rate(queen_produce_batch_bytes_bucket{SEL}[$__rate_interval])))'), "p50 {{door}}"),
    (q('histogram_quantile(0.99, sum by (door, le) (rate(queen_produce_batch_bytes_bucket{SEL}[$__rate_interval])))'), "p99 {{door}}")], "bytes")
panel("Long polls (p50 / p99)", [
    (q('histogram_quantile(0.5, sum by (door, le) (rate(queen_long_poll_duration_seconds_bucket{SEL}[$__rate_interval])))'), "p50 {{door}}"),
    (q('histogram_quantile(0.99, sum by (door, le) (rate(queen_long_poll_duration_seconds_bucket{SEL}[$__rate_interval])))'), "p99 {{door}}")], "s")
endrow()

row("Kafka")
panel("Requests per second by API", [
    (q('sum by (api) (rate(queen_kafka_requests_total{SEL}[$__rate_interval]))'), "{{api}}")], "reqps")
panel("Request latency p99 by API", [
    (q('histogram_quantile(0.99, sum by (api, le) (rate(queen_kafka_request_duration_seconds_bucket{SEL}[$__rate_interval])))'), "{{api}}")], "s")
panel("Errors per second", [
    (q('sum by (api) (rate(queen_kafka_request_errors_total{SEL}[$__rate_interval]))'), "failed {{api}}"),
    (q('sum by (api, error) (rate(queen_kafka_partition_errors_total{SEL}[$__rate_interval]))'), "{{api}} {{error}}")], "reqps")
panel("Requests by API and version", [
    (q('sum by (api, version) (rate(queen_kafka_requests_total{SEL}[$__rate_interval]))'), "{{api}} v{{version}}")], "reqps")
panel("Group members", [
    (q('sum by (group) (queen_kafka_group_members{SEL})'), "{{group}}")])
panel("Rebalances per minute", [
    (q('sum by (group) (increase(queen_kafka_group_rebalances_total{SEL}[1m]))'), "{{group}}")])
endrow()

row("HTTP")
panel("Requests per second by route and status", [
    (q('sum by (method, route, status) (rate(queen_http_requests_total{SEL}[$__rate_interval]))'), "{{method}} {{route}} {{status}}")], "reqps", 12)
panel("Latency p99 by route", [
    (q('histogram_quantile(0.99, sum by (route, le) (rate(queen_http_request_duration_seconds_bucket{SEL}[$__rate_interval])))'), "{{route}}")], "s", 12)
endrow()

row("Topics and consumer groups")
panel("Append rate by topic (records/s)", [
    ('max by (topic) (sum by (instance, topic) (rate(queen_topic_high_watermark{instance=~"$instance", topic=~"$topic"}[$__rate_interval])))', "{{topic}}")], "ops")
panel("Consumer lag by group and topic (records)", [
    ('max by (group, topic) (sum by (instance, group, topic) (queen_consumer_group_lag{instance=~"$instance", topic=~"$topic"}))', "{{group}} / {{topic}}")])
panel("Stored size by topic (estimated)", [
    ('max by (topic) (sum by (instance, topic) (queen_topic_stored_bytes{instance=~"$instance", topic=~"$topic"}))', "{{topic}}")], "bytes")
panel("Records stored by topic", [
    ('max by (topic) (sum by (instance, topic) (queen_topic_high_watermark{instance=~"$instance", topic=~"$topic"} - queen_topic_log_start_offset{instance=~"$instance", topic=~"$topic"}))', "{{topic}}")])
panel("Partitions by topic", [
    ('max by (topic) (queen_topic_partitions{instance=~"$instance", topic=~"$topic"})', "{{topic}}")])
panel("Retention and compaction per second", [
    (q('sum(rate(queen_retention_records_deleted_total{SEL}[$__rate_interval]))'), "records dropped by retention"),
    (q('sum(rate(queen_retention_segments_deleted_total{SEL}[$__rate_interval]))'), "segments deleted"),
    (q('sum(rate(queen_compaction_records_removed_total{SEL}[$__rate_interval]))'), "records compacted away")], "ops")
endrow()

row("Storage")
panel("Group commit latency (p50 / p99)", [
    (q('histogram_quantile(0.5, sum by (le) (rate(queen_storage_commit_duration_seconds_bucket{SEL}[$__rate_interval])))'), "p50"),
    (q('histogram_quantile(0.99, sum by (le) (rate(queen_storage_commit_duration_seconds_bucket{SEL}[$__rate_interval])))'), "p99")], "s")
panel("Group commit size (mean)", [
    (q('sum(rate(queen_storage_group_commit_records_sum{SEL}[$__rate_interval])) / sum(rate(queen_storage_group_commit_records_count{SEL}[$__rate_interval]))'), "records"),
    (q('sum(rate(queen_storage_group_commit_appends_sum{SEL}[$__rate_interval])) / sum(rate(queen_storage_group_commit_appends_count{SEL}[$__rate_interval]))'), "appends")])
panel("Commits per second", [
    (q('sum(rate(queen_storage_commit_duration_seconds_count{SEL}[$__rate_interval]))'), "group commits")], "ops")
panel("Pool connections", [
    (q('sum by (pool, state) (queen_db_pool_connections{SEL})'), "{{pool}} {{state}}"),
    (q('sum by (pool) (queen_db_pool_max_connections{SEL})'), "{{pool}} max")])
panel("Connection wait p99", [
    (q('histogram_quantile(0.99, sum by (pool, le) (rate(queen_db_pool_acquire_duration_seconds_bucket{SEL}[$__rate_interval])))'), "{{pool}}")], "s")
panel("Database size", [
    (q('max(queen_database_size_bytes{SEL})'), "database")], "bytes")
endrow()

row("Process")
panel("CPU", [(q('rate(process_cpu_seconds_total{SEL}[$__rate_interval])'), "{{instance}}")], "percentunit")
panel("Resident memory", [(q('process_resident_memory_bytes{SEL}'), "{{instance}}")], "bytes")
panel("Open file descriptors", [(q('process_open_fds{SEL}'), "{{instance}}"),
    (q('rate(queen_metrics_scrape_errors_total{SEL}[$__rate_interval])'), "scrape errors/s {{instance}}")])
endrow()

dashboard = {
    "title": "Queen broker",
    "uid": "queen-broker",
    "description": "The queen broker's Prometheus families (README: Metrics)",
    "tags": ["queen", "kafka", "queue"],
    "timezone": "browser",
    "schemaVersion": 39,
    "version": 1,
    "editable": True,
    "refresh": "10s",
    "time": {"from": "now-15m", "to": "now"},
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
         "current": {}, "hide": 0},
        {"name": "instance", "type": "query", "label": "Broker",
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": {"query": "label_values(queen_build_info, instance)", "refId": "instance"},
         "definition": "label_values(queen_build_info, instance)",
         "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "hide": 0},
        {"name": "topic", "type": "query", "label": "Topic",
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": {"query": "label_values(queen_topic_high_watermark, topic)", "refId": "topic"},
         "definition": "label_values(queen_topic_high_watermark, topic)",
         "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "hide": 0},
    ]},
    "annotations": {"list": []},
    "panels": panels,
}
print(json.dumps(dashboard, indent=2))
