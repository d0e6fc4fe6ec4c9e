# syntax=docker/dockerfile:1

# One image for both roles. It runs the HTTP ingress by default; the worker is the same image with
# the command `node dist/workers/main.js`. Every setting comes from the environment (see README).
# No HEALTHCHECK here: the orchestrator probes GET /healthz (liveness) and GET /readyz (readiness).

# --- build: compile TypeScript with the dev dependencies, then drop them -------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app

# Only the manifest and the lockfile decide the dependencies, so this layer is reused until they change.
COPY package.json package-lock.json ./
# The typed client is an npm workspace (clients/typescript): npm ci needs its manifest too.
COPY clients/typescript/package.json clients/typescript/
RUN npm ci --no-audit --no-fund

COPY . .
# valibot (under @bull-board/api) names TypeScript as an optional peer, so `npm prune` keeps that
# devDependency (23 MB); nothing loads it at run time, and the image test holds node_modules to
# the lockfile's production packages.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/typescript

# --- runtime: compiled JavaScript, production node_modules, plain node ----------------------------
# Same base as the build stage: npm ci picks prebuilt native add-ons (msgpackr-extract, and argon2
# once it lands) for this platform and glibc, so node_modules only runs on the same base.
FROM node:24-bookworm-slim AS runtime
# Production settings: the processes refuse to start without JWT_SECRET (exit 78, one line), and a
# JWT_PREVIOUS_SECRET needs its JWT_PREVIOUS_SECRET_UNTIL. README, "Configuration".
ENV NODE_ENV=production
WORKDIR /app

# Owned by root, readable but not writable by `node`: the service never writes to its own files.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist

USER node
EXPOSE 8080

# node handles SIGTERM itself (drain, then exit 0). Run the container with an init (`docker run
# --init`, compose `init: true`) so node is not PID 1: as PID 1, a signal arriving before its
# handlers are installed (a worker still waiting for Redis) would be ignored until SIGKILL.
CMD ["node", "dist/ingress/main.js"]
