# syntax=docker/dockerfile:1
# The production image holds api, worker, scheduler and the enrichq CLI in /usr/local/bin;
# docker-compose.yml picks the command. The `dev` target adds the dev tools (fakevendor,
# fakeplatform, demo, bench, chaos) for the compose demo; they never ship.
#   docker build -t enrichq:local .                 production (the last stage)
#   docker build --target dev -t enrichq:dev .      production plus the dev tools
#   docker run --rm enrichq:local api               (or worker, scheduler, enrichq)
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ARG TARGETOS
ARG TARGETARCH
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# the same build as `make build`
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/...

# the dev tools, as `make dev` builds them; a production build skips this stage
FROM build AS build-dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags='-s -w' -o /out-dev/ ./dev/...

FROM gcr.io/distroless/static-debian12:nonroot AS prod
ENV PATH=/usr/local/bin:/usr/bin:/bin
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
EXPOSE 8080
CMD ["api"]

FROM prod AS dev
COPY --from=build-dev /out-dev/ /usr/local/bin/
EXPOSE 9090
CMD ["fakevendor"]

# last, so that a plain `docker build` makes the production image
FROM prod
