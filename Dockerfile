# One image for the worker and the emulator (`pcds worker`, `pcds emulator`). Untested here: no
# Docker engine was available where this was written.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json* ./
RUN npm ci --omit=dev || npm install --omit=dev
COPY bin ./bin
COPY src ./src
COPY tsconfig.json ./
ENV NODE_ENV=production
ENTRYPOINT ["node", "bin/pcds.mjs"]
CMD ["worker"]
