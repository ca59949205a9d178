#!/usr/bin/env bash
# Cheat: never return (and leave a detached process behind, holding the output open).
setsid sleep 300 &
sleep 100000
