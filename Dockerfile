# The server, compiled and run with plain node (docs/operations.md, "Running in a container").
# docker build -t platform-api . && docker run -p 8080:8080 -v platform-data:/data \
#   -e PLATFORM_BASE_URL=https://platform.example.com platform-api
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
# Sources are not here yet: the build runs below, not through `prepare`; the dependencies' fixes
# (patches/, docs/design.md "The PostgreSQL pool") are applied here rather than by `postinstall`.
RUN npm ci --ignore-scripts --no-audit --no-fund && npx patch-package --error-on-fail
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 PLATFORM_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The data directory holds the master key file and the embedded database: the node user's, mode 0700.
RUN mkdir -m 0700 /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# SIGTERM drains in-flight requests and exits within PLATFORM_SHUTDOWN_TIMEOUT (25 s, under Kubernetes' 30 s).
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=8", "--v8-pool-size=1", "--heap-growing-percent=50", "dist/src/server/main.js"]
