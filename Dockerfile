# One image for the worker and the emulator (`pcds worker`, `pcds emulator`). Untested here: no
# Docker engine was available where this was written.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --ignore-scripts --no-audit --no-fund && npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
ENV NODE_ENV=production
ENTRYPOINT ["node", "bin/pcds.mjs"]
CMD ["worker"]
