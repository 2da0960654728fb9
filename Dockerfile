# syntax=docker/dockerfile:1
# One image for the gateway, the image worker and the admin CLI: the command picks which
#   docker run IMAGE gateway | worker | cli <command> [options]
# Stages: `build` compiles (all dependencies), `deps` installs production dependencies only, `runtime`
# holds those and the build: no TypeScript tooling, no embedded database. scripts/smoke-prod.ts runs
# the runtime stage's steps outside a container in CI. See docs/production.md.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/embedded-mongo/package.json packages/embedded-mongo/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/
COPY src src
COPY workers workers
RUN npm run build

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/embedded-mongo/package.json packages/embedded-mongo/
# --workspaces=false: the one workspace is the embedded database, a development dependency.
RUN npm ci --omit=dev --workspaces=false --no-audit --no-fund && npm cache clean --force

FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY package.json ./
COPY bin bin
COPY --from=build /app/dist dist
COPY --chmod=755 deploy/entrypoint.sh /usr/local/bin/gateway-entrypoint
# The image's own `node` user (uid 1000); the code and node_modules stay root-owned and read-only to it.
USER node
EXPOSE 4000 9464
# Node's fetch: slim images have no curl. The worker serves no /healthz: compose.yaml gives workers
# their own check (the metrics port).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 4000}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# exec form and `exec node` in the script: node is PID 1 and receives SIGTERM (no npm, no shell).
ENTRYPOINT ["gateway-entrypoint"]
CMD ["gateway"]
