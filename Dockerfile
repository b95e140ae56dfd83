# Build: docker build -t persona-bot .
# Run:   docker run --rm -e DISCORD_TOKEN -e PROVIDER_API_KEYS -v persona-data:/app/data persona-bot
# Watch: add -p 127.0.0.1:9100:9100 to scrape http://127.0.0.1:9100/metrics from the host.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin persona-bot

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /app persona
WORKDIR /app
COPY --from=build /src/target/release/persona-bot /usr/local/bin/persona-bot
# The defaults are built into the binary; the folder is the commented reference, the example
# ComfyUI workflow, and where a mounted local.toml goes (-v ./local.toml:/app/config/local.toml:ro).
COPY config ./config
RUN mkdir -p /app/data && chown persona /app/data
USER persona
VOLUME ["/app/data"]
# In the image, /metrics and /healthz are on (metrics.listen is off by default elsewhere), on
# every interface of the container so a published port reaches them; the health check below
# asks this address. Set PERSONA_BOT_METRICS__LISTEN="" to turn them off (and run with
# --no-healthcheck then, as for `worker` containers, which serve neither path).
ENV PERSONA_BOT_METRICS__LISTEN=0.0.0.0:9100
EXPOSE 9100
# Healthy while the gateway is connected and the database answers: `persona-bot health` GETs
# /healthz (3 s timeout), prints one line and exits 0 or 1. Start-up (migrations, the gateway's
# first connection) gets a minute before failures count.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["persona-bot", "health"]
# `docker stop` sends SIGTERM, which the bot handles as it does Ctrl-C: it stops within
# shutdown.grace_secs (8 s, under Docker's 10 s), keeping queued messages and flushing its pending
# database writes, and exits with status 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["persona-bot"]
# The bot itself; `docker run ... persona-bot check-config` only checks the configuration.
CMD ["run"]
