#!/usr/bin/env bash
# Metrics, for real: two 4-rank jobs run on the simulator under the shim, one
# hung (rank 1 calls Broadcast where the others call AllReduce #3) and one
# healthy that keeps running; `ncclwatch status --watch --metrics` writes
# each job's metrics into node_exporter's textfile folder; Debian's
# prometheus-node-exporter serves them and Debian's prometheus scrapes it
# every second, both on the loopback. Through Prometheus' HTTP query API:
# stuck is 1 for each of the hung job's ranks and 0 for each of the healthy
# one's, seen while both run; the repo's alert rule
# (scripts/cluster/prometheus/ncclwatch-alerts.yml), loaded into that Prometheus, is
# pending for the hung job alone; promtool checks the rule, its unit test
# (tests/cluster/ncclwatch-alerts.test.yml) and the metrics' format.
source "$(dirname "$0")/lib.sh"
cluster_args "$@"
cluster_isolate "$@"
need prometheus prometheus
need promtool prometheus
need prometheus-node-exporter prometheus-node-exporter
need curl curl
need jq jq

rules=$SRC/scripts/cluster/prometheus/ncclwatch-alerts.yml
out=$(promtool check rules "$rules" 2>&1) || fail "promtool check rules: $out"
expect_in "$out" "SUCCESS: 1 rules found" "promtool check rules"
out=$(promtool test rules "$SRC/tests/cluster/ncclwatch-alerts.test.yml" 2>&1) || fail "promtool test rules: $out"
expect_in "$out" "SUCCESS" "promtool test rules (fires after 5 minutes, per job and communicator)"

export LD_LIBRARY_PATH=$SIM
textfile=$TMP/textfile traces=$TMP/traces
mkdir -p "$textfile" "$traces"

# Background processes of the test, ended (by pid) when it ends.
pids=()
stop_pids() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  echo "prometheus: node_exporter, prometheus, the status writers and the jobs stopped"
}
cluster_on_exit stop_pids
show_logs() {
  if [[ ${CLUSTER_EXIT:-0} -ne 0 ]]; then
    for log in "$TMP"/*.log; do
      echo "--- $log (last lines)" >&2
      tail -n 20 "$log" >&2 || true
    done
  fi
}
cluster_on_exit show_logs

prometheus-node-exporter --web.listen-address=127.0.0.1:9100 --collector.disable-defaults \
  --collector.textfile --collector.textfile.directory="$textfile" >"$TMP/node_exporter.log" 2>&1 &
pids+=($!)
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: node
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:9100']
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address=127.0.0.1:9090 >"$TMP/prometheus.log" 2>&1 &
pids+=($!)
wait_for 60 "Prometheus ready" curl -fs http://127.0.0.1:9090/-/ready
wait_for 30 "node_exporter up" curl -fs http://127.0.0.1:9100/metrics

# The two jobs, and a status writer for each once its ranks have made their
# traces (status wants a trace to read).
run_job() {  # NAME ARGS...
  local name=$1
  shift
  "$BIN/jobrun" -n 4 --timeout 300 --env "LD_PRELOAD=$SHIM" --env "NCCLWATCH_DIR=$traces/$name" \
    -- "$BIN/train_loop" "$@" >"$TMP/$name.log" 2>&1 &
  pids+=($!)
}
watch_job() {  # NAME
  wait_for 60 "job $1's four traces" four_traces "$traces/$1"
  "$NCCLWATCH" status --watch --interval 1 --stuck-after 3 --metrics "$textfile/$1.prom" \
    "$traces/$1" >/dev/null 2>"$TMP/status-$1.log" &
  pids+=($!)
}
four_traces() { [[ $(find "$1" -name '*.trace' | wc -l) -eq 4 ]]; }
run_job hung --steps 8 --bug op:1:3
run_job healthy --steps 3000 --step-ms 100
watch_job hung
watch_job healthy

query() {  # PROMQL: the result's series as "job rank value" lines, sorted
  curl -fsG http://127.0.0.1:9090/api/v1/query --data-urlencode "query=$1" |
    jq -r '.data.result[] | "\(.metric.job) \(.metric.rank) \(.value[1])"' | sort
}
hung_stuck=$'hung 0 1\nhung 1 1\nhung 2 1\nhung 3 1'
healthy_running=$'healthy 0 0\nhealthy 1 0\nhealthy 2 0\nhealthy 3 0'
scraped() {
  [[ $(query 'ncclwatch_stuck{job="hung"}') == "$hung_stuck" &&
    $(query 'ncclwatch_stuck{job="healthy"}') == "$healthy_running" &&
    $(query 'ncclwatch_ended{job="healthy"}') == "$healthy_running" ]]
}
wait_for 120 "Prometheus has both jobs' ranks (hung stuck, healthy running)" scraped
expect_eq "$(query 'ncclwatch_stuck{job="hung"}')" "$hung_stuck" "stuck is 1 for each rank of the hung job"
expect_eq "$(query 'ncclwatch_stuck{job="healthy"}')" "$healthy_running" "stuck is 0 for each rank of the healthy one"
expect_eq "$(query 'ncclwatch_ended{job="healthy"}')" "$healthy_running" "the healthy job was running when scraped"
expect_eq "$(query 'ncclwatch_job_stuck')" $'healthy null 0\nhung null 1' "ncclwatch_job_stuck per job"
# The healthy job progresses: its collectives keep completing.
first=$(query 'sum(ncclwatch_collectives_completed_total{job="healthy"})' | awk '{print $3}')
more() { (($(query 'sum(ncclwatch_collectives_completed_total{job="healthy"})' | awk '{print $3}') > first)); }
wait_for 30 "the healthy job's completed collectives to grow in Prometheus" more
echo "ok: the healthy job's completed collectives grow ($first and more)"
# The hung job: every rank entered #3 and none completed it.
expect_eq "$(query 'ncclwatch_collectives_entered_total{job="hung"}')" $'hung 0 4\nhung 1 4\nhung 2 4\nhung 3 4' \
  "the hung job's ranks each entered collectives #0-#3"
expect_eq "$(query 'ncclwatch_collectives_completed_total{job="hung"}')" $'hung 0 3\nhung 1 3\nhung 2 3\nhung 3 3' \
  "and completed #0-#2"

# The alert rule, loaded: pending (for 5 minutes) for the hung job alone.
alerts() {
  curl -fs http://127.0.0.1:9090/api/v1/alerts |
    jq -r '.data.alerts[] | "\(.labels.alertname) \(.labels.job) \(.state) \(.value)"' | sort
}
pending() { [[ $(alerts) == "NcclCommunicatorStuck hung pending "* ]]; }
wait_for 30 "the alert pending for the hung job" pending
expect_eq "$(alerts | awk '{print $1, $2, $3}')" "NcclCommunicatorStuck hung pending" "the alert rule, pending for the hung job only"
expect_in "$(alerts)" "4e+00" "the alert counts the 4 stuck ranks"

# The metrics file itself, as promtool's linter reads it.
out=$(promtool check metrics <"$textfile/hung.prom" 2>&1) || fail "promtool check metrics: $out"
echo "ok: promtool check metrics finds nothing to say about the metrics"
echo "PASSED: Prometheus (stuck 1 for the hung job's ranks, 0 for the healthy one's; the alert rule)"
