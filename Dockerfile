# newsdesk image: built with the same scripts the README and CI use (scripts/setup, scripts/build).
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/setup scripts/setup
# Build dependencies only: no browser, test tools or fuzzing toolchain in this stage.
RUN scripts/setup --build-only
COPY . .
RUN BUILD_TYPE=Release scripts/build build -DNEWSDESK_BUILD_TESTS=OFF -DNEWSDESK_BUILD_BENCH=OFF

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libboost-url1.81.0 libgumbo1 liburiparser1 libssl3 libsqlite3-0 libpq5 libbrotli1 zlib1g libutf8proc2 libicu72 libstemmer0d libcld2-0 libxml2 libvips42 libcurl4 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin newsdesk \
 && mkdir -p /app/data && chown newsdesk:newsdesk /app/data
COPY --from=build /src/build/server/newsdesk /usr/local/bin/newsdesk
COPY templates /app/templates
COPY static /app/static
COPY sites /app/sites
WORKDIR /app
USER newsdesk
ENV NEWSDESK_ADDRESS=0.0.0.0 \
    NEWSDESK_PORT=8080 \
    NEWSDESK_TEMPLATES_DIR=/app/templates \
    NEWSDESK_STATIC_DIR=/app/static \
    NEWSDESK_SITE_FILES_DIR=/app/sites \
    NEWSDESK_STORE_PATH=/app/data/newsdesk.db
# The headline store (SQLite): /app itself is root's, so the store lives in the one folder the
# newsdesk user may write. Mount a volume there to keep history across container rebuilds.
VOLUME /app/data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --retries=3 CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["newsdesk"]
