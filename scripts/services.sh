#!/usr/bin/env bash
# Local Kafka for development and CI: a real single-node KRaft broker, run from
# Apache Kafka jars that Maven fetches from Maven Central (no Docker, no tarball),
# listening on 127.0.0.1 only. Runtime files live in $SERVICES_DIR (default .services/).
#
#   bash scripts/services.sh [start|stop|status|env]     (npm run services -- stop)
#   eval "$(bash scripts/services.sh)"                   # start + export KAFKA_BROKERS
#
# More brokers (fault tests): KAFKA_PORT, KAFKA_CONTROLLER_PORT and KAFKA_RUN_DIR (its data, config,
# pid and logs; default $SERVICES_DIR/kafka) name one; the jars are shared. Each is a cluster of its own.
#
# A real multi-node cluster (replication, a node's loss): KAFKA_CLUSTER_SIZE=3 starts that many nodes, each
# broker and controller, all voters of one quorum with one cluster id, on 127.0.0.1 ports from
# KAFKA_CLUSTER_BASE_PORT (default 9192: node N's broker on base+2(N-1), its controller on the next port),
# each in $SERVICES_DIR/kafka-cluster/node-N; internal topics with 3 replicas and min ISR 2.
#
#   KAFKA_CLUSTER_SIZE=3 bash scripts/services.sh [start|stop|status|env]
#   KAFKA_CLUSTER_SIZE=3 bash scripts/services.sh stop-node 2    # one node down (fault tests)
#   KAFKA_CLUSTER_SIZE=3 bash scripts/services.sh start-node 2   # and back
#
# Only `export` lines go to stdout so the output can be eval'ed; messages go to stderr.
# Topics are not created here: the application ensures its own topics at start.
set -euo pipefail

# Newest 4.x release that resolves from Maven Central and passes the kafkajs 2.2.4
# check (see docs/decisions.md).
KAFKA_VERSION="${KAFKA_VERSION:-4.3.1}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" # node resolves kafkajs from ./node_modules
SERVICES_DIR="${SERVICES_DIR:-$ROOT/.services}"
LIBS="$SERVICES_DIR/kafka/libs-$KAFKA_VERSION" # per version, so changing KAFKA_VERSION refetches
KDIR="${KAFKA_RUN_DIR:-$SERVICES_DIR/kafka}"
DATA="$KDIR/data"
CONF="$KDIR/server.properties"
PIDFILE="$KDIR/kafka.pid"

say() { echo "services: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }
print_env() { echo "export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"; }

# Cluster mode (KAFKA_CLUSTER_SIZE): one directory per node under $CDIR.
CLUSTER_SIZE="${KAFKA_CLUSTER_SIZE:-}"
CLUSTER_BASE_PORT="${KAFKA_CLUSTER_BASE_PORT:-9192}"
CDIR="$SERVICES_DIR/kafka-cluster"
if [[ -n $CLUSTER_SIZE ]]; then
  [[ $CLUSTER_SIZE =~ ^[1-9]$ ]] || die "KAFKA_CLUSTER_SIZE must be a number of nodes from 1 to 9, got '$CLUSTER_SIZE'"
  [[ $CLUSTER_BASE_PORT =~ ^[0-9]+$ ]] && ((CLUSTER_BASE_PORT >= 1024 && CLUSTER_BASE_PORT + 2 * CLUSTER_SIZE <= 65535)) ||
    die "KAFKA_CLUSTER_BASE_PORT must be a port from 1024 leaving room for $((2 * CLUSTER_SIZE)) ports, got '$CLUSTER_BASE_PORT'"
fi
node_port() { echo $((CLUSTER_BASE_PORT + 2 * ($1 - 1))); }

# Loopback connect succeeds only if something listens on the port.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Prints the pid of *our* broker if it is alive (a stale pid file may name a reused pid).
running_pid() {
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
  [[ -n $pid ]] && ps -ww -o args= -p "$pid" 2>/dev/null | grep -qF "kafka.Kafka $CONF" && echo "$pid"
}

# Same JVM setup for the broker and the storage tool, so both log to kafka.log.
set_java_args() {
  JAVA_ARGS=(-Djava.awt.headless=true -Dkafka.logs.dir="$KDIR"
    -Dlog4j2.configurationFile="$ROOT/scripts/kafka/log4j2.properties" -cp "$LIBS/*")
}
set_java_args

# Points the single-broker functions (running_pid, wait_ready, stop, ...) at node N of the cluster.
use_node() {
  KDIR="$CDIR/node-$1"
  DATA="$KDIR/data"
  CONF="$KDIR/server.properties"
  PIDFILE="$KDIR/kafka.pid"
  KAFKA_PORT="$(node_port "$1")"
  KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
  set_java_args
}

# A real request, not just an open port: the socket opens before the broker can serve.
broker_ready() {
  node -e '
    const { Kafka, logLevel } = require("kafkajs");
    const admin = new Kafka({ brokers: [process.argv[1]], logLevel: logLevel.NOTHING,
      connectionTimeout: 1000, requestTimeout: 3000, retry: { retries: 0 } }).admin();
    admin.connect().then(() => admin.listTopics())
      .then(() => process.exit(0), () => process.exit(1));' "127.0.0.1:$KAFKA_PORT"
}

fail_start() {
  say "ERROR: $1. Last lines of $KDIR/kafka.log:"
  tail -n 40 "$KDIR/kafka.log" >&2 2>/dev/null || true
  if [[ -s $KDIR/kafka.out ]]; then say "JVM output ($KDIR/kafka.out):"; tail -n 20 "$KDIR/kafka.out" >&2; fi
  exit 1
}

wait_ready() {
  local pid=$1 deadline=$((SECONDS + START_TIMEOUT))
  until broker_ready; do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; fail_start "the broker exited during startup"; }
    ((SECONDS < deadline)) || fail_start "the broker (pid $pid, still running) did not answer on 127.0.0.1:$KAFKA_PORT within ${START_TIMEOUT}s"
    sleep 1
  done
}

fetch_jars() {
  [[ -f $LIBS/.complete ]] && return
  say "fetching Kafka $KAFKA_VERSION jars from Maven Central (first run only)..."
  rm -rf "$LIBS" "$LIBS.tmp" && mkdir -p "$KDIR" "${LIBS%/*}"
  mvn -B -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies -Dkafka.version="$KAFKA_VERSION" \
    -DincludeScope=runtime -DoutputDirectory="$LIBS.tmp" >"$KDIR/mvn.log" 2>&1 || {
    grep -E 'ERROR|WARN' "$KDIR/mvn.log" | head -n 20 >&2
    die "mvn could not fetch the Kafka $KAFKA_VERSION jars (full output: $KDIR/mvn.log)"
  }
  # Rename last, so an interrupted download is never mistaken for a complete one.
  touch "$LIBS.tmp/.complete" && mv "$LIBS.tmp" "$LIBS"
}

start() {
  local pid
  for tool in java mvn node; do
    command -v "$tool" >/dev/null || die "$tool not found (needs Java 17+, Maven 3, Node 20+)"
  done
  node -e 'require.resolve("kafkajs")' 2>/dev/null || die "kafkajs not found in node_modules: run npm ci first"

  if pid="$(running_pid)"; then
    grep -qF "PLAINTEXT://127.0.0.1:$KAFKA_PORT," "$CONF" ||
      die "our broker (pid $pid) runs with other ports ($CONF); run '$0 stop' first"
    wait_ready "$pid" # it may still be booting from a concurrent/earlier start
    say "kafka already running (pid $pid) on 127.0.0.1:$KAFKA_PORT"
    print_env
    return
  fi
  # A broker another checkout (or an earlier CI run) left on this port is as good as ours.
  if port_open "$KAFKA_PORT" && broker_ready; then
    say "a Kafka broker not started from this checkout already answers on 127.0.0.1:$KAFKA_PORT; using it"
    print_env
    return
  fi
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    ! port_open "$port" || die "127.0.0.1:$port is already in use by another process, not by our broker" \
      "(pid file $PIDFILE). Stop that process or choose other ports with KAFKA_PORT / KAFKA_CONTROLLER_PORT."
  done

  fetch_jars
  mkdir -p "$DATA"
  sed -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@KAFKA_CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
    -e "s|@DATA_DIR@|$DATA|g" "$ROOT/scripts/kafka/server.properties" >"$CONF"

  # Format once; later starts reuse the data (formatting again would fail anyway).
  if [[ ! -f $DATA/meta.properties ]]; then
    say "formatting KRaft storage in $DATA"
    java "${JAVA_ARGS[@]}" kafka.tools.StorageTool format -c "$CONF" \
      -t "$(java "${JAVA_ARGS[@]}" kafka.tools.StorageTool random-uuid)" >&2
  fi

  say "starting Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT (log: $KDIR/kafka.log)"
  # Own session (setsid), so the broker outlives this script and its terminal / CI step.
  local detach=nohup
  command -v setsid >/dev/null && detach=setsid
  "$detach" java -Xmx512m "${JAVA_ARGS[@]}" kafka.Kafka "$CONF" >"$KDIR/kafka.out" 2>&1 </dev/null 9>&- &
  pid=$!
  echo "$pid" >"$PIDFILE"
  wait_ready "$pid"
  say "kafka ready (pid $pid; this run took ${SECONDS}s)"
  print_env
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "$PIDFILE"
    say "kafka is not running"
    return
  fi
  say "stopping kafka (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 60); do # a clean shutdown flushes logs; it usually takes a few seconds
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; say "stopped"; return; }
    sleep 0.5
  done
  say "kafka did not stop within 30s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

status() {
  local pid
  if pid="$(running_pid)" && port_open "$KAFKA_PORT"; then
    echo "kafka: running (pid $pid, 127.0.0.1:$KAFKA_PORT, data $DATA)"
  elif [[ -n ${pid:-} ]]; then
    echo "kafka: starting or unhealthy (pid $pid, port $KAFKA_PORT not answering)"
    return 1
  else
    echo "kafka: not running"
    return 1
  fi
}

# ---- Cluster mode ----

cluster_env() {
  local n ports=()
  for ((n = 1; n <= CLUSTER_SIZE; n++)); do ports+=("127.0.0.1:$(node_port "$n")"); done
  echo "export KAFKA_BROKERS=$(IFS=,; echo "${ports[*]}")"
}

# The jars under the single broker's lock: its start may be fetching them into the same directory.
cluster_jars() {
  [[ -f $LIBS/.complete ]] && return
  local kdir=$SERVICES_DIR/kafka
  mkdir -p "$kdir"
  exec 8>"$kdir/lock"
  if command -v flock >/dev/null; then flock -w 600 8 || die "timed out waiting for another services.sh holding $kdir/lock"; fi
  (KDIR=$kdir; fetch_jars)
  exec 8>&-
}

# Renders node N's configuration and formats its storage with the cluster's id (once); does not start it.
prepare_node() {
  local n=$1 i voters=() replication=$((CLUSTER_SIZE < 3 ? CLUSTER_SIZE : 3))
  local min_isr=$((replication < 3 ? 1 : 2))
  for ((i = 1; i <= CLUSTER_SIZE; i++)); do voters+=("$i@127.0.0.1:$(($(node_port "$i") + 1))"); done
  use_node "$n"
  mkdir -p "$DATA"
  sed -e "s|@NODE_ID@|$n|g" -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@KAFKA_CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
    -e "s|@VOTERS@|$(IFS=,; echo "${voters[*]}")|g" -e "s|@DATA_DIR@|$DATA|g" \
    -e "s|@REPLICATION@|$replication|g" -e "s|@MIN_ISR@|$min_isr|g" "$ROOT/scripts/kafka/cluster.properties" >"$CONF"
  if [[ ! -f $DATA/meta.properties ]]; then
    say "formatting node $n's KRaft storage in $DATA (cluster $(cat "$CDIR/cluster.id"))"
    java "${JAVA_ARGS[@]}" kafka.tools.StorageTool format -c "$CONF" -t "$(cat "$CDIR/cluster.id")" >"$KDIR/format.out" 2>&1 ||
      { cat "$KDIR/format.out" >&2; die "could not format node $n's storage"; }
  fi
}

# Launches node N in the background unless it runs; answers its pid on stdout. Does not wait for it.
launch_node() {
  local n=$1 pid
  use_node "$n"
  if pid="$(running_pid)"; then
    grep -qF "PLAINTEXT://127.0.0.1:$KAFKA_PORT," "$CONF" ||
      die "node $n (pid $pid) runs with other ports ($CONF); run 'KAFKA_CLUSTER_SIZE=$CLUSTER_SIZE $0 stop' first"
    echo "$pid"
    return
  fi
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    ! port_open "$port" || die "127.0.0.1:$port (node $n) is already in use by another process; choose other ports with KAFKA_CLUSTER_BASE_PORT"
  done
  prepare_node "$n"
  say "starting node $n of $CLUSTER_SIZE on 127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT; log: $KDIR/kafka.log)"
  local detach=nohup
  command -v setsid >/dev/null && detach=setsid
  "$detach" java -Xmx512m "${JAVA_ARGS[@]}" kafka.Kafka "$CONF" >"$KDIR/kafka.out" 2>&1 </dev/null 8>&- 9>&- &
  pid=$!
  echo "$pid" >"$PIDFILE"
  echo "$pid"
}

cluster_checks() {
  for tool in java mvn node; do
    command -v "$tool" >/dev/null || die "$tool not found (needs Java 17+, Maven 3, Node 20+)"
  done
  node -e 'require.resolve("kafkajs")' 2>/dev/null || die "kafkajs not found in node_modules: run npm ci first"
  cluster_jars
  mkdir -p "$CDIR"
  # One id for every node, kept for later starts (a node formatted with another id would not join).
  use_node 1
  [[ -s $CDIR/cluster.id ]] || java "${JAVA_ARGS[@]}" kafka.tools.StorageTool random-uuid >"$CDIR/cluster.id"
}

# All nodes are launched before any is waited for: a node answers only once a majority of the quorum is up.
cluster_start() {
  local n pids=()
  cluster_checks
  for ((n = 1; n <= CLUSTER_SIZE; n++)); do pids[n]="$(launch_node "$n")"; done
  for ((n = 1; n <= CLUSTER_SIZE; n++)); do
    use_node "$n"
    wait_ready "${pids[n]}"
  done
  say "kafka cluster of $CLUSTER_SIZE ready (this run took ${SECONDS}s)"
  cluster_env
}

node_arg() {
  [[ ${1:-} =~ ^[1-9]$ ]] && (($1 <= CLUSTER_SIZE)) || die "name a node from 1 to $CLUSTER_SIZE, got '${1:-}'"
}

cluster_start_node() {
  local pid
  node_arg "${1:-}"
  cluster_checks
  pid="$(launch_node "$1")"
  use_node "$1"
  wait_ready "$pid"
  say "node $1 ready (pid $pid, 127.0.0.1:$KAFKA_PORT)"
}

# Every node at once: stopped one by one, the last ones lose the controller quorum and their clean shutdown,
# which waits for it, ends only at the SIGKILL 30 s later.
cluster_stop() {
  local n pid pids=() files=()
  for ((n = 1; n <= CLUSTER_SIZE; n++)); do
    use_node "$n"
    if pid="$(running_pid)"; then
      pids+=("$pid") files+=("$PIDFILE")
      say "stopping node $n (pid $pid)"
    else
      rm -f "$PIDFILE"
    fi
  done
  ((${#pids[@]} > 0)) || { say "kafka cluster is not running"; return; }
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local alive
  for _ in $(seq 60); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && { say "pid $pid did not stop within 30s; sending SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  done
  rm -f "${files[@]}"
  say "stopped"
}

cluster_status() {
  local n pid down=0
  for ((n = 1; n <= CLUSTER_SIZE; n++)); do
    use_node "$n"
    if pid="$(running_pid)" && port_open "$KAFKA_PORT"; then
      echo "kafka node $n: running (pid $pid, 127.0.0.1:$KAFKA_PORT, data $DATA)"
    elif [[ -n ${pid:-} ]]; then
      echo "kafka node $n: starting or unhealthy (pid $pid, port $KAFKA_PORT not answering)"
      down=1
    else
      echo "kafka node $n: not running"
      down=1
    fi
    pid=
  done
  return $down
}

if [[ -n $CLUSTER_SIZE ]]; then
  # One lock for the whole cluster: start, stop and a node's start or stop never overlap.
  if [[ ${1:-start} =~ ^(start|stop|start-node|stop-node)$ ]] && command -v flock >/dev/null; then
    mkdir -p "$CDIR"
    exec 9>"$CDIR/lock"
    flock -w 300 9 || die "timed out waiting for another services.sh holding $CDIR/lock"
  fi
  case "${1:-start}" in
    start) cluster_start ;;
    stop) cluster_stop ;;
    status) cluster_status ;;
    env) cluster_env ;;
    start-node) cluster_start_node "${2:-}" ;;
    stop-node) node_arg "${2:-}" && use_node "$2" && stop ;;
    *) die "usage: KAFKA_CLUSTER_SIZE=N $0 [start|stop|status|env|start-node N|stop-node N]" ;;
  esac
  exit
fi

# Serialize start/stop/jars, so two concurrent callers cannot launch two brokers or fetch into one directory.
if [[ ${1:-start} =~ ^(start|stop|jars)$ ]] && command -v flock >/dev/null; then
  mkdir -p "$KDIR"
  exec 9>"$KDIR/lock"
  flock -w 180 9 || die "timed out waiting for another services.sh holding $KDIR/lock"
fi

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  # The jars alone, fetched if missing, for tests that start brokers of their own (a reused broker fetches none).
  jars)
    for tool in java mvn; do command -v "$tool" >/dev/null || die "$tool not found (needs Java 17+, Maven 3)"; done
    fetch_jars ;;
  *) die "usage: $0 [start|stop|status|env|jars]" ;;
esac
