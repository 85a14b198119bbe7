# syntax=docker/dockerfile:1
# Bindery: Cocoa Bindings as an HTTP service. See README.md, "Container", for build and run.
#
#   docker build -t bindery .
#   docker run -d --name bindery -p 8080:8080 -v bindery-data:/data --ulimit nofile=65536:65536 bindery
#
# `make container-check` (part of `make test`) verifies without a Docker engine that the runtime stage installs every
# shared library the binary needs, that CMD, HEALTHCHECK and EXPOSE agree on the port and that the files copied exist.

# ---- build: Swift 6.3 on Debian 12 -------------------------------------------------------------------------------
FROM swift:6.3-bookworm AS build

RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends libmicrohttpd-dev libjansson-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when Package.swift changes.
COPY Package.swift ./
RUN swift package resolve

# The manifest names test and benchmark targets too, so their folders must be present for the package to load (they
# are not built); .dockerignore lets only the benchmark targets' folders of Benchmarks/ in.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks ./Benchmarks
RUN swift build -c release --static-swift-stdlib --product bindery \
    && mkdir -p /staging \
    && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/bindery" /staging/bindery

# ---- runtime: Debian 12 slim ---------------------------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime

# The shared libraries `bindery` links beyond glibc (readelf -d: NEEDED), as Debian packages; apt brings their own
# dependencies (libmicrohttpd12 -> libgnutls30, ...). libstdc++6 and libgcc-s1 are already in
# bookworm-slim (apt depends on them) and are listed so that the list is the binary's needs, not an accident.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends \
        libmicrohttpd12 \
        libjansson4 \
        libstdc++6 \
        libgcc-s1 \
    && rm -rf /var/lib/apt/lists/*

# A system user without a login shell or home; the data directory is its only writable place.
RUN useradd --system --no-log-init --user-group --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin bindery \
    && mkdir -p /data \
    && chown bindery:bindery /data

# Crash backtraces: a statically linked Swift program needs the static backtracer at a path it is told about.
COPY --from=build /usr/libexec/swift/linux/swift-backtrace-static /usr/libexec/swift/linux/swift-backtrace-static
ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,cache=no,swift-backtrace=/usr/libexec/swift/linux/swift-backtrace-static

COPY --from=build /staging/bindery /usr/local/bin/bindery
WORKDIR /srv/bindery
COPY Public ./Public
COPY Fixtures ./Fixtures

VOLUME ["/data"]
USER bindery:bindery
EXPOSE 8080
STOPSIGNAL SIGTERM

# No curl in the image: bash's /dev/tcp speaks HTTP/1.0 to /healthz and wants a 200 status line.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && read -r -t 4 status <&3 && [[ $status == HTTP/1.?' 200 '* ]]"]

CMD ["bindery", "serve", "--host", "0.0.0.0", "--port", "8080", "--data", "/data", "--fixture", "/srv/bindery/Fixtures/employees", "--public", "/srv/bindery/Public"]
