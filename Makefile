# recordhub: `make run` starts the whole service, `make test` runs the tests,
# `make test-short` the fast subset (no Temporal, PostgreSQL, Redis, Node or browser).
GO ?= go
# Pure Go everywhere (modernc SQLite, pgx): no C toolchain needed.
export CGO_ENABLED ?= 0

.PHONY: run test test-short lint build bench bench-production bench-noisy chaos clean

# run builds, then runs the binary itself: `go run` exits 1 on Ctrl-C
# whatever the program's status, and make reported that as an error; the
# binary exits 0 after a graceful shutdown. go build relinks only on change.
run: build ## run the service with its embedded defaults (SQLite in ./data)
	./bin/recordhub serve

test: ## run every test; PostgreSQL and Redis tests skip when those are absent
	@# The production-shape tests build a Temporal server from the module
	@# cache; compile it first, outside the tests' timeout (seconds when cached).
	$(GO) build go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql
	@# -timeout is a hang guard per package, not a speed target: the
	@# workflows package takes 5.5 to 8 minutes on an idle 2-core machine
	@# (the 10,000-record resyncs), about 10 with both cores busy.
	$(GO) test -count=1 -timeout 30m -skip '^TestThrottleTwoWorkers$$' ./...
	@# The throttle's end-to-end test counts its receiver's requests in any
	@# one second by that receiver's clock, which other packages' tests on
	@# the same cores would delay: it runs alone, after them.
	$(GO) test -count=1 -timeout 10m -run '^TestThrottleTwoWorkers$$' ./cmd/recordhub

test-short: ## the fast loop: skips every test that needs Temporal, PostgreSQL, Redis, Node or a browser
	$(GO) test -short -count=1 ./...

lint: ## gofmt, go vet, staticcheck, and workflowcheck on the workflow code
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 -test=false ./workflows/...

build: ## build bin/recordhub
	$(GO) build -o bin/recordhub ./cmd/recordhub

bench: ## load-test the service against a bare Gin handler and print the ratios (needs hey: apt-get install -y hey; flags: make bench BENCHFLAGS='-z 3s -db sqlite')
	$(GO) run ./cmd/recordhub-bench $(BENCHFLAGS)

bench-production: ## production shape (-tags noembedtemporal, API + 1 then 2 workers, a separate Temporal server on PostgreSQL, Redis): deliveries/s against bare workflows, worker shares, tenant fairness (needs PostgreSQL and Redis; flags: make bench-production BENCHFLAGS='-workers 1,2,3 -burst 1000')
	$(GO) run ./cmd/recordhub-bench -production $(BENCHFLAGS)

bench-noisy: ## noisy neighbour: tenant B's create → first webhook request while tenant A loads the same embedded service (fan-out, huge filters, a hanging receiver, a resync), a fresh service per scenario (BENCHFLAGS=-noisy-production: on the production shape, needs PostgreSQL and Redis); BEFORE=<git revision> runs each scenario on that revision's build too, in turn, and prints both (3 to 6 minutes a binary after the builds; see cmd/recordhub-bench/README.md; flags: make bench-noisy BEFORE=main BENCHFLAGS='-noisy-scenarios fanout,hanging')
	$(GO) run ./cmd/recordhub-bench -noisy $(if $(BEFORE),-noisy-before $(BEFORE)) $(BENCHFLAGS)

chaos: ## production shape under load while workers, an API replica, Temporal, Redis and PostgreSQL are killed, frozen or stopped; fails on a lost write, a duplicate record, a missing delivery, > 1 % doubled or a row left in flight (needs initdb/pg_ctl and redis-server; about 6 minutes; flags: make chaos CHAOSFLAGS='-cycles 2 -fail-share 0.02')
	$(GO) run ./cmd/recordhub-chaos $(CHAOSFLAGS)

clean:
	rm -rf bin
