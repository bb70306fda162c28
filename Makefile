# recordhub: `make run` starts the whole service, `make test` runs the tests.
GO ?= go
# Pure Go everywhere (modernc SQLite, pgx): no C toolchain needed.
export CGO_ENABLED ?= 0

.PHONY: run test lint build bench clean

run: ## run the service with its embedded defaults (SQLite in ./data)
	$(GO) run ./cmd/recordhub serve

test: ## run every test; PostgreSQL and Redis tests skip when those are absent
	$(GO) test -count=1 -timeout 20m ./...

lint: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

build: ## build bin/recordhub
	$(GO) build -o bin/recordhub ./cmd/recordhub

bench: ## load-test the service against a bare Gin handler and print the ratios (needs hey: apt-get install -y hey; flags: make bench BENCHFLAGS='-z 3s -db sqlite')
	$(GO) run ./cmd/recordhub-bench $(BENCHFLAGS)

clean:
	rm -rf bin
