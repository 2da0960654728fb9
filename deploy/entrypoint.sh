#!/bin/sh
# The image's entrypoint: the first argument picks the process; `exec` replaces this shell with node,
# so node is PID 1 and receives `docker stop`'s SIGTERM itself (graceful shutdown).
set -eu
role="${1:-gateway}"
[ "$#" -gt 0 ] && shift
case "$role" in
  gateway) exec node --enable-source-maps --import ./dist/src/tracing/gateway.js dist/src/main.js "$@" ;;
  worker) exec node --enable-source-maps --import ./dist/src/tracing/worker.js dist/workers/main.js "$@" ;;
  cli) exec node --enable-source-maps bin/gateway-cli.js "$@" ;;
  *)
    echo "usage: gateway | worker | cli <command> [options] (got \"$role\")" >&2
    exit 2
    ;;
esac
