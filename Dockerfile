# agent-tck in a container: a build stage with the Rust toolchain, and a slim runtime stage with
# only the binary (and CA certificates, for agents behind HTTPS).
#   docker build -t agent-tck .
#   docker run --rm agent-tck probe roundtable --url http://agent:3001
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin agent-tck

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/agent-tck /usr/local/bin/agent-tck
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["agent-tck"]
CMD ["--help"]
