#!/usr/bin/env bash
# Cheat: write output without end (here 600 MB, so that a scorer without a cap still ends),
# to fill the scorer's disk or memory with the script's log.
head -c 600000000 /dev/zero
