# recordhub for production: without the embedded Temporal server (build tag
# noembedtemporal), pointed at a real cluster with TEMPORAL_ADDRESS.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -tags noembedtemporal -trimpath -ldflags="-s -w" -o /out/recordhub ./cmd/recordhub

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/recordhub /usr/local/bin/recordhub
USER nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/recordhub"]
CMD ["serve"]
