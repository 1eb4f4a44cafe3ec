# throttlelab's container image, for users with Docker:
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t throttlelab .
# `make image` builds the same image without any container engine.
# The binary is static (CGO_ENABLED=0); the image has no shell and runs as
# the numeric non-root user 65532, as the Kubernetes manifests ask.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/throttlelab/throttlelab/internal/cli.Version=${VERSION}" \
      -o /rootfs/usr/local/bin/throttlelab ./cmd/throttlelab \
 && mkdir -p /rootfs/etc /rootfs/tmp /rootfs/home/nonroot \
 && chmod 1777 /rootfs/tmp && chmod 700 /rootfs/home/nonroot && chown 65532:65532 /rootfs/home/nonroot \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group

FROM scratch
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/bin
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/throttlelab"]
# A container that is just run serves, reachable from outside it.
CMD ["serve", "--listen", ":8080"]
