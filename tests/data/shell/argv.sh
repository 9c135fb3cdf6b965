#!/bin/sh
# Prints how many arguments it got and each one in brackets, so a test sees
# exactly which argv words an exec tool's program received.
printf 'argc=%s\n' "$#"
for arg in "$@"; do printf '[%s]\n' "$arg"; done
