# One Cairn worker (used by compose.yaml). Not built in Cairn's CI (no Docker there).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN PYTHON=python3.11 scripts/install && ln -s /app/.venv/bin/cairn /usr/local/bin/cairn
ENV PATH=/app/.venv/bin:$PATH
# the ONNX export of the query encoder (made once, ~2 s) lives in the data volume, not in a fresh container's $HOME
ENV XDG_CACHE_HOME=/data/.cache
EXPOSE 8000
CMD ["cairn", "serve", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
