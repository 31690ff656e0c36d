# Builds the queen broker. Used by docker-compose.yml.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --bin queen

FROM debian:bookworm-slim
COPY --from=build /src/target/release/queen /usr/local/bin/queen
ENV QUEEN_HTTP_ADDR=0.0.0.0:6632 QUEEN_KAFKA_ADDR=0.0.0.0:9092
EXPOSE 6632 9092
ENTRYPOINT ["/usr/local/bin/queen"]
