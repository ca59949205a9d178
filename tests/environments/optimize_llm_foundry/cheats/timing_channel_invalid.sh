#!/usr/bin/env bash
# Channel probe: sleep for a held-out byte's worth of tenths of a second (modulo 32), then
# fail. An invalid run's time costs the script nothing, so its message must show no time.
cd "$(dirname "$0")"
byte=$(head -n 1 train_data.jsonl | tail -c 10 | head -c 1 | od -An -tu1 | tr -d ' ')
sleep "$(( byte % 32 / 10 )).$(( byte % 32 % 10 ))"
exit 1
