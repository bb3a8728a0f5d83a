# Meterflow for the cluster set-up (docker-compose.yml): ClickHouse server + Redis via
# CLICKHOUSE_URL / REDIS_URL. Without them the same image runs the embedded default
# (chDB in DATA_DIR, in-process coordination).
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data

# Dependencies first, so a source change does not reinstall them. Dev dependencies are
# needed to build (TypeScript, AssemblyScript); `prepare` would build before the sources
# are copied, hence --ignore-scripts (no dependency needs its install script: chDB ships
# its engine as an npm package, the others fall back to prebuilt or plain JS).
# `npm install`, not `npm ci`: the lock file lacks the other platforms' optional
# @chdb/lib-* entries, which `npm ci` refuses; the locked versions are kept either way.
COPY package.json package-lock.json ./
RUN npm install --include=dev --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY asm ./asm
COPY src ./src
COPY bin ./bin
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
    && mkdir -p /data && chown node:node /data

USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# What `npm start` runs, started directly: npm passes SIGTERM to its `sh -c` but not on to
# node, so under `npm start` a `docker stop` would orphan the service instead of draining
# it. Run directly, node gets the SIGTERM, drains, flushes and exits 0.
CMD ["node", "--max-semi-space-size=64", "dist/main.js"]
