# Build: docker build -t persona-bot .
# Run:   docker run --rm -e DISCORD_TOKEN -e PROVIDER_API_KEYS -v persona-data:/app/data persona-bot
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
# `docker stop` sends SIGTERM, which the bot handles as it does Ctrl-C: it shuts down and flushes
# its pending database writes before it exits.
STOPSIGNAL SIGTERM
ENTRYPOINT ["persona-bot"]
# The bot itself; `docker run ... persona-bot check-config` only checks the configuration.
CMD ["run"]
