#!/usr/bin/env bash
# Randomized campaign: every built-in adapter under its own profile, several seeds under the `dev`
# settings (a random exploration per seed, replayable with the same seed). Not part of the default
# test command: it needs the brokers and takes minutes. One run at a time (the brokers are shared).
#
# Usage: bash scripts/campaign.sh [SEEDS] [TARGET...]
#   SEEDS   a count N (seeds 1..N) or a list "11 12 13"            (default 10)
#   TARGET  nats | rabbitmq | quorum | redis | mqtt | activemq | beanstalkd   (default: all seven)
#   env: MAX_EXAMPLES (default 15), SETTINGS (default dev), OUT (default mqconform-campaign/<time>),
#        MQCONFORM (default .venv/bin/mqconform), RUN_ARGS (more `mqconform run` arguments, e.g.
#        "--max-findings 1" to stop an area at its first shrunk counterexample)
# Each run writes OUT/<target>-<seed>.log and its run directory OUT/<target>-<seed>/; the summary
# (one line per target: seeds, exit codes, examples, violations, findings that are registered known
# deviations, unknown areas, rules covered) is
# printed and written to OUT/summary.txt. Exit status 0 when every run exited 0.
# A failing run prints its counterexample's replay line (mqconform scenario FILE --adapter X) in its log.
set -uo pipefail
cd "$(dirname "$0")/.."

SEEDS=${1:-10}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(nats rabbitmq quorum redis mqtt activemq beanstalkd)
if [[ "$SEEDS" =~ ^[0-9]+$ ]]; then SEEDS=$(seq 1 "$SEEDS"); fi
MAX_EXAMPLES=${MAX_EXAMPLES:-15}
SETTINGS=${SETTINGS:-dev}
OUT=${OUT:-mqconform-campaign/$(date -u +%Y%m%dT%H%M%S)}
MQCONFORM=${MQCONFORM:-.venv/bin/mqconform}
RUN_ARGS=${RUN_ARGS:-}
mkdir -p "$OUT"

adapter_args() {  # target -> mqconform run adapter arguments
  case $1 in
    quorum) echo "--adapter rabbitmq -o queue_type=quorum" ;;
    nats|rabbitmq|redis|mqtt|activemq|beanstalkd) echo "--adapter $1" ;;
    *) echo "campaign: unknown target $1 (nats rabbitmq quorum redis mqtt activemq beanstalkd)" >&2; return 1 ;;
  esac
}

status=0
: > "$OUT/summary.txt"
for target in "${TARGETS[@]}"; do
  args=$(adapter_args "$target") || exit 2
  codes=() examples=0 violations=0 deviations=0 unknown=0 covered=""
  for seed in $SEEDS; do
    log="$OUT/$target-$seed.log"
    # shellcheck disable=SC2086
    $MQCONFORM run $args --settings "$SETTINGS" --max-examples "$MAX_EXAMPLES" --no-report \
      --seed "$seed" --out "$OUT/$target-$seed" $RUN_ARGS >"$log" 2>&1
    code=$?
    codes+=("$seed:$code")
    [ "$code" -ne 0 ] && status=1
    examples=$((examples + $(awk '/ examples /{for(i=1;i<NF;i++) if($(i+1)=="examples") s+=$i} END{print s+0}' "$log")))
    violations=$((violations + $(grep -c '^      FAIL ' "$log")))
    deviations=$((deviations + $(grep -c '^      DEVIATION ' "$log")))
    unknown=$((unknown + $(grep -c '^      UNKNOWN: ' "$log")))
    this=$(grep -o 'rules covered: [0-9]* of [0-9]*' "$log" | tail -1)
    # the most rules one seed covered (a seed whose area stopped early covers fewer)
    if [ -n "$this" ] && { [ -z "$covered" ] ||
        [ "$(echo "$this" | awk '{print $3}')" -gt "$(echo "$covered" | awk '{print $3}')" ]; }; then
      covered=$this
    fi
    echo "campaign: $target seed $seed exit $code ($(tail -n 2 "$log" | head -n 1))"
  done
  line="$target: seeds $(echo $SEEDS | wc -w), exit codes ${codes[*]}, $examples examples, $violations violation(s), $deviations known deviation(s), $unknown unknown area(s); best seed: ${covered:-no coverage line}"
  echo "$line" | tee -a "$OUT/summary.txt"
done
echo "campaign: summary in $OUT/summary.txt"
exit $status
