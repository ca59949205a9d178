#!/usr/bin/env bash
# Broken: never returns (and leaves a background process behind, holding the output open).
sleep 300 &
sleep 100000
